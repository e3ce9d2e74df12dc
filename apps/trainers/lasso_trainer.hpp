#pragma once
/// \file Lasso by STRADS parallel coordinate descent (the paper's Lasso app): rows of X are split
/// over the workers, which keep their part of the residual r = y − Xβ; each round the
/// coordinator's scheduler picks `batch` coefficients, every worker pushes x_jᵀr over its rows for
/// each, the coordinator sums them, takes the exact coordinate step
///
///     β_j ← S(x_jᵀr/n + (‖x_j‖²/n)·β_j, λ) / (‖x_j‖²/n)
///
/// and every worker applies the changes to its residual before its next push. Objective and
/// scaling: ml/lasso.hpp. With pipelining (depth > 1) a push may miss the last depth − 1 rounds'
/// changes: the step for β_j itself stays exact (the coordinator uses the β_j the residual
/// reflects), the other coefficients' changes arrive late.
///
/// Every `evaluate_every` rounds the workers also push ‖r‖², rᵀy and Xᵀr over their rows, and
/// the coordinator records F(β), the duality gap and nnz(β) for the β those residuals reflect;
/// the run stops once gap ≤ tolerance × F. That full gradient also tells the scheduler, through
/// `changes`, the step each coefficient not in the round would take (a predicted change): a
/// priority scheduler then draws the coefficients that violate the optimality conditions (the
/// role of glmnet's KKT check over all columns), not the million that stay 0.
///
/// How a round steps its batch (`lasso_batch_steps`):
///  - parallel (the STRADS paper, Shotgun): every scheduled coefficient steps from the same partial
///    sums; correlated coefficients stepped together overshoot, and too many of them diverge.
///  - sequential: the workers also push the batch's Gram entries x_aᵀx_b over their rows (only the
///    pairs that share a row: O(nnz of the batch's columns + those pairs)), and the coordinator
///    steps the batch's coefficients one after another, updating the others' partial sums with
///    the Gram entries: exactly cyclic coordinate descent over the batch (`sweeps` passes of it),
///    safe for any batch and any correlation.
///
/// Each worker's rows are a contiguous range, so its part of column j is a sub-range of the
/// problem's column j: the workers read the problem's columns in place (no copy of the design).
#include <strata/core/clock.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <strata/core/error.hpp>
#include <strata/core/trace.hpp>
#include <strata/runtime/system.hpp>
#include <strata/runtime/worker.hpp>
#include <strata/sched/engine.hpp>
#include <strata/sched/scheduler.hpp>
#include <strata/sched/schedulers.hpp>
#include <strata/ml/lasso.hpp>

namespace strata::ml {

/// Settings of a Lasso run.
struct lasso_trainer_options {
  double lambda = 0;              ///< λ; 0: lambda_fraction × λ_max
  double lambda_fraction = 0.1;   ///< used when lambda is 0
  std::uint64_t rounds = 1000000; ///< at most this many rounds
  std::uint32_t batch = 1;        ///< coefficients per round
  std::uint32_t depth = 1;        ///< pipelining: rounds in flight
  std::uint64_t evaluate_every = 0;  ///< rounds between evaluations; 0: ceil(d / batch) (about one pass)
  double tolerance = 1e-6;        ///< stop when the duality gap ≤ tolerance × F (0: run every round)
  /// How a round steps its batch (the file comment): parallel = the STRADS paper.
  enum class batch_steps { parallel, sequential } steps = batch_steps::parallel;
  std::uint32_t sweeps = 1;       ///< sequential: passes over the batch per round (more: the batch's subproblem solved further)
};

/// One evaluation of a run.
struct lasso_point {
  std::uint64_t round = 0;  ///< rounds whose changes the evaluated β holds
  double elapsed_s = 0;     ///< seconds from the coordinator's start (as sched::result::seconds) when it was pulled
  lasso_eval eval;
  std::uint64_t nnz = 0;
};

/// The outcome (on the coordinator's process; elsewhere only `lambda` is set).
struct lasso_run {
  double lambda = 0;
  std::vector<double> beta;        ///< the final coefficients
  lasso_eval final_eval;           ///< F and gap of `beta`, computed directly from the data
  std::uint64_t nnz = 0;
  std::vector<lasso_point> points; ///< every evaluation, in order
  sched::result rounds;            ///< the engine's figures (rounds, seconds, pipelining staleness)
  std::uint64_t updates = 0;       ///< coordinate steps taken (scheduled variables, all rounds)
  bool converged = false;          ///< the gap reached tolerance × F before the round cap

