#pragma once
/// \file The STRADS schedulers: `round_robin`, `uniform_random` (Shotgun), `priority` (dynamic
/// priority, sampling ∝ |Δ|^p + η), the decorator `dependency_filter<S>` (greedy acceptance by
/// a dependency threshold ρ) and `rotation` (a block ring, for model-partitioned LDA).
/// Each models `strata::sched::scheduler` (sched/scheduler.hpp).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <strata/core/error.hpp>
#include <strata/sched/scheduler.hpp>

namespace strata::sched {

/// Variables in order, `batch` at a time, wrapping around: every variable once per
/// ceil(vars / batch) rounds.
class round_robin {
 public:
  using scheduler_tag = void;
  static constexpr const char* name() noexcept { return "round_robin"; }

  void schedule(const context& cx, plan& out) {
    const std::uint32_t n = std::min(cx.batch, cx.vars);
    for (std::uint32_t i = 0; i < n; ++i) {
      if (next_ >= cx.vars) next_ = 0;
      out.vars.push_back(next_++);
    }
  }
  void observe(std::span<const var_delta>) noexcept {}

 private:
  var_id next_ = 0;
};

/// Shotgun: `batch` distinct variables drawn uniformly at random each round.
class uniform_random {
 public:
  using scheduler_tag = void;
  static constexpr const char* name() noexcept { return "uniform_random"; }
  explicit uniform_random(std::uint64_t seed = 1) : rng_(seed) {}

  void schedule(const context& cx, plan& out) {
    // Floyd's algorithm: `n` distinct values of [0, vars) in O(n) draws (a mark per variable, so
    // a round of n costs O(n) however large n is).
    const std::uint32_t n = std::min(cx.batch, cx.vars);
    if (taken_.size() != cx.vars) taken_.assign(cx.vars, 0);
    const std::size_t first = out.vars.size();
    for (std::uint32_t j = cx.vars - n; j < cx.vars; ++j) {
      const auto t = std::uniform_int_distribution<std::uint32_t>(0, j)(rng_);
      const var_id v = taken_[t] ? j : t;
      taken_[v] = 1;
      out.vars.push_back(v);
    }
    for (std::size_t i = first; i < out.vars.size(); ++i) taken_[out.vars[i]] = 0;
  }
  void observe(std::span<const var_delta>) noexcept {}

 private:
  std::mt19937_64 rng_;
  std::vector<std::uint8_t> taken_;
};

/// Dynamic priority (STRADS): a variable's priority is |Δ|^p of its last change; a round makes
/// `batch` draws, each a variable with probability ∝ priority + η, and keeps the distinct ones
/// (so a round holds at most `batch`, fewer when the priority sits on fewer variables). The floor
/// η = eta × (total priority) / vars puts a fraction eta / (1 + eta) of the draws on variables
/// uniformly, whatever the number of variables: a variable that stopped moving is still tried now
/// and then, and with a million variables of which a thousand move the draws still go to those
/// (a floor per variable of eta × the mean *non-zero* priority, as before, put 99% of the draws on
/// the 999,000 that do not). A variable with no priority yet (never observed) comes first, in
/// random order, so every variable gets one; a program may report a predicted change (e.g. the
/// step a full gradient says a coefficient would take) for variables it did not schedule, which
/// sets their priority too. p = 1 is the released STRADS code, p = 2 the paper.
class priority {
 public:
  using scheduler_tag = void;
  static constexpr const char* name() noexcept { return "priority"; }
  struct settings {
    double p = 1;         ///< exponent of |Δ|
    double eta = 0.1;     ///< the floor: the uniform draws are eta / (1 + eta) of all
    std::uint64_t seed = 1;
  };
  priority() : priority(settings{}) {}
  explicit priority(settings s) : s_(s), rng_(s.seed) {
    if (!(s.p > 0) || !(s.eta >= 0))
      throw error(errc::bad_input, "priority scheduler: p must be > 0 and eta >= 0 (got p=" + std::to_string(s.p) +
                                       ", eta=" + std::to_string(s.eta) + ")");
  }

