#pragma once
/// \file The CCD++ MF trainer's STRADS program (apps/trainers/mf_ccd.hpp says what it does); only
/// apps/src/mf_ccd.cpp includes it.
#include <strata/core/clock.hpp>
#include <trainers/mf_ccd.hpp>

#include <strata/core/error.hpp>
#include <strata/ml/io/ratings.hpp>
#include <strata/ml/partition.hpp>
#include <trainers/detail/mf_training.hpp>
#include <trainers/mf_trainer.hpp>
#include <trainers/run_stats.hpp>
#include <strata/runtime/system.hpp>
#include <strata/runtime/worker.hpp>
#include <strata/sched/engine.hpp>
#include <strata/sched/schedulers.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace strata::ml {

/// The STRADS program of CCD++ MF (sched/engine.hpp's `program`); see the file comment.
class mf_ccd_program {
 public:
  struct partial_type {
    std::vector<double> num, den;  ///< per item (empty for the user-bias column and the evaluation-only round)
    bool evaluated = false;
    double test_se = 0, test_n = 0, loss = 0;  ///< with evaluation: over its users
    double test_se_recomputed = 0;             ///< at the final evaluation: test_se from the factors
    double eval_s = 0;
    template <class Ar>
    void serialize(Ar& ar) {
      ar(num, den, evaluated, test_se, test_n, loss, test_se_recomputed, eval_s);
    }
  };
  struct update_type {
    std::uint32_t column = 0;
    std::vector<double> h;  ///< the new column h_·c (empty: H unchanged)
    template <class Ar>
    void serialize(Ar& ar) {
      ar(column, h);
    }
  };

  mf_ccd_program(const io::rating_set& train, const io::rating_set& test, const mf_ccd_options& o, std::uint32_t workers)
      : o_(o), P_(workers), C_(o.rank + 2), nu_(std::max(train.num_users, test.num_users)),
        ni_(std::max(train.num_items, test.num_items)), mu_(train.mean()) {
    if (workers == 0) throw strata::error(errc::bad_input, "train_mf_ccd: no workers");
    if (o.rank == 0 || o.inner == 0) throw strata::error(errc::bad_input, "train_mf_ccd: need rank > 0 and inner > 0");
    if (!(o.lambda > 0)) throw strata::error(errc::bad_input, "train_mf_ccd: need lambda > 0");
    if (train.empty()) throw strata::error(errc::bad_input, "train_mf_ccd: no training ratings");
    rounds_ = std::uint64_t{o.iterations} * C_ * o.inner + 1;
    std::vector<std::uint64_t> per_user(nu_, 0);
    item_lambda_.assign(ni_, o.lambda);
    if (o.weighted_lambda) std::fill(item_lambda_.begin(), item_lambda_.end(), 0.0);
    for (const auto& r : train.ratings) {
      ++per_user[r.user];
      if (o.weighted_lambda) item_lambda_[r.item] += o.lambda;
    }
    for (auto& x : item_lambda_) x = std::max(x, o.lambda);  // an item without training ratings: h = 0, not 0 / 0
    const auto owner = balanced_partition(per_user, P_);
    std::vector<std::uint32_t> local(nu_, 0);
    st_.resize(P_);
    for (std::uint32_t u = 0; u < nu_; ++u) {
      auto& s = st_[owner[u]];
      local[u] = static_cast<std::uint32_t>(s.users.size());
      s.users.push_back(u);
    }
    // Initial H (every worker's copy and the coordinator's): hashed factors, b_i = 0, column 0 = 1;
    // W: b_u = 0, column 1 = 1, factors 0 (CCD++'s start: the residuals are then r − μ, with no
    // O(ratings × R) product to form, and the first step of each column is a regression on H's).
    H_.assign(std::size_t{ni_} * C_, 0.0);
    for (std::uint32_t i = 0; i < ni_; ++i) {
      H_[i] = 1.0;
      for (std::uint32_t f = 0; f < o.rank; ++f) H_[std::size_t{2 + f} * ni_ + i] = detail::mf_init(o.seed, 1, i, f, o.rank, o.init_scale);
    }
    for (std::uint32_t p = 0; p < P_; ++p) {
      auto& s = st_[p];
      const std::size_t n = s.users.size();
      s.W.assign(n * C_, 0.0);
      std::fill_n(s.W.begin() + static_cast<std::ptrdiff_t>(n), n, 1.0);
      s.offsets.assign(n + 1, 0);
      s.H = H_;
    }
    for (const auto& r : train.ratings) ++st_[owner[r.user]].offsets[local[r.user] + 1];
    for (auto& s : st_) {
      for (std::size_t l = 0; l < s.users.size(); ++l) s.offsets[l + 1] += s.offsets[l];
      s.items.resize(s.offsets.back());
      s.e.resize(s.offsets.back());
    }
    std::vector<std::vector<std::uint64_t>> fill(P_);
    for (std::uint32_t p = 0; p < P_; ++p) fill[p].assign(st_[p].offsets.begin(), st_[p].offsets.end() - 1);
    for (const auto& r : train.ratings) {
      auto& s = st_[owner[r.user]];
      const auto q = fill[owner[r.user]][local[r.user]]++;
      s.items[q] = r.item;
      s.e[q] = r.value - mu_;
    }
    for (const auto& r : test.ratings) {
      auto& s = st_[owner[r.user]];
      s.test.push_back({local[r.user], r.item, r.value});
      s.et.push_back(r.value - mu_);
    }
  }