  /// The run's trace records (iteration = round; metric "gap"), for core/trace.hpp's writer.
  std::vector<iteration_record> trace() const {
    std::vector<iteration_record> out;
    for (const auto& p : points) {
      iteration_record r;
      r.iteration = static_cast<std::uint32_t>(p.round);
      r.elapsed_s = p.elapsed_s;
      r.objective = p.eval.objective;
      r.metric = p.eval.gap;
      r.metric_name = "gap";
      out.push_back(std::move(r));
    }
    return out;
  }
};

/// The STRADS program of Lasso (sched/engine.hpp's `program`).
class lasso_program {
 public:
  struct partial_type {
    std::uint64_t applied = 0;   ///< rounds whose changes this worker's residual holds
    std::vector<double> g;       ///< x_jᵀr over the worker's rows, per scheduled j
    double rss = 0, ry = 0;      ///< with evaluate: ‖r‖², rᵀy over its rows
    std::vector<double> grad;    ///< with evaluate: Xᵀr over its rows, every column
    /// sequential steps: the batch's Gram entries v_aᵀv_b over the worker's rows, for the pairs of
    /// batch positions a > b that share a row (stored values only; the centring is the coordinator's)
    std::vector<std::uint32_t> pair_a, pair_b;
    std::vector<double> pair_v;
    template <class Ar>
    void serialize(Ar& ar) {
      ar(applied, g, rss, ry, grad, pair_a, pair_b, pair_v);
    }
  };
  struct update_type {
    std::vector<sched::var_id> vars;
    std::vector<double> delta;   ///< β_j change (0 kept: a scheduler learns from it)
    template <class Ar>
    void serialize(Ar& ar) {
      ar(vars, delta);
    }
  };

  lasso_program(const lasso_problem& p, double lambda, std::uint32_t workers, double tolerance,
                lasso_trainer_options::batch_steps steps = lasso_trainer_options::batch_steps::parallel, std::uint32_t sweeps = 1)
      : p_(p), lambda_(lambda), tol_(tolerance), sequential_(steps == lasso_trainer_options::batch_steps::sequential),
        sweeps_(std::max<std::uint32_t>(1, sweeps)), parts_(workers), beta_(p.d, 0.0), l1_after_{0.0}, nnz_after_{0} {
    check_lambda(lambda);
    for (double v : p.y) f_zero_ += v * v;
    f_zero_ /= 2.0 * p.n;
    // Contiguous row ranges balanced by stored values (at least one row's worth each).
    std::vector<std::uint64_t> row_nnz(p.n, 0);
    for (auto r : p.rows) ++row_nnz[r];
    std::vector<std::uint32_t> first(workers + 1, p.n);
    first[0] = 0;
    const double per = static_cast<double>(p.nnz() + p.n) / workers;
    double acc = 0;
    std::uint32_t w = 1;
    for (std::uint32_t i = 0; i < p.n && w < workers; ++i) {
      acc += static_cast<double>(row_nnz[i] + 1);
      if (acc >= per * w) first[w++] = i + 1;
    }
    for (std::uint32_t k = 0; k < workers; ++k) {
      auto& s = parts_[k];
      s.lo = first[k];
      s.hi = std::max(first[k], first[k + 1]);
      // Rows increase within a column: the shard's part of column j is [begin[j], end[j]).
      s.begin.resize(p.d);
      s.end.resize(p.d);
      for (std::uint32_t j = 0; j < p.d; ++j) {
        const std::uint32_t* c0 = p.rows.data() + p.col_offsets[j];
        const std::uint32_t* c1 = p.rows.data() + p.col_offsets[j + 1];
        s.begin[j] = static_cast<std::uint64_t>(std::lower_bound(c0, c1, s.lo) - p.rows.data());
        s.end[j] = static_cast<std::uint64_t>(std::lower_bound(c0, c1, s.hi) - p.rows.data());
      }
      s.r.assign(p.y.begin() + s.lo, p.y.begin() + s.hi);
      s.y = s.r;
      for (double v : s.r) s.sum_r += v;
    }
  }

