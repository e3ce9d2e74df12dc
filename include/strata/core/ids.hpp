#pragma once
/// \file Identifiers and the clock type shared by every layer.
#include <cstdint>
#include <limits>

namespace strata {

using row_id = std::uint64_t;      ///< row index inside a table
using table_id = std::uint32_t;    ///< table index inside a system
using worker_id = std::uint32_t;   ///< global worker index, 0 .. num_workers-1
using node_id = std::uint32_t;     ///< process (server shard + client) index, 0 .. num_nodes-1
using clock_type = std::int64_t;   ///< a worker's iteration counter; starts at 0

/// "Reflects through nothing yet": a row that holds no complete clock.
inline constexpr clock_type no_clock = -1;

/// A finished worker's clock: above every clock a running worker reaches. In per-writer clocks
/// (wire::rows::writers, worker::writer_clocks) it says the writer has finished and the row holds
/// every update it made, so no read is stale with respect to it.
inline constexpr clock_type finished_clock = std::numeric_limits<clock_type>::max() / 2;

/// An addressable party: slot 0 of a node is its server shard, slot 1 + i its i-th local worker.
struct endpoint {
  node_id node = 0;
  std::uint32_t slot = 0;
  friend bool operator==(const endpoint&, const endpoint&) = default;
  template <class Ar>
  void serialize(Ar& ar) { ar(node, slot); }
};

}  // namespace strata
