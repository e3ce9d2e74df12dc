#pragma once
/// \file The five consistency models of the ESSP paper as policy types.
#include <limits>

#include <strata/consistency/model.hpp>

namespace strata {

/// Stale synchronous parallel: a read at clock c sees every update at clocks <= c - S - 1, pulled on
/// demand. As in Bösen the server applies updates as they arrive, so a read may also hold later ones.
/// `ssp<dynamic_bound>` takes S from system_config::staleness.
template <int S>
struct ssp {
  static_assert(S >= 0 || S == dynamic_bound, "strata::ssp<S>: the staleness bound S must be >= 0");
  using consistency_tag = void;
  static constexpr int staleness = S;
  static constexpr push_mode push = push_mode::none;
  static constexpr bool exact_snapshots = false;
  static constexpr double value_bound = std::numeric_limits<double>::infinity();
  static constexpr const char* name() noexcept { return "ssp"; }
};

/// Bulk synchronous parallel: SSP with staleness 0, served as exact snapshots: a read at clock c sees
/// exactly the updates of clocks < c (the server holds later ones back until every worker is there).
struct bsp : ssp<0> {
  static constexpr bool exact_snapshots = true;
  static constexpr const char* name() noexcept { return "bsp"; }
};

/// Eager SSP: SSP's guarantee, and the server pushes updated rows to every subscriber when the
/// global minimum clock advances, so reads rarely wait (a row only that subscriber changed since its
/// last push is left out: the subscriber's cache already holds its own increments).
template <int S>
struct essp : ssp<S> {
  static constexpr push_mode push = push_mode::on_min_clock;
  static constexpr const char* name() noexcept { return "essp"; }
};

/// Value-bounded asynchronous parallel: the un-propagated update mass (sum of |delta| not yet applied
/// at the owning server shard) of each of P workers stays <= V / P; updates are pushed as applied.
/// `vap<-1.0>` (any negative V) takes V from system_config::value_bound.
template <double V>
struct vap {
  static_assert(V != 0.0, "strata::vap<V>: the value bound must be positive (or negative for a run-time bound)");
  using consistency_tag = void;
  static constexpr int staleness = unbounded;
  static constexpr push_mode push = push_mode::on_update;
  static constexpr bool exact_snapshots = false;
  static constexpr double value_bound = V;
  static constexpr const char* name() noexcept { return "vap"; }
};

/// Fully asynchronous: no bound on staleness; updates are applied and pushed as they arrive.
struct async {
  using consistency_tag = void;
  static constexpr int staleness = unbounded;
  static constexpr push_mode push = push_mode::on_update;
  static constexpr bool exact_snapshots = false;
  static constexpr double value_bound = std::numeric_limits<double>::infinity();
  static constexpr const char* name() noexcept { return "async"; }
};

static_assert(consistency_model<bsp> && consistency_model<ssp<3>> && consistency_model<essp<2>> &&
              consistency_model<vap<1.0>> && consistency_model<async>);

}  // namespace strata