  std::uint32_t vars() const noexcept { return p_.d; }
  /// |cosine| of columns a and b. A dependency filter asks for each candidate a against every
  /// accepted b: recent b's are kept as dense columns (at most 64 MiB of them), so a pair costs
  /// nnz(a) multiply-adds, not a merge of two columns.
  double dependency(sched::var_id a, sched::var_id b) const {
    if (a == b) return 1.0;
    if (!(p_.sq_norm[a] > 0 && p_.sq_norm[b] > 0)) return 0.0;
    const double* col = dense_column(b);
    double s = 0;
    for (auto q = p_.col_offsets[a]; q < p_.col_offsets[a + 1]; ++q) s += p_.values[q] * col[p_.rows[q]];
    s -= p_.n * p_.center_of(a) * p_.center_of(b);  // centred columns (lasso_problem::col_cosine)
    return std::min(1.0, std::abs(s) / (p_.n * std::sqrt(p_.sq_norm[a] * p_.sq_norm[b])));
  }
  bool done() const noexcept { return done_; }

  partial_type push(worker& w, const sched::plan& pl) {
    auto& s = parts_.at(w.id());
    partial_type out;
    out.applied = s.applied;
    out.g.reserve(pl.vars.size());
    if (sequential_)
      gram_push(s, pl.vars, out);
    else
      for (auto j : pl.vars) out.g.push_back(dot(s, j));
    if (pl.evaluate) {
      for (std::size_t i = 0; i < s.r.size(); ++i) {
        const double r = s.r[i] + s.shift;  // the true residual
        out.rss += r * r, out.ry += r * s.y[i];
      }
      out.grad.resize(p_.d);
      for (std::uint32_t j = 0; j < p_.d; ++j) out.grad[j] = dot(s, j);
    }
    return out;
  }

  void sync(worker& w, const update_type& u) {
    auto& s = parts_.at(w.id());
    for (std::size_t k = 0; k < u.vars.size(); ++k) {
      const double d = u.delta[k];
      if (d == 0) continue;
      const auto j = u.vars[k];
      double col = 0;
      const std::uint32_t* rows = p_.rows.data();
      const double* values = p_.values.data();
      double* r = s.r.data() - s.lo;  // indexed by the problem's row
      for (auto q = s.begin[j]; q < s.end[j]; ++q) r[rows[q]] -= values[q] * d, col += values[q];
      s.sum_r -= col * d;
      s.shift += p_.center_of(j) * d;
    }
    ++s.applied;
  }

