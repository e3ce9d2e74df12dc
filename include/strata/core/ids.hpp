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

}  // namespace strata
