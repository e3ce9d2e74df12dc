#pragma once
/// \file The run-time face of a consistency policy, so the runtime is compiled once for every model.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "../consistency/model.hpp"
#include "../core/error.hpp"
#include "../core/ids.hpp"
#include "../wire/messages.hpp"

namespace strata {

/// Shape and bounds of a run, given by the user.
struct system_config {
  std::uint32_t nodes = 1;             ///< processes (each a server shard and a set of workers)
  std::uint32_t workers_per_node = 1;  ///< worker threads per process
  int staleness = 0;                   ///< used by ssp<dynamic_bound> / essp<dynamic_bound>
  double value_bound = 1.0;            ///< used by vap<V> with V < 0
  std::size_t max_message = 16u << 20; ///< largest app message or collective contribution, in bytes
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

/// How a runtime party sends a message (the transport's send, bound to the sender's endpoint).
using send_fn = std::function<void(endpoint dst, wire::message&& m)>;

/// The roles a party of a run can have.
enum class role : std::uint8_t {
  shard,        ///< a server shard (one per node)
  worker,       ///< a worker thread running the worker program
  coordinator,  ///< the one coordinator of a run (on node 0), running the coordinator program
};

/// A party of a run by role: worker i, shard n, or the coordinator. What app messages are
/// addressed to and say they came from.
struct peer {
  role kind = role::worker;
  std::uint32_t index = 0;  ///< worker id, node id of a shard; 0 for the coordinator
  static constexpr peer worker(worker_id w) noexcept { return {role::worker, w}; }
  static constexpr peer shard(node_id n) noexcept { return {role::shard, n}; }
  static constexpr peer coordinator() noexcept { return {role::coordinator, 0}; }
  bool is_worker() const noexcept { return kind == role::worker; }
  bool is_coordinator() const noexcept { return kind == role::coordinator; }
  friend bool operator==(const peer&, const peer&) = default;
  std::string describe() const {
    switch (kind) {
      case role::shard: return "shard " + std::to_string(index);
      case role::worker: return "worker " + std::to_string(index);
      case role::coordinator: return "the coordinator";
    }
    return "?";
  }
};

/// Where every party of a run lives: node n's slot 0 is its shard, slots 1..per_node its workers,
/// and slot per_node + 1 of node 0 the coordinator. The one place that maps roles to endpoints.
struct worker_map {
  std::uint32_t nodes = 1, per_node = 1;
  std::uint32_t workers() const noexcept { return nodes * per_node; }
  endpoint of(worker_id w) const noexcept { return {w / per_node, 1 + w % per_node}; }
  worker_id id(endpoint e) const noexcept { return e.node * per_node + (e.slot - 1); }
  endpoint shard(node_id n) const noexcept { return {n, 0}; }
  endpoint coordinator() const noexcept { return {0, per_node + 1}; }
  /// The endpoint of a party; throws `bad_input` for one that is not in the run.
  endpoint address(peer p) const {
    switch (p.kind) {
      case role::shard:
        if (p.index < nodes) return shard(p.index);
        break;
      case role::worker:
        if (p.index < workers()) return of(p.index);
        break;
      case role::coordinator: return coordinator();
    }
    throw error(errc::bad_input, p.describe() + " is not part of this run (" + std::to_string(workers()) + " workers, " +
                                     std::to_string(nodes) + " nodes)");
  }
  /// The party at an endpoint.
  peer who(endpoint e) const noexcept {
    if (e.slot == 0) return peer::shard(e.node);
    if (e.slot <= per_node) return peer::worker(id(e));
    return peer::coordinator();
  }
};

}  // namespace strata