  update_type pull(const sched::plan& pl, std::vector<partial_type>& parts) {
    const std::uint64_t applied = parts.front().applied;
    for (const auto& q : parts)
      if (q.applied != applied || q.g.size() != pl.vars.size())
        throw error(errc::bad_frame, "lasso: workers' partials of round " + std::to_string(pl.round) + " disagree");
    update_type u;
    u.vars = pl.vars;
    const std::size_t B = pl.vars.size();
    // The β_j the residuals hold (pipelined: minus the changes of the rounds they missed).
    late_changes(applied);
    std::vector<double>& g = g_;
    g.assign(B, 0.0);
    for (const auto& q : parts)
      for (std::size_t k = 0; k < B; ++k) g[k] += q.g[k];
    std::vector<double>& next = next_;
    next.resize(B);
    if (sequential_) {
      sequential_steps(pl, parts, g, next);
    } else {
      for (std::size_t k = 0; k < B; ++k) {
        const auto j = pl.vars[k];
        const double seen = beta_[j] - late(j);
        next[k] = lasso_coordinate(g[k] / p_.n + p_.sq_norm[j] * seen, p_.sq_norm[j], lambda_);
      }
    }
    u.delta.reserve(B);
    for (std::size_t k = 0; k < B; ++k) {
      const auto j = pl.vars[k];
      const double b = next[k];
      if (!std::isfinite(b)) diverged(pl, "coefficient " + std::to_string(j) + " is not finite");
      const double delta = b - beta_[j];
      l1_ += std::abs(b) - std::abs(beta_[j]);
      nnz_ += (b != 0) - (beta_[j] != 0);
      beta_[j] = b;
      u.delta.push_back(delta);
    }
    if (pl.evaluate) {
      double rss = 0, ry = 0, mg = 0;
      std::vector<double>& grad = parts.front().grad;
      for (std::size_t q = 1; q < parts.size(); ++q)
        for (std::uint32_t j = 0; j < p_.d; ++j) grad[j] += parts[q].grad[j];
      for (const auto& q : parts) rss += q.rss, ry += q.ry;
      for (double v : grad) mg = std::max(mg, std::abs(v));
      // The step each coefficient outside the round would take from this gradient, for the
      // scheduler (`changes`); the round's own coefficients report their real change.
      predicted_.clear();
      in_round_.resize(p_.d, 0);
      for (auto j : pl.vars) in_round_[j] = 1;
      for (std::uint32_t j = 0; j < p_.d; ++j) {
        if (in_round_[j]) continue;
        const double b = lasso_coordinate(grad[j] / p_.n + p_.sq_norm[j] * beta_[j], p_.sq_norm[j], lambda_);
        predicted_.push_back({j, b - beta_[j]});
      }
      for (auto j : pl.vars) in_round_[j] = 0;
      lasso_point pt;
      pt.round = applied;
      pt.eval = lasso_eval::of(rss, ry, mg, l1_after_.at(applied - history_first_), lambda_, p_.n);
      pt.nnz = nnz_after_.at(applied - history_first_);
      pt.elapsed_s = std::chrono::duration<double>(strata::run_clock::now() - t0_).count();
      points_.push_back(pt);
      // Sequential coordinate steps never raise F above F(0) = ‖y‖²/(2n); parallel ones can when
      // the batch is too large for the columns' correlation (Shotgun's limit), and then they blow up.
      if (!std::isfinite(pt.eval.objective) || pt.eval.objective > 100 * f_zero_)
        diverged(pl, "F = " + fmt_g(pt.eval.objective) + " > 100 x F(0) = " + fmt_g(100 * f_zero_));
      done_ = tol_ > 0 && pt.eval.gap <= tol_ * pt.eval.objective;
    }
    l1_after_.push_back(std::max(0.0, l1_));
    nnz_after_.push_back(nnz_);
    history_.push_back(u);
    while (history_.size() > lasso_history) history_.pop_front(), l1_after_.pop_front(), nnz_after_.pop_front(), ++history_first_;
    return u;
  }

  /// The round's changes, and after an evaluated round the predicted change of every other
  /// coefficient (the step the round's full gradient gives it; 0 for most).
  void changes(const update_type& u, std::vector<sched::var_delta>& out) const {
    for (std::size_t k = 0; k < u.vars.size(); ++k) out.push_back({u.vars[k], u.delta[k]});
    out.insert(out.end(), predicted_.begin(), predicted_.end());
    predicted_.clear();
  }

  /// Marks the start of the run (for the points' elapsed_s): the engine calls it with its own start.
  void start(strata::run_clock::time_point t0 = strata::run_clock::now()) { t0_ = t0; }
  /// Rounds in flight, named when the run diverges.
  void set_depth(std::uint32_t depth) { depth_ = depth; }
  const std::vector<double>& beta() const noexcept { return beta_; }
  const std::vector<lasso_point>& points() const noexcept { return points_; }

