#pragma once
/// \file The row concept: what a table row type must offer (increment, merge, encode).
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>

namespace strata {

/// Column index inside a row.
using col_id = std::uint32_t;

/// A row type R stores values of R::value_type, is built with a width, takes commutative increments
/// (`inc(col, v)`, `add(other)`: a row doubles as an aggregated delta), reads `get(col)`, reports
/// `magnitude()` (sum of |value|, for value-bounded consistency), and
/// encodes itself as bytes (`encode` / `R::decode`) for the wire.
///
/// Optional, detected where used: `void add_encoded(byte_reader&)` (add an encoded delta of the
/// row's width in place: the server's apply then builds no temporary row) and `void
/// assign_encoded(byte_reader&)` (replace the values with an encoded row: a cached row is refreshed
/// in place); both must consume exactly one encoded row and leave the row unchanged when they throw.
/// `void zero()` (every value zero, the row's width and storage kept): rows are then recycled in
/// their hash nodes (node_pool.hpp) for later oplog entries, delta rows and held server deltas.
template <class R>
concept row_type = std::default_initializable<R> && std::copyable<R> &&
    requires(R r, const R cr, col_id c, typename R::value_type v, byte_writer& w, byte_reader& rd,
             std::size_t width) {
      typename R::value_type;
      { R(width) };
      { r.inc(c, v) };
      { r.add(cr) };
      { cr.get(c) } -> std::convertible_to<typename R::value_type>;
      { cr.width() } -> std::convertible_to<std::size_t>;
      { cr.empty() } -> std::convertible_to<bool>;
      { cr.magnitude() } -> std::convertible_to<double>;
      { cr.encode(w) };
      { R::decode(rd, width) } -> std::same_as<R>;
    };

namespace detail {
/// The cold half of check_column: builds the message and throws (kept out of line, so that the
/// check itself stays two instructions on the hot path).
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_bad_column(col_id c, std::size_t width) {
  throw error(errc::bad_input, "column " + std::to_string(c) + " is outside a row of width " + std::to_string(width));
}
}  // namespace detail

/// The cold half of check_finite.
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_not_finite(col_id c, double v) {
  throw error(errc::bad_input, "non-finite value " + std::to_string(v) + " in column " + std::to_string(c) +
                                   " (NaN and inf are refused: they would poison the table)");
}

/// For floating-point values: throws `bad_input` naming the column when `v` is NaN or infinite.
/// Row types call it when a server shard checks an incoming delta (skip), so a non-finite
/// increment rejects its whole flush instead of silently poisoning a row.
template <class T>
void check_finite(col_id c, T v) {
  if constexpr (std::is_floating_point_v<T>)
    if (!std::isfinite(v)) [[unlikely]]
      throw_not_finite(c, static_cast<double>(v));
}

/// Throws `bad_input` naming the column and the width when `c` is outside a row of `width` columns.
inline void check_column(col_id c, std::size_t width) {
  if (c >= width) [[unlikely]]
    detail::throw_bad_column(c, width);
}

/// Consumes one encoded row from `in`, checking it as `R::decode` would, without keeping it: a row
/// type may offer a cheaper `static void skip(byte_reader&, std::size_t width)`.
template <row_type R>
void skip_row(byte_reader& in, std::size_t width) {
  if constexpr (requires { R::skip(in, width); }) R::skip(in, width);
  else (void)R::decode(in, width);
}

namespace detail {
/// Checks row_type with a message that says what to write.
template <class R>
constexpr bool check_row_type() {
  static_assert(row_type<R>,
                "strata: a table row type must model strata::row_type: R(width), inc(col, v), add(const R&), "
                "get(col), width(), empty(), magnitude() (sum of |value|), encode(byte_writer&) and static R decode(byte_reader&, width)");
  return true;
}
}  // namespace detail

}  // namespace strata
