#pragma once
/// \file The CCD++ MF trainer's STRADS program (apps/trainers/mf_ccd.hpp says what it does); only
/// apps/src/mf_ccd.cpp includes it.
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
    double eval_s = 0;
    template <class Ar>
    void serialize(Ar& ar) {
      ar(num, den, evaluated, test_se, test_n, loss, eval_s);
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
    for (const auto& r : train.ratings) ++per_user[r.user];
    const auto owner = balanced_partition(per_user, P_);
    std::vector<std::uint32_t> local(nu_, 0);
    st_.resize(P_);
    for (std::uint32_t u = 0; u < nu_; ++u) {
      auto& s = st_[owner[u]];
      local[u] = static_cast<std::uint32_t>(s.users.size());
      s.users.push_back(u);
    }
    // Initial H (every worker's copy and the coordinator's): hashed factors, b_i = 0, column 0 = 1.
    H_.assign(std::size_t{ni_} * C_, 0.0);
    for (std::uint32_t i = 0; i < ni_; ++i) {
      H_[std::size_t{i} * C_] = 1.0;
      for (std::uint32_t f = 0; f < o.rank; ++f) H_[std::size_t{i} * C_ + 2 + f] = detail::mf_init(o.seed, 1, i, f, o.rank, o.init_scale);
    }
    for (std::uint32_t p = 0; p < P_; ++p) {
      auto& s = st_[p];
      const std::size_t n = s.users.size();
      s.W.assign(n * C_, 0.0);
      for (std::size_t l = 0; l < n; ++l) {
        s.W[l * C_ + 1] = 1.0;
        for (std::uint32_t f = 0; f < o.rank; ++f) s.W[l * C_ + 2 + f] = detail::mf_init(o.seed, 0, s.users[l], f, o.rank, o.init_scale);
      }
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
      s.e[q] = r.value - mu_ - dot(s, local[r.user], r.item);
    }
    for (const auto& r : test.ratings) {
      auto& s = st_[owner[r.user]];
      s.test.push_back({local[r.user], r.item, r.value});
    }
  }

  std::uint32_t vars() const noexcept { return C_ * o_.inner; }
  /// Rounds of the run: iterations × C × inner, plus the final evaluation.
  std::uint64_t rounds() const noexcept { return rounds_; }
  void start() { t0_ = last_pull_ = std::chrono::steady_clock::now(); }
  /// Called on the coordinator's thread with every iteration's record.
  std::function<void(const iteration_stats&)> on_iteration;

  partial_type push(worker& w, const sched::plan& pl) {
    auto& s = st_.at(w.id());
    partial_type out;
    const std::uint64_t per_it = std::uint64_t{C_} * o_.inner;
    if (pl.round % per_it == 0) evaluate(s, out);
    if (pl.round + 1 == rounds_) return out;  // the final evaluation only
    if (pl.vars.size() != 1) throw strata::error(errc::bad_input, "mf ccd: one column per round");
    const std::uint32_t c = pl.vars.front() / o_.inner;
    for (std::size_t l = 0; l < s.users.size(); ++l)
      for (auto q = s.offsets[l]; q < s.offsets[l + 1]; ++q) s.e[q] += s.W[l * C_ + c] * s.H[std::size_t{s.items[q]} * C_ + c];
    if (c != 1)  // w free: the exact coordinate step per user
      for (std::size_t l = 0; l < s.users.size(); ++l) {
        double num = 0, den = 0;
        for (auto q = s.offsets[l]; q < s.offsets[l + 1]; ++q) {
          const double h = s.H[std::size_t{s.items[q]} * C_ + c];
          num += s.e[q] * h;
          den += h * h;
        }
        s.W[l * C_ + c] = num / (o_.lambda + den);
      }
    if (c != 0) {  // h free: this worker's share of every item's sums
      out.num.assign(ni_, 0.0);
      out.den.assign(ni_, 0.0);
      for (std::size_t l = 0; l < s.users.size(); ++l) {
        const double x = s.W[l * C_ + c];
        for (auto q = s.offsets[l]; q < s.offsets[l + 1]; ++q) {
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
    if (!u.h.empty())
      for (std::uint32_t i = 0; i < ni_; ++i) s.H[std::size_t{i} * C_ + u.column] = u.h[i];
    if (u.column == none || s.open != u.column) return;  // the evaluation-only round
    const std::uint32_t c = u.column;
    for (std::size_t l = 0; l < s.users.size(); ++l)
      for (auto q = s.offsets[l]; q < s.offsets[l + 1]; ++q) s.e[q] -= s.W[l * C_ + c] * s.H[std::size_t{s.items[q]} * C_ + c];
    s.open = none;
  }

  update_type pull(const sched::plan& pl, std::vector<partial_type>& parts) {
    const auto now = std::chrono::steady_clock::now();
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
          u.h[i] = num / (o_.lambda + den);
          H_[std::size_t{i} * C_ + c] = u.h[i];
        }
      }
    }
    last_pull_ = now;
    return u;
  }

  const std::vector<iteration_stats>& iterations() const noexcept { return iters_; }
  std::uint64_t column_updates() const noexcept { return updates_; }

 private:
  static constexpr std::uint32_t none = ~0u;
  struct test_rating {
    std::uint32_t user = 0, item = 0;  // local user
    float value = 0;
  };
  struct worker_state {
    std::vector<std::uint32_t> users;      // global ids of its users
    std::vector<double> W;                 // local user × C
    std::vector<double> H;                 // item × C (a copy)
    std::vector<std::uint64_t> offsets;    // ratings of local user l: [offsets[l], offsets[l+1])
    std::vector<std::uint32_t> items;
    std::vector<double> e;                 // residuals r − r̂ without the open column
    std::vector<test_rating> test;
    std::uint32_t open = none;             // the column taken out of e, until the sync
  };

  double dot(const worker_state& s, std::uint32_t l, std::uint32_t i) const noexcept {
    double x = 0;
    for (std::uint32_t c = 0; c < C_; ++c) x += s.W[std::size_t{l} * C_ + c] * s.H[std::size_t{i} * C_ + c];
    return x;
  }

  void evaluate(const worker_state& s, partial_type& out) const {
    const auto t0 = std::chrono::steady_clock::now();
    out.evaluated = true;
    for (const auto& t : s.test) {
      const double d = t.value - mu_ - dot(s, t.user, t.item);
      out.test_se += d * d;
      out.test_n += 1;
    }
    for (double x : s.e) out.loss += x * x;
    for (std::size_t l = 0; l < s.users.size(); ++l)
      for (std::uint32_t c = 0; c < C_; ++c)
        if (c != 1) out.loss += o_.lambda * s.W[l * C_ + c] * s.W[l * C_ + c];
    out.eval_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  void record(const sched::plan& pl, const std::vector<partial_type>& parts) {
    double se = 0, n = 0, loss = 0, ev = 0;
    for (const auto& q : parts) se += q.test_se, n += q.test_n, loss += q.loss, ev = std::max(ev, q.eval_s);
    for (std::uint32_t i = 0; i < ni_; ++i)
      for (std::uint32_t c = 1; c < C_; ++c) loss += o_.lambda * H_[std::size_t{i} * C_ + c] * H_[std::size_t{i} * C_ + c];
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
  std::vector<iteration_stats> iters_;
  std::uint64_t updates_ = 0;
  double eval_s_ = 0;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now(), last_pull_ = t0_;
};

}  // namespace strata::ml