 private:
  struct shard {
    std::uint32_t lo = 0, hi = 0;  // rows [lo, hi)
    std::vector<std::uint64_t> begin, end;  // the shard's part of column j: problem entries [begin[j], end[j])
    // r: y − Σ β_j v_j over the shard's rows; the true residual is r + shift (shift = Σ β_j·center_j,
    // 0 unless the columns are centred). sum_r = Σ r.
    std::vector<double> r, y;
    double sum_r = 0, shift = 0;
    std::uint64_t applied = 0;
    // gram_push's scratch: per local row the last batch entry in it (−1: none), the entries (batch
    // position, value, previous entry of the row), and per batch position a pair's running sum.
    std::vector<std::int32_t> head;
    std::vector<std::uint32_t> ent_pos, touched_rows, mark, nbrs;
    std::vector<std::int32_t> ent_next;
    std::vector<double> ent_val, acc;
  };
  /// The shard's part of x̃_jᵀ(true residual), up to terms that cancel in the workers' sum:
  /// v_jᵀr − center_j·Σr over its rows (the shift drops out of the sum because x̃_j ⟂ 1).
  double dot(const shard& s, sched::var_id j) const noexcept {
    double g = 0;
    const std::uint32_t* rows = p_.rows.data();
    const double* values = p_.values.data();
    const double* r = s.r.data() - s.lo;
    for (auto q = s.begin[j]; q < s.end[j]; ++q) g += values[q] * r[rows[q]];
    return g - p_.center_of(j) * s.sum_r;
  }
  /// Sequential steps' push: the partial sums, and the Gram entries of the batch's pairs that
  /// share a row of the shard. Column a's entries are threaded onto their rows' lists as they are
  /// read, so each pair (a, b < a) in a row is met once: O(nnz of the batch here + such pairs).
  void gram_push(shard& s, const std::vector<sched::var_id>& vars, partial_type& out) const {
    const std::uint32_t B = static_cast<std::uint32_t>(vars.size());
    const std::uint32_t* rows = p_.rows.data();
    const double* values = p_.values.data();
    const double* r = s.r.data() - s.lo;
    if (s.head.size() != s.hi - s.lo) s.head.assign(s.hi - s.lo, -1);
    s.ent_pos.clear(), s.ent_val.clear(), s.ent_next.clear(), s.touched_rows.clear();
    s.mark.assign(B, 0);
    s.acc.assign(B, 0.0);
    for (std::uint32_t a = 0; a < B; ++a) {
      const auto j = vars[a];
      double g = 0;
      s.nbrs.clear();
      for (auto q = s.begin[j]; q < s.end[j]; ++q) {
        const std::uint32_t i = rows[q] - s.lo;
        const double v = values[q];
        g += v * r[rows[q]];
        for (std::int32_t e = s.head[i]; e >= 0; e = s.ent_next[e]) {
          const std::uint32_t b = s.ent_pos[e];
          if (s.mark[b] != a + 1) s.mark[b] = a + 1, s.nbrs.push_back(b);
          s.acc[b] += v * s.ent_val[e];
        }
        if (s.head[i] < 0) s.touched_rows.push_back(i);
        s.ent_next.push_back(s.head[i]);
        s.head[i] = static_cast<std::int32_t>(s.ent_pos.size());
        s.ent_pos.push_back(a);
        s.ent_val.push_back(v);
      }
      out.g.push_back(g - p_.center_of(j) * s.sum_r);
      for (auto b : s.nbrs) {
        out.pair_a.push_back(a), out.pair_b.push_back(b), out.pair_v.push_back(s.acc[b]);
        s.acc[b] = 0;
      }
    }
    for (auto i : s.touched_rows) s.head[i] = -1;
  }
  /// Sequential steps' pull: cyclic coordinate descent over the batch from the summed partial
  /// sums g, the Gram entries the workers found (S_ab = v_aᵀv_b over all rows; with centred
  /// columns x̃_aᵀx̃_b = S_ab − n·c_a·c_b, a rank-one term kept as one running sum), `sweeps_`
  /// passes (fewer when a pass changes nothing). next[k]: the new β of pl.vars[k].
  void sequential_steps(const sched::plan& pl, const std::vector<partial_type>& parts, const std::vector<double>& g,
                        std::vector<double>& next) {
    const std::size_t B = pl.vars.size();
    const double n = p_.n;
    // The batch's Gram graph, both directions (a pair found by two workers is two entries: they add).
    adj_off_.assign(B + 1, 0);
    for (const auto& q : parts) {
      if (q.pair_a.size() != q.pair_b.size() || q.pair_a.size() != q.pair_v.size())
        throw error(errc::bad_frame, "lasso: a worker's Gram entries of round " + std::to_string(pl.round) + " disagree");
      for (std::size_t e = 0; e < q.pair_a.size(); ++e) {
        if (q.pair_a[e] >= B || q.pair_b[e] >= B)
          throw error(errc::bad_frame, "lasso: a Gram entry of round " + std::to_string(pl.round) + " is outside the batch");
        ++adj_off_[q.pair_a[e] + 1], ++adj_off_[q.pair_b[e] + 1];
      }
    }
    for (std::size_t k = 0; k < B; ++k) adj_off_[k + 1] += adj_off_[k];
    adj_to_.resize(adj_off_[B]);
    adj_v_.resize(adj_off_[B]);
    fill_.assign(adj_off_.begin(), adj_off_.end() - 1);
    for (const auto& q : parts)
      for (std::size_t e = 0; e < q.pair_a.size(); ++e) {
        const auto a = q.pair_a[e], b = q.pair_b[e];
        adj_to_[fill_[a]] = b, adj_v_[fill_[a]++] = q.pair_v[e];
        adj_to_[fill_[b]] = a, adj_v_[fill_[b]++] = q.pair_v[e];
      }
    // D[k]: β_k − (the β_k the residuals hold); sacc[k] = Σ_{l≠k} S_kl·D[l]; T = Σ_l c_l·D[l].
    std::vector<double>& D = d_;
    std::vector<double>& sacc = sacc_;
    D.assign(B, 0.0);
    sacc.assign(B, 0.0);
    double T = 0;
    const bool centred = !p_.center.empty();
    auto moved = [&](std::size_t k, double step) {
      D[k] += step;
      if (centred) T += p_.center[pl.vars[k]] * step;
      for (auto e = adj_off_[k]; e < adj_off_[k + 1]; ++e) sacc[adj_to_[e]] += adj_v_[e] * step;
    };
    for (std::size_t k = 0; k < B; ++k) {
      next[k] = beta_[pl.vars[k]];
      if (const double lc = late(pl.vars[k]); lc != 0) moved(k, lc);  // pipelined: changes the residuals miss
    }
    for (std::uint32_t sweep = 0; sweep < sweeps_; ++sweep) {
      bool any = false;
      for (std::size_t k = 0; k < B; ++k) {
        const auto j = pl.vars[k];
        if (!(p_.sq_norm[j] > 0)) continue;
        const double c = centred ? p_.center[j] : 0.0;
        const double cross = sacc[k] - n * c * (T - c * D[k]);  // Σ_{l≠k} x̃_kᵀx̃_l·D[l]
        const double seen = next[k] - D[k];
        const double b = lasso_coordinate((g[k] - cross) / n + p_.sq_norm[j] * seen, p_.sq_norm[j], lambda_);
        const double step = b - next[k];
        if (step == 0) continue;
        any = true;
        next[k] = b;
        moved(k, step);
      }
      if (!any) break;
    }
  }
  static std::string fmt_g(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.4g", v);
    return b;
  }
  // Column j scattered into a dense vector of n, from a ring of slots (oldest reused first).
  const double* dense_column(sched::var_id j) const {
    if (auto it = dense_slot_.find(j); it != dense_slot_.end()) return dense_[it->second].data();
    const std::size_t cap = std::max<std::size_t>(1, (std::size_t{64} << 20) / (sizeof(double) * std::max<std::uint32_t>(1, p_.n)));
    std::size_t slot = dense_.size();
    if (slot < cap) {
      dense_.emplace_back(p_.n, 0.0);
      dense_var_.push_back(j);
    } else {
      slot = dense_next_;
      dense_next_ = (dense_next_ + 1) % cap;
      const auto old = dense_var_[slot];
      for (auto q = p_.col_offsets[old]; q < p_.col_offsets[old + 1]; ++q) dense_[slot][p_.rows[q]] = 0.0;
      dense_slot_.erase(old);
      dense_var_[slot] = j;
    }
    for (auto q = p_.col_offsets[j]; q < p_.col_offsets[j + 1]; ++q) dense_[slot][p_.rows[q]] = p_.values[q];
    dense_slot_.emplace(j, slot);
    return dense_[slot].data();
  }
  [[noreturn]] void diverged(const sched::plan& pl, const std::string& what) const {
    const std::string head = "lasso diverged at round " + std::to_string(pl.round) + " (" + what + ", " +
                             std::to_string(pl.vars.size()) + " coefficients per round";
    if (depth_ > 1)  // a pushed partial misses up to depth − 1 rounds' steps: stale, as correlated steps are
      throw error(errc::diverged, head + ", depth " + std::to_string(depth_) + "): pipelining " + std::to_string(depth_) +
                                      " rounds lets a step use partial sums up to " + std::to_string(depth_ - 1) +
                                      " rounds stale, and stale steps on correlated coefficients blow up; use a smaller depth "
                                      "(1: none) or a dependency filter, which keeps coefficients correlated with those in "
                                      "flight out of a round");
    throw error(errc::diverged, head + "): too many correlated coefficients are stepped together; use a smaller batch or a "
                                       "dependency filter");
  }
  // The changes of rounds [applied, pulled so far): what a pipelined push has not seen, by
  // coefficient (one pass over those rounds, then a lookup per coefficient).
  void late_changes(std::uint64_t applied) {
    late_.clear();
    const std::uint64_t pulled = history_first_ + history_.size();
    if (applied >= pulled) return;
    if (applied < history_first_)
      throw error(errc::refused, "lasso: pipelining deeper than " + std::to_string(lasso_history) + " rounds");
    for (std::uint64_t k = applied; k < pulled; ++k) {
      const auto& u = history_[k - history_first_];
      for (std::size_t i = 0; i < u.vars.size(); ++i) late_[u.vars[i]] += u.delta[i];
    }
  }
  double late(sched::var_id j) const {
    if (late_.empty()) return 0.0;
    const auto it = late_.find(j);
    return it == late_.end() ? 0.0 : it->second;
  }