  void schedule(const context& cx, plan& out) {
    if (prio_.size() != cx.vars) reset(cx.vars);
    const std::uint32_t n = std::min(cx.batch, cx.vars);
    const std::size_t first = out.vars.size();
    auto take = [&](var_id v) {
      if (taken_[v]) return;
      taken_[v] = 1;
      out.vars.push_back(v);
    };
    while (out.vars.size() - first < n && !unvisited_.empty()) {
      const var_id v = unvisited_.back();
      unvisited_.pop_back();
      if (!observed_[v]) take(v);
    }
    const std::uint32_t draws = n - static_cast<std::uint32_t>(out.vars.size() - first);
    if (draws > 0) {
      const double tot = total();
      // The floor's share of the draws: all of them while no variable has a priority.
      const double floor_share = tot > 0 ? s_.eta / (1.0 + s_.eta) : 1.0;
      std::uniform_real_distribution<double> u01(0.0, 1.0);
      std::uniform_int_distribution<var_id> any(0, cx.vars - 1);
      for (std::uint32_t k = 0; k < draws; ++k) {
        const double x = u01(rng_);
        take(x < floor_share ? any(rng_) : find((x - floor_share) / (1.0 - floor_share) * tot));
      }
    }
    for (std::size_t i = first; i < out.vars.size(); ++i) taken_[out.vars[i]] = 0;
  }

  void observe(std::span<const var_delta> changes) {
    if (prio_.empty()) return;
    const bool bulk = changes.size() >= prio_.size() / 16;  // many at once: set them, then rebuild the sums in O(vars)
    for (const auto& c : changes) {
      if (c.var >= prio_.size()) continue;
      const double q = std::pow(std::abs(c.delta), s_.p);
      if (bulk)
        prio_[c.var] = std::isfinite(q) ? q : 0.0;
      else
        set(c.var, std::isfinite(q) ? q : 0.0);
      observed_[c.var] = 1;
    }
    if (bulk || (updates_ += changes.size()) >= 4 * prio_.size()) rebuild();  // (also bounds the sums' floating-point drift)
  }

  /// The current priority of `v` (0 before it is first observed).
  double priority_of(var_id v) const { return v < prio_.size() ? prio_[v] : 0.0; }

 private:
  void reset(std::uint32_t vars) {
    prio_.assign(vars, 0.0);
    tree_.assign(vars + 1, 0.0);
    taken_.assign(vars, 0);
    observed_.assign(vars, 0);
    unvisited_.resize(vars);
    std::iota(unvisited_.begin(), unvisited_.end(), var_id{0});
    std::shuffle(unvisited_.begin(), unvisited_.end(), rng_);
  }
  // A Fenwick tree over the priorities: O(log n) updates, prefix sums and sampling.
  void add(std::size_t i, double d) {
    for (++i; i < tree_.size(); i += i & (~i + 1)) tree_[i] += d;
  }
  double total() const {
    double s = 0;
    for (std::size_t i = prio_.size(); i > 0; i -= i & (~i + 1)) s += tree_[i];
    return std::max(0.0, s);
  }
  var_id find(double x) const {  // smallest v with prefix sum through v > x
    std::size_t pos = 0, step = std::bit_floor(tree_.size());
    for (; step > 0; step >>= 1)
      if (pos + step < tree_.size() && tree_[pos + step] <= x) pos += step, x -= tree_[pos];
    return static_cast<var_id>(std::min(pos, prio_.size() - 1));
  }
  void set(var_id v, double q) {
    add(v, q - prio_[v]);
    prio_[v] = q;
  }
  void rebuild() {  // O(vars): each node adds itself to its parent once
    for (std::size_t i = 0; i < prio_.size(); ++i) tree_[i + 1] = prio_[i];
    for (std::size_t i = 1; i < tree_.size(); ++i)
      if (const std::size_t up = i + (i & (~i + 1)); up < tree_.size()) tree_[up] += tree_[i];
    updates_ = 0;
  }

