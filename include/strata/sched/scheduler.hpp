#pragma once
/// \file STRADS scheduling: what a scheduler sees and returns, and the `scheduler` concept.
///
/// A STRADS round: the coordinator's scheduler chooses variables (`schedule`), every worker
/// computes partial results for them over its data shard (`push`), the coordinator aggregates
/// and applies them (`pull`) and the result reaches every worker before it pushes again. The
/// scheduler then learns what changed (`observe`). This header is the scheduler's side; the
/// rounds themselves are sched/engine.hpp.
///
/// A scheduler is a small type:
///
///     struct my_scheduler {
///       using scheduler_tag = void;                              // opt in
///       void schedule(const strata::sched::context& cx, strata::sched::plan& out);
///       void observe(std::span<const strata::sched::var_delta> changes);   // may ignore them
///       static constexpr const char* name() { return "mine"; }  // for decorators and traces
///     };
///
/// `schedule` appends to `out.vars` at most `cx.batch` distinct variables below `cx.vars`, and,
/// for a model-partitioned program, `out.owner` (one worker per variable: that worker alone
/// updates it this round); leaving `out.owner` empty means every worker works on every
/// scheduled variable (data-partitioned, e.g. Lasso's partial sums). Decorators (e.g.
/// `dependency_filter<S>`) are schedulers that wrap one.
#include <concepts>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace strata::sched {

/// A model variable (a coefficient, a block of word-topic rows, a factor column).
using var_id = std::uint32_t;

/// What a scheduler knows when asked for a round.
struct context {
  std::uint64_t round = 0;     ///< this round's number, from 0
  std::uint32_t vars = 0;      ///< variables are 0 .. vars-1
  std::uint32_t workers = 1;   ///< workers in the run
  std::uint32_t batch = 1;     ///< at most this many variables per round
  /// |dependency| of two variables in [0, 1] (e.g. |correlation| of two Lasso columns); empty
  /// when the program offers none.
  std::function<double(var_id, var_id)> dependency;
  /// With pipelining: the variables of rounds scheduled but not yet pulled (their changes are not
  /// yet in the workers' state, so a variable that depends on one of them would be stepped on
  /// stale partials).
  std::vector<var_id> in_flight;
};

/// One round's schedule. `owner` is empty (every worker works on every variable) or parallel to
/// `vars` (worker `owner[i]` alone updates `vars[i]`).
struct plan {
  std::uint64_t round = 0;
  std::vector<var_id> vars;
  std::vector<std::uint32_t> owner;
  bool evaluate = false;  ///< set by the engine: workers also report what the objective needs

  /// Variables worker `w` works on this round (all of them when `owner` is empty).
  template <class F>
  void for_worker(std::uint32_t w, F&& f) const {
    for (std::size_t i = 0; i < vars.size(); ++i)
      if (owner.empty() || owner[i] == w) f(vars[i]);
  }
  template <class Ar>
  void serialize(Ar& ar) {
    ar(round, vars, owner, evaluate);
  }
};

/// A variable's change in a round, reported to `observe` (priority schedulers learn from it).
struct var_delta {
  var_id var = 0;
  double delta = 0;
};

namespace detail {
template <class S>
concept scheduler_shape = requires(S& s, const context& cx, plan& out, std::span<const var_delta> d) {
  { s.schedule(cx, out) } -> std::same_as<void>;
  { s.observe(d) } -> std::same_as<void>;
};
template <class S>
concept scheduler_named = requires {
  { S::name() } -> std::convertible_to<std::string>;
};
}  // namespace detail

/// A type that chooses each round's variables: opts in with `using scheduler_tag = void;` and
/// has `void schedule(const context&, plan&)`, `void observe(std::span<const var_delta>)` and a
/// static `name()` (what decorators such as dependency_filter<S> and the traces call it).
template <class S>
concept scheduler = requires { typename S::scheduler_tag; } && detail::scheduler_shape<S> && detail::scheduler_named<S>;

/// For a static_assert with a message that says what to write (used by the engine).
template <class S>
constexpr bool check_scheduler() {
  static_assert(requires { typename S::scheduler_tag; },
                "strata: not a STRADS scheduler: opt in with `using scheduler_tag = void;` (see "
                "strata/sched/scheduler.hpp)");
  static_assert(detail::scheduler_shape<S>,
                "strata: a STRADS scheduler needs `void schedule(const strata::sched::context&, "
                "strata::sched::plan&)` and `void observe(std::span<const strata::sched::var_delta>)`");
  static_assert(detail::scheduler_named<S>,
                "strata: a STRADS scheduler needs a static `name()` returning its name (e.g. `static constexpr "
                "const char* name() { return \"greedy\"; }`): decorators and traces use it");
  return true;
}

}  // namespace strata::sched