  const lasso_problem& p_;
  double lambda_, tol_;
  bool sequential_ = false;
  std::uint32_t sweeps_ = 1;
  std::vector<shard> parts_;
  std::vector<double> beta_;
  double l1_ = 0, f_zero_ = 0;  // f_zero_: F(0) = ‖y‖²/(2n)
  std::int64_t nnz_ = 0;
  static constexpr std::size_t lasso_history = 64;
  std::deque<double> l1_after_;           // ‖β‖₁ after k rounds, k >= history_first_ (bounded like history_)
  std::deque<std::int64_t> nnz_after_;    // nnz(β) after k rounds, k >= history_first_
  std::deque<update_type> history_;       // the last rounds' changes
  std::uint64_t history_first_ = 0;       // round of history_.front()
  std::vector<lasso_point> points_;
  std::unordered_map<sched::var_id, double> late_;  // late_changes(): by coefficient
  mutable std::vector<sched::var_delta> predicted_;  // an evaluated round's predicted changes, until `changes` hands them on
  std::vector<std::uint8_t> in_round_;
  // pull's scratch
  std::vector<double> g_, next_, d_, sacc_, adj_v_;
  std::vector<std::uint64_t> adj_off_, fill_;
  std::vector<std::uint32_t> adj_to_;
  // dependency()'s dense columns (the coordinator's only)
  mutable std::vector<std::vector<double>> dense_;
  mutable std::vector<sched::var_id> dense_var_;
  mutable std::unordered_map<sched::var_id, std::size_t> dense_slot_;
  mutable std::size_t dense_next_ = 0;
  bool done_ = false;
  std::uint32_t depth_ = 1;
  strata::run_clock::time_point t0_ = strata::run_clock::now();
};

/// The most rounds in flight: a pipelined push is corrected by the changes of the rounds it missed,
/// and the program keeps the last 64 rounds' changes.
inline constexpr std::uint32_t lasso_max_depth = 64;

/// The most columns a run can evaluate: an evaluation pushes Xᵀr over every column in one message
/// (8 bytes a column, plus a few KiB of framing) that must fit `max_message`
/// (system_config::max_message; 16 MiB: 2,096,640 columns).
inline std::uint32_t lasso_max_columns(std::size_t max_message) noexcept {
  const std::uint64_t c = (max_message > 4096 ? max_message - 4096 : 0) / sizeof(double);
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(c, std::numeric_limits<std::uint32_t>::max() - 1));
}

