#pragma once
/// \file Table descriptors and typed handles; row placement across server shards.
#include <cstddef>
#include <cstdint>
#include <string>

#include <strata/core/ids.hpp>
#include <strata/table/row.hpp>

namespace strata {

/// Which kind of row a table stores, for the run signature.
struct table_info {
  table_id id = 0;
  std::size_t width = 0;
  std::string row_kind;  ///< e.g. the row type's name, compared between processes
};

/// A typed reference to a table of rows R, returned by system::add_table.
template <row_type R>
struct table_handle {
  table_id id = 0;
  std::size_t width = 0;
};

/// The server shard (node) that owns a row: rows spread round-robin by id, offset per table.
constexpr node_id owner_of(table_id t, row_id r, std::uint32_t nodes) noexcept {
  return static_cast<node_id>((r + std::uint64_t{t} * 7919u) % nodes);
}

}  // namespace strata
