#pragma once
/// \file xtensor views of a dense row: `as_xtensor(row)` adapts the row's values in place (no copy)
/// as a 1-D xtensor expression, for element-wise arithmetic, reductions and BLAS-like kernels.
/// Kept out of `dense_row.hpp` so that files which only move rows do not parse xtensor.
#include <array>
#include <cstddef>

#include <xtensor/xadapt.hpp>

#include <strata/table/dense_row.hpp>

namespace strata {

/// A read-only 1-D view of `row`'s values; valid while `row` lives and keeps its width.
template <class T>
auto as_xtensor(const dense_row<T>& row) {
  const std::array<std::size_t, 1> shape{row.width()};
  return xt::adapt(row.span().data(), row.width(), xt::no_ownership(), shape);
}

/// A writable 1-D view of `row`'s values (assigning an expression to it writes the row).
template <class T>
auto as_xtensor(dense_row<T>& row) {
  const std::array<std::size_t, 1> shape{row.width()};
  return xt::adapt(row.mutable_span().data(), row.width(), xt::no_ownership(), shape);
}

}  // namespace strata
