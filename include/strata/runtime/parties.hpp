#pragma once
/// \file Who takes part in a run and where: roles (`role`, `peer`), the map from parties to endpoints
/// (`worker_map`), and how a party sends (`send_fn`).
#include <cstdint>
#include <functional>
#include <string>

#include <strata/core/error.hpp>
#include <strata/core/ids.hpp>
#include <strata/wire/messages.hpp>

namespace strata {

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