/// Why a libsvm file read for Lasso is capped at lasso_max_columns (io::libsvm_cap::why).
inline std::string lasso_columns_why(std::size_t max_message) {
  return "Lasso evaluates the gradient of every column in one message of 8 bytes a column, at most " +
         std::to_string(max_message) + " bytes";
}

/// Refuses settings that cannot run (before anything starts), naming the setting.
inline void check_lasso_options(const lasso_trainer_options& o) {
  const auto bad = [](const std::string& what) { throw error(errc::bad_input, "lasso: " + what); };
  if (!(o.lambda >= 0) || !std::isfinite(o.lambda)) bad("lambda must be > 0 (got " + std::to_string(o.lambda) + ")");
  if (o.lambda == 0 && !(o.lambda_fraction > 0 && std::isfinite(o.lambda_fraction)))
    bad("lambda_fraction must be a finite number > 0 (got " + std::to_string(o.lambda_fraction) + ")");
  if (!(o.tolerance >= 0) || !std::isfinite(o.tolerance))
    bad("tolerance must be a finite number >= 0 (got " + std::to_string(o.tolerance) + ")");
  if (o.rounds == 0) bad("rounds must be >= 1 (0 rounds would evaluate nothing)");
  if (o.batch == 0) bad("batch must be >= 1");
  if (o.sweeps == 0) bad("sweeps must be >= 1");
  if (o.depth == 0 || o.depth > lasso_max_depth)
    bad("depth must be between 1 and " + std::to_string(lasso_max_depth) + " (got " + std::to_string(o.depth) +
        "): a pipelined push is corrected with the last " + std::to_string(lasso_max_depth) + " rounds' changes");
}