  std::uint32_t vars() const noexcept { return C_ * o_.inner; }
  /// Rounds of the run: iterations × C × inner, plus the final evaluation.
  std::uint64_t rounds() const noexcept { return rounds_; }
  void start() { t0_ = last_pull_ = strata::run_clock::now(); }
  /// Called on the coordinator's thread with every iteration's record.
  std::function<void(const iteration_stats&)> on_iteration;

  partial_type push(worker& w, const sched::plan& pl) {
    auto& s = st_.at(w.id());
    partial_type out;
    const std::uint64_t per_it = std::uint64_t{C_} * o_.inner;
    if (pl.round % per_it == 0) evaluate(s, out, pl.round + 1 == rounds_);
    if (pl.round + 1 == rounds_) return out;  // the final evaluation only
    if (pl.vars.size() != 1) throw strata::error(errc::bad_input, "mf ccd: one column per round");
    const std::uint32_t c = pl.vars.front() / o_.inner;
    double* wc = w_col(s, c);
    const double* hc = h_col(s, c);
    test_residuals(s, c, +1);  // column c out of the test predictions
    if (c != 0) out.num.assign(ni_, 0.0), out.den.assign(ni_, 0.0);
    // One pass over each user's ratings from memory: column c out of its residuals, its exact
    // coordinate step (w free unless c = 1), then its share of every item's sums (h free unless
    // c = 0), the latter two over ratings still in cache.
    for (std::size_t l = 0; l < s.users.size(); ++l) {
      const auto q0 = s.offsets[l], q1 = s.offsets[l + 1];
      const double old = wc[l];
      double num = 0, den = 0;
      for (auto q = q0; q < q1; ++q) {
        const double h = hc[s.items[q]];
        s.e[q] += old * h;
        num += s.e[q] * h;
        den += h * h;
      }
      if (c != 1) wc[l] = num / (user_lambda(s, l) + den);
      if (c != 0) {
        const double x = wc[l];
        for (auto q = q0; q < q1; ++q) {
          out.num[s.items[q]] += s.e[q] * x;
          out.den[s.items[q]] += x * x;
        }
      }
    }
    s.open = c;
    return out;
  }

  void sync(worker& w, const update_type& u) {
    auto& s = st_.at(w.id());
    if (u.column != none && !u.h.empty()) {
      if (u.h.size() != ni_ || u.column >= C_) throw strata::error(errc::bad_frame, "mf ccd: a malformed column update");
      std::copy(u.h.begin(), u.h.end(), s.H.begin() + static_cast<std::ptrdiff_t>(std::size_t{u.column} * ni_));
    }
    if (u.column == none || s.open != u.column) return;  // the evaluation-only round
    residuals(s, u.column, -1);  // the new column c back into the prediction
    s.open = none;
  }

  update_type pull(const sched::plan& pl, std::vector<partial_type>& parts) {
    const auto now = strata::run_clock::now();
    if (parts.front().evaluated) record(pl, parts);
    update_type u;
    u.column = none;
    if (pl.round + 1 < rounds_) {
      const std::uint32_t c = pl.vars.front() / o_.inner;
      u.column = c;
      ++updates_;
      if (c != 0) {
        u.h.assign(ni_, 0.0);
        for (std::uint32_t i = 0; i < ni_; ++i) {
          double num = 0, den = 0;
          for (const auto& q : parts) {
            if (q.num.size() != ni_ || q.den.size() != ni_) throw strata::error(errc::bad_frame, "mf ccd: a malformed partial");
            num += q.num[i], den += q.den[i];
          }
          u.h[i] = num / (item_lambda_[i] + den);
          H_[std::size_t{c} * ni_ + i] = u.h[i];
        }
      }
    }
    last_pull_ = now;
    return u;
  }

  const std::vector<iteration_stats>& iterations() const noexcept { return iters_; }
  std::uint64_t column_updates() const noexcept { return updates_; }
  double final_rmse_recomputed() const noexcept { return final_rmse_recomputed_; }

 private:
  static constexpr std::uint32_t none = ~0u;
  struct test_rating {
    std::uint32_t user = 0, item = 0;  // local user
    float value = 0;
  };
  // W and H are kept by column (C × users, C × items): a round reads and writes one column, which
  // then lies contiguous (a row-major H put each rating's h_ic on its own cache line: at rank
  // 1,000, 2.5x slower per column than at rank 64).
  struct worker_state {
    std::vector<std::uint32_t> users;      // global ids of its users
    std::vector<double> W;                 // C × local users
    std::vector<double> H;                 // C × items (a copy)
    std::vector<std::uint64_t> offsets;    // ratings of local user l: [offsets[l], offsets[l+1])
    std::vector<std::uint32_t> items;
    std::vector<double> e;                 // residuals r − r̂ without the open column
    std::vector<test_rating> test;
    std::vector<double> et;                // test residuals r − r̂, kept like e (the test RMSE without a product)
    std::uint32_t open = none;             // the column taken out of e, until the sync
  };

