#pragma once
/// \file The consistency-model concept: the small set of answers a policy gives the runtime.
#include <concepts>
#include <limits>

#include <strata/core/ids.hpp>

namespace strata {

/// When the server sends rows that a client did not ask for.
enum class push_mode {
  none,            ///< clients pull (BSP, SSP)
  on_min_clock,    ///< push updated rows to subscribers when the global minimum clock advances (ESSP)
  on_update,       ///< push rows to subscribers as soon as an update is applied (VAP, async)
};

/// Staleness value meaning "no bound on clocks" (VAP, async).
inline constexpr int unbounded = std::numeric_limits<int>::max();
/// Staleness or value bound meaning "taken at run time from system_config".
inline constexpr int dynamic_bound = -1;

/// A consistency model is a type that answers the runtime's questions, at compile time:
///  - may a read at clock c use a row reflecting t? `staleness`: s such that a read at clock c
///    needs every update at clocks <= c - s - 1 (`unbounded` for none, `dynamic_bound` to take it
///    from the run's configuration); optional hook `static constexpr int staleness_of(table_id)`
///    for a bound per table (default: `staleness` for every table);
///  - when does the server push, and to whom? `push`: never, to every subscriber of a changed row
///    when the global minimum clock advances (`on_min_clock`), or as soon as an update is applied
///    (`on_update`); optional hook `static constexpr bool push_at(clock_type new_min)` choosing
///    which advances push under `on_min_clock` (default: every one). Rows changed between pushes
///    go out with the next push, to each subscriber but one that alone changed them;
///  - what does a server row hold? `exact_snapshots`: exactly the updates through the global
///    minimum clock minus one (held back until every worker has clocked), or every update as it
///    arrives;
///  - must this `inc` wait? `value_bound`: the total un-acknowledged update mass allowed (infinity
///    when unbounded, negative to take it from the run's configuration);
///  - when is the oplog flushed? At every `clock()`, and under a value bound when an increment
///    would pass it;
///  - `name()`: a short name for reports.
/// Policies opt in with `using consistency_tag = void;` so an unrelated type with the same members
/// is not taken for one. Incoherent answers (exact snapshots pushed on update, exact snapshots
/// under a value bound, `push_at` without `on_min_clock`) fail to compile with a sentence saying
/// what to write.
template <class C>
concept consistency_model = requires {
  typename C::consistency_tag;
  { C::staleness } -> std::convertible_to<int>;
  { C::push } -> std::convertible_to<push_mode>;
  { C::exact_snapshots } -> std::convertible_to<bool>;
  { C::value_bound } -> std::convertible_to<double>;
  { C::name() } -> std::convertible_to<const char*>;
};

/// The clock through which a row must reflect all updates for a read at clock c under staleness s.
constexpr clock_type required_clock(clock_type c, int s) noexcept {
  return s == unbounded ? no_clock - 1 : c - s - 1;
}

/// The staleness bound of table t under policy C (its `staleness_of` hook, or `staleness`).
template <consistency_model C>
constexpr int staleness_of(table_id t) noexcept {
  if constexpr (requires { { C::staleness_of(t) } -> std::convertible_to<int>; }) return C::staleness_of(t);
  else return C::staleness;
}
/// Whether policy C pushes at an advance of the minimum clock to `new_min` (its `push_at` hook,
/// or every advance when it pushes on_min_clock).
template <consistency_model C>
constexpr bool push_at(clock_type new_min) noexcept {
  if constexpr (requires { { C::push_at(new_min) } -> std::convertible_to<bool>; }) return C::push_at(new_min);
  else return C::push == push_mode::on_min_clock;
}

namespace detail {
template <class C>
constexpr bool check_consistency_model() {
  static_assert(consistency_model<C>,
                "strata: the consistency policy must model strata::consistency_model: declare "
                "`using consistency_tag = void;` and static members staleness (int), push (push_mode), "
                "exact_snapshots (bool), value_bound (double) and name()");
  if constexpr (consistency_model<C>) {
    static_assert(!(C::exact_snapshots && C::push == push_mode::on_update),
                  "strata: a policy with exact_snapshots holds updates back until every worker has clocked, so it "
                  "cannot push them as they are applied: set push to push_mode::on_min_clock or push_mode::none, "
                  "or exact_snapshots to false");
    static_assert(!(C::exact_snapshots && C::value_bound == C::value_bound && C::value_bound < 1e300),
                  "strata: a value bound waits for the server to acknowledge increments, which exact snapshots do "
                  "only when every worker has clocked (a worker waiting in inc could never be acknowledged): set "
                  "value_bound to infinity or exact_snapshots to false");
    static_assert(!requires(clock_type c) { C::push_at(c); } || C::push == push_mode::on_min_clock,
                  "strata: push_at(new_min) chooses which advances of the minimum clock push rows: it needs "
                  "`static constexpr push_mode push = push_mode::on_min_clock;`");
  }
  return true;
}
}  // namespace detail

}  // namespace strata