/// Solves the Lasso problem `p` on `sys` with scheduler `sched` (one `sys.run`).
template <class S>
lasso_run train_lasso(system_base& sys, const lasso_problem& p, S& sched, const lasso_trainer_options& o) {
  lasso_run out;
  check_lasso_options(o);
  out.lambda = o.lambda > 0 ? o.lambda : o.lambda_fraction * p.lambda_max();
  if (!(out.lambda > 0))
    throw error(errc::bad_input, o.lambda > 0 ? "lasso: lambda must be > 0"
                                              : "lasso: lambda_max is 0 (y is orthogonal to every column, or lambda_fraction <= 0): "
                                                "beta = 0 is the solution for every lambda");
  // An evaluation pushes Xᵀr over every column in one message: 8 bytes a column, under the message limit.
  const std::uint64_t eval_bytes = std::uint64_t{sizeof(double)} * p.d + 4096, limit = sys.config().max_message;
  if (p.d > lasso_max_columns(limit))
    throw error(errc::refused, "lasso: " + std::to_string(p.d) + " columns need evaluation messages of about " +
                                     std::to_string(eval_bytes) + " bytes, over the message limit of " + std::to_string(limit) +
                                     " bytes (system_config::max_message): at most " + std::to_string(lasso_max_columns(limit)) + " columns");
  const std::uint32_t P = sys.config().nodes * sys.config().workers_per_node;
  lasso_program prog(p, out.lambda, P, o.tolerance, o.steps, o.sweeps);
  sched::options so;
  so.rounds = o.rounds;
  so.batch = o.batch;
  so.depth = o.depth;
  so.evaluate_every = o.evaluate_every ? o.evaluate_every : (p.d + o.batch - 1) / o.batch;
  prog.set_depth(o.depth);
  out.rounds = sched::run(sys, prog, sched, so);
  if (out.rounds.per_round.empty()) return out;  // not the coordinator's process
  out.beta = prog.beta();
  out.final_eval = lasso_evaluate(p, out.beta, out.lambda);
  for (double b : out.beta) out.nnz += b != 0;
  out.points = prog.points();
  out.updates = out.rounds.vars;
  out.converged = prog.done();
  return out;
}

// The runs of the built-in schedulers (the ones strata_lasso and strata_plan choose by name) are
// compiled once, in strata_apps (apps/src/lasso_trainer.cpp); another scheduler instantiates
// train_lasso where it is called.
extern template lasso_run train_lasso<sched::round_robin>(system_base&, const lasso_problem&, sched::round_robin&, const lasso_trainer_options&);
extern template lasso_run train_lasso<sched::uniform_random>(system_base&, const lasso_problem&, sched::uniform_random&, const lasso_trainer_options&);
extern template lasso_run train_lasso<sched::priority>(system_base&, const lasso_problem&, sched::priority&, const lasso_trainer_options&);
extern template lasso_run train_lasso<sched::dependency_filter<sched::priority>>(system_base&, const lasso_problem&, sched::dependency_filter<sched::priority>&, const lasso_trainer_options&);
extern template lasso_run train_lasso<sched::dependency_filter<sched::uniform_random>>(system_base&, const lasso_problem&, sched::dependency_filter<sched::uniform_random>&, const lasso_trainer_options&);

}  // namespace strata::ml