  double* w_col(worker_state& s, std::uint32_t c) const noexcept { return s.W.data() + std::size_t{c} * s.users.size(); }
  const double* h_col(const worker_state& s, std::uint32_t c) const noexcept { return s.H.data() + std::size_t{c} * ni_; }
  /// Adds sign · w_uc h_ic to every test residual of worker s (+1: column c out of the
  /// prediction, before its step; −1: back in, after it).
  void test_residuals(worker_state& s, std::uint32_t c, double sign) const {
    const double* wc = w_col(s, c);
    const double* hc = h_col(s, c);
    for (std::size_t j = 0; j < s.test.size(); ++j) s.et[j] += sign * wc[s.test[j].user] * hc[s.test[j].item];
  }
  /// The same for the training residuals (the push takes column c out of them itself).
  void residuals(worker_state& s, std::uint32_t c, double sign) const {
    const double* wc = w_col(s, c);
    const double* hc = h_col(s, c);
    for (std::size_t l = 0; l < s.users.size(); ++l) {
      const double x = sign * wc[l];
      for (auto q = s.offsets[l]; q < s.offsets[l + 1]; ++q) s.e[q] += x * hc[s.items[q]];
    }
    test_residuals(s, c, sign);
  }

  /// λ of local user l's coordinate steps and norm: λ, or λ max(n_u, 1) with weighted_lambda.
  double user_lambda(const worker_state& s, std::size_t l) const noexcept {
    return o_.weighted_lambda ? o_.lambda * static_cast<double>(std::max<std::uint64_t>(s.offsets[l + 1] - s.offsets[l], 1)) : o_.lambda;
  }

  void evaluate(const worker_state& s, partial_type& out, bool final) const {
    const auto t0 = strata::run_clock::now();
    out.evaluated = true;
    for (double d : s.et) out.test_se += d * d;
    if (final) {  // once, O(test ratings × C): the kept residuals checked against the factors
      const std::size_t n = s.users.size();
      for (const auto& t : s.test) {
        double d = t.value - mu_;
        for (std::uint32_t c = 0; c < C_; ++c) d -= s.W[c * n + t.user] * s.H[std::size_t{c} * ni_ + t.item];
        out.test_se_recomputed += d * d;
      }
    }
    out.test_n = static_cast<double>(s.et.size());
    for (double x : s.e) out.loss += x * x;
    const std::size_t n = s.users.size();
    for (std::uint32_t c = 0; c < C_; ++c)
      if (c != 1)
        for (std::size_t l = 0; l < n; ++l) out.loss += user_lambda(s, l) * s.W[c * n + l] * s.W[c * n + l];
    out.eval_s = std::chrono::duration<double>(strata::run_clock::now() - t0).count();
  }

  void record(const sched::plan& pl, const std::vector<partial_type>& parts) {
    double se = 0, n = 0, loss = 0, ev = 0;
    double se2 = 0;
    for (const auto& q : parts) se += q.test_se, n += q.test_n, loss += q.loss, se2 += q.test_se_recomputed, ev = std::max(ev, q.eval_s);
    if (pl.round + 1 == rounds_) final_rmse_recomputed_ = n > 0 ? std::sqrt(se2 / n) : 0.0;
    for (std::uint32_t c = 1; c < C_; ++c)
      for (std::uint32_t i = 0; i < ni_; ++i) loss += item_lambda_[i] * H_[std::size_t{c} * ni_ + i] * H_[std::size_t{c} * ni_ + i];
    iteration_stats r;
    r.iteration = static_cast<std::uint32_t>(pl.round / (std::uint64_t{C_} * o_.inner));
    r.elapsed_s = std::chrono::duration<double>(last_pull_ - t0_).count() - eval_s_;  // the end of that iteration
    eval_s_ += ev;
    r.objective = loss;
    r.metric = n > 0 ? std::sqrt(se / n) : 0.0;
    r.metric_name = "rmse";
    iters_.push_back(r);
    if (on_iteration) on_iteration(r);
  }

  mf_ccd_options o_;
  std::uint32_t P_, C_, nu_, ni_;
  double mu_;
  std::uint64_t rounds_ = 0;
  std::vector<worker_state> st_;
  std::vector<double> H_;  // the coordinator's H (for the loss)
  std::vector<double> item_lambda_;  // λ of item i's coordinate steps and norm: λ, or λ max(n_i, 1)
  std::vector<iteration_stats> iters_;
  std::uint64_t updates_ = 0;
  double eval_s_ = 0, final_rmse_recomputed_ = 0;
  strata::run_clock::time_point t0_ = strata::run_clock::now(), last_pull_ = t0_;
};

}  // namespace strata::ml