  settings s_;
  std::mt19937_64 rng_;
  std::vector<double> prio_, tree_;
  std::vector<std::uint8_t> taken_, observed_;  // taken_: in the round being drawn; observed_: has a priority
  std::vector<var_id> unvisited_;
  std::size_t updates_ = 0;
};

/// STRADS's dependency check, wrapping any scheduler S: takes `oversample` × batch candidates
/// and accepts them in order, rejecting one whose dependency (the program's `dependency(a, b)`,
/// e.g. |correlation| of two Lasso columns) with an already accepted one, or with a variable of a
/// round still in flight (pipelining; a variable depends on itself with 1), is ≥ rho, until
/// `batch` are accepted. The candidates are last round's unowned candidates that were not taken
/// (rejected or past the batch), then S's: so no variable S proposes is lost, and since the first
/// candidate of a round is always taken, every deferred one is taken within a bounded number of
/// rounds. With rho > 1 nothing is rejected; with oversample = 1 and no dependency reaching rho
/// the schedule is exactly S's.
template <scheduler S>
class dependency_filter {
 public:
  using scheduler_tag = void;
  static std::string name() { return std::string("dependency_filter<") + S::name() + ">"; }
  struct settings {
    double rho = 0.1;              ///< reject at |dependency| >= rho
    std::uint32_t oversample = 2;  ///< candidates asked of S per accepted variable
  };
  dependency_filter() : dependency_filter(S{}, settings{}) {}
  explicit dependency_filter(S inner, settings s = {}) : inner_(std::move(inner)), s_(s) {
    if (s.oversample == 0 || !(s.rho >= 0))
      throw error(errc::bad_input, "dependency_filter: oversample must be >= 1 and rho >= 0");
  }

  void schedule(const context& cx, plan& out) {
    if (!cx.dependency)
      throw error(errc::bad_input, "dependency_filter<" + std::string(S::name()) +
                                       ">: the program offers no dependency(a, b) to check");
    // Candidates: those deferred last round first, then S's, oversample x batch in all (S is
    // asked only for what the deferred ones leave).
    const std::uint32_t want = cx.batch * s_.oversample;
    candidates_.vars.assign(deferred_.begin(), deferred_.end());
    candidates_.owner.clear();
    if (deferred_.size() < want) {
      context wide = cx;
      wide.batch = want - static_cast<std::uint32_t>(deferred_.size());
      plan more;
      inner_.schedule(wide, more);
      if (!more.owner.empty()) {
        if (!deferred_.empty()) throw error(errc::bad_input, "dependency_filter: S changed from unowned to owned plans");
        candidates_.owner = std::move(more.owner);
      }
      for (var_id v : more.vars)
        if (std::find(deferred_.begin(), deferred_.end(), v) == deferred_.end()) candidates_.vars.push_back(v);
    }
    deferred_.clear();
    const std::size_t first = out.vars.size();
    for (std::size_t i = 0; i < candidates_.vars.size(); ++i) {
      const var_id c = candidates_.vars[i];
      bool ok = out.vars.size() - first < cx.batch;
      for (std::size_t k = first; ok && k < out.vars.size(); ++k) ok = std::abs(cx.dependency(c, out.vars[k])) < s_.rho;
      for (std::size_t k = 0; ok && k < cx.in_flight.size(); ++k) ok = std::abs(cx.dependency(c, cx.in_flight[k])) < s_.rho;
      if (!ok) {
        if (out.vars.size() - first < cx.batch) ++rejected_;
        // An unowned candidate not taken comes first next round, so that a scheduler that proposes
        // each variable once per sweep (round_robin) does not lose it.
        if (candidates_.owner.empty()) deferred_.push_back(c);
        continue;
      }
      out.vars.push_back(c);
      if (!candidates_.owner.empty()) out.owner.push_back(candidates_.owner[i]);
    }
  }
  void observe(std::span<const var_delta> changes) { inner_.observe(changes); }

  /// Candidates rejected so far.
  std::uint64_t rejected() const noexcept { return rejected_; }
  S& inner() noexcept { return inner_; }

 private:
  S inner_;
  settings s_;
  plan candidates_;
  std::vector<var_id> deferred_;  // candidates not taken last round, offered first
  std::uint64_t rejected_ = 0;
};

/// A block ring for model-partitioned programs (LDA's word rotation): the variables are blocks
/// 0 .. vars-1, and in round r block b belongs to worker (b + r) mod workers, so no two workers
/// hold the same block in a round and, with vars == workers, every worker meets every block
/// once per `workers` rounds. `batch` is ignored: every block is scheduled every round.
class rotation {
 public:
  using scheduler_tag = void;
  static constexpr const char* name() noexcept { return "rotation"; }

  void schedule(const context& cx, plan& out) {
    for (var_id b = 0; b < cx.vars; ++b) {
      out.vars.push_back(b);
      out.owner.push_back(static_cast<std::uint32_t>((b + cx.round) % cx.workers));
    }
  }
  void observe(std::span<const var_delta>) noexcept {}
};

static_assert(scheduler<round_robin> && scheduler<uniform_random> && scheduler<priority> &&
              scheduler<dependency_filter<priority>> && scheduler<rotation>);

}  // namespace strata::sched
