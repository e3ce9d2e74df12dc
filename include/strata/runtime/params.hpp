#pragma once
/// \file The run-time face of a consistency policy, so the runtime is compiled once for every model.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "../consistency/model.hpp"
#include "../core/ids.hpp"

namespace strata {

/// Shape and bounds of a run, given by the user.
struct system_config {
  std::uint32_t nodes = 1;             ///< processes (each a server shard and a set of workers)
  std::uint32_t workers_per_node = 1;  ///< worker threads per process
  int staleness = 0;                   ///< used by ssp<dynamic_bound> / essp<dynamic_bound>
  double value_bound = 1.0;            ///< used by vap<V> with V < 0
};

/// The consistency policy's answers, with run-time bounds filled in.
struct model_params {
  const char* name = "bsp";
  int staleness = 0;
  push_mode push = push_mode::none;
  bool exact = true;
  double value_bound = std::numeric_limits<double>::infinity();

  template <consistency_model C>
  static model_params of(const system_config& cfg) {
    model_params p;
    p.name = C::name();
    p.staleness = C::staleness == dynamic_bound ? cfg.staleness : C::staleness;
    p.push = C::push;
    p.exact = C::exact_snapshots;
    p.value_bound = C::value_bound < 0 ? cfg.value_bound : C::value_bound;
    return p;
  }
  std::string describe() const {
    std::string s = name;
    if (staleness != unbounded) s += " s=" + std::to_string(staleness);
    if (std::isfinite(value_bound)) s += " v=" + std::to_string(value_bound);
    return s;
  }
};

/// Global worker id <-> endpoint.
struct worker_map {
  std::uint32_t nodes = 1, per_node = 1;
  std::uint32_t workers() const noexcept { return nodes * per_node; }
  endpoint of(worker_id w) const noexcept { return {w / per_node, 1 + w % per_node}; }
  worker_id id(endpoint e) const noexcept { return e.node * per_node + (e.slot - 1); }
};

}  // namespace strata
