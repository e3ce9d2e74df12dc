#pragma once
/// \file The consistency-model concept: the small set of answers a policy gives the runtime.
#include <concepts>
#include <limits>

#include "../core/ids.hpp"

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

/// A consistency model is a type that answers, at compile time:
///  - `staleness`: s such that a read at clock c needs every update at clocks <= c - s - 1
///    (`unbounded` for none, `dynamic_bound` to take it from the run's configuration);
///  - `push`: whether and when the server pushes rows to subscribers;
///  - `exact_snapshots`: whether the server serves rows that reflect exactly the updates through the
///    global minimum clock minus one (nothing later), or applies updates as they arrive;
///  - `value_bound`: the total un-propagated update mass allowed (infinity when unbounded, negative
///    to take it from the run's configuration);
///  - `name()`: a short name for reports.
/// Policies opt in with `using consistency_tag = void;` so an unrelated type with the same members
/// is not taken for one.
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

namespace detail {
template <class C>
constexpr bool check_consistency_model() {
  static_assert(consistency_model<C>,
                "strata: the consistency policy must model strata::consistency_model: declare "
                "`using consistency_tag = void;` and static members staleness (int), push (push_mode), "
                "exact_snapshots (bool), value_bound (double) and name()");
  return true;
}
}  // namespace detail

}  // namespace strata
