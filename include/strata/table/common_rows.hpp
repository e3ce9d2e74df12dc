#pragma once
/// \file The row types most tables use, whose rows, client tables and server tables the compiled
/// mode's runtime library instantiates once (core/config.hpp): dense_row of float, double and
/// std::int64_t, and sparse_row of std::int32_t. A program's tables of these types then cost its
/// files no code; tables of other row types are instantiated where they are added, as in the
/// header-only mode.
#include <cstdint>

#include <strata/core/config.hpp>
#include <strata/table/client_table.hpp>
#include <strata/table/dense_row.hpp>
#include <strata/table/server_table.hpp>
#include <strata/table/sparse_row.hpp>

#if !STRATA_HEADER_ONLY
namespace strata {
extern template class dense_row<float>;
extern template class dense_row<double>;
extern template class dense_row<std::int64_t>;
extern template class sparse_row<std::int32_t>;
extern template class client_table<dense_row<float>>;
extern template class client_table<dense_row<double>>;
extern template class client_table<dense_row<std::int64_t>>;
extern template class client_table<sparse_row<std::int32_t>>;
extern template class server_table<dense_row<float>>;
extern template class server_table<dense_row<double>>;
extern template class server_table<dense_row<std::int64_t>>;
extern template class server_table<sparse_row<std::int32_t>>;
}  // namespace strata
#endif
