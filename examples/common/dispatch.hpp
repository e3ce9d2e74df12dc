#pragma once
/// \file Maps the run-time --consistency and --transport flags onto strata's compile-time policy
/// types, once, at the edge of an example: `dispatch(opts, f)` calls the generic lambda
/// `f(std::type_identity<Consistency>{}, std::type_identity<Transport>{}, transport_config)`.
/// SSP and ESSP use strata::dynamic_bound and VAP a negative V, so the bounds come from
/// system_config (--staleness, --value-bound) and are not compiled in.
#include <strata/strata.hpp>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace strata::examples {

/// The flags shared by the example trainers that choose the system.
struct system_options {
  std::string consistency = "essp";  ///< bsp | ssp | essp | vap | async
  int staleness = 2;                 ///< s of SSP / ESSP
  double value_bound = 1000;         ///< V of VAP (total un-propagated update mass)
  std::uint32_t workers = 4;         ///< worker threads per node
  std::uint32_t nodes = 1;           ///< server shards (in-process nodes)
  std::string transport = "inproc";  ///< inproc | delayed
  double delay_us = 0;               ///< --delay: latency per message, µs (selects delayed)
  double jitter_us = -1;             ///< jitter per message, µs (default: delay / 2)
  int straggler = -1;                ///< worker id whose messages are slowed (-1: none)
  double straggler_factor = 4;       ///< delay multiplier for the straggler's messages
  std::uint64_t seed = 1;

  strata::system_config system_config() const {
    return {.nodes = nodes, .workers_per_node = workers, .staleness = staleness, .value_bound = value_bound};
  }
  /// "essp s=2" etc.
  std::string model_label() const {
    if (consistency == "ssp" || consistency == "essp") return consistency + " s=" + std::to_string(staleness);
    if (consistency == "vap") return "vap v=" + std::to_string(static_cast<long long>(value_bound));
    return consistency;
  }
};

/// Calls f with the chosen consistency type. Throws std::invalid_argument for an unknown name.
template <class F>
decltype(auto) with_consistency(const std::string& name, F&& f) {
  if (name == "bsp") return f(std::type_identity<strata::bsp>{});
  if (name == "ssp") return f(std::type_identity<strata::ssp<strata::dynamic_bound>>{});
  if (name == "essp") return f(std::type_identity<strata::essp<strata::dynamic_bound>>{});
  if (name == "vap") return f(std::type_identity<strata::vap<-1.0>>{});
  if (name == "async") return f(std::type_identity<strata::async>{});
  throw std::invalid_argument("unknown consistency model '" + name + "' (bsp|ssp|essp|vap|async)");
}

/// Calls f(type_identity<C>, type_identity<T>, T::config) for the chosen model and transport.
template <class F>
decltype(auto) dispatch(const system_options& o, F&& f) {
  return with_consistency(o.consistency, [&]<class C>(std::type_identity<C> c) -> decltype(auto) {
    if (o.transport == "inproc" && o.delay_us <= 0 && o.straggler < 0)
      return f(c, std::type_identity<strata::inproc>{}, strata::inproc::config{});
    if (o.transport == "inproc" || o.transport == "delayed") {
      using T = strata::delayed<strata::inproc>;
      T::config tc;
      const double jitter = o.jitter_us >= 0 ? o.jitter_us : o.delay_us / 2;
      tc.delay.latency = std::chrono::microseconds(static_cast<std::int64_t>(o.delay_us));
      tc.delay.jitter = std::chrono::microseconds(static_cast<std::int64_t>(jitter));
      if (o.straggler >= 0) {
        const strata::worker_map wm{o.nodes, o.workers};
        tc.delay.stragglers.push_back(wm.of(static_cast<strata::worker_id>(o.straggler)));
        tc.delay.straggler_factor = o.straggler_factor;
      }
      tc.delay.seed = o.seed;
      return f(c, std::type_identity<T>{}, std::move(tc));
    }
    // TODO(tcp): add "tcp" once strata::tcp and runtime/cluster.hpp's launcher have landed; the
    // trainers would then also need each process to load only its own share of the data.
    throw std::invalid_argument("unknown transport '" + o.transport + "' (inproc|delayed)");
  });
}

}  // namespace strata::examples
