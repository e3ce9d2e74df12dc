#pragma once
/// \file Reader for rating triples, one "user item rating" per line (as scripts/fetch_data.sh
/// writes MovieLens): dense 0-based integer ids and a finite rating. Blank lines and lines
/// starting with '#' are skipped; anything else that is not exactly three fields is an error.
#include <strata/core/error.hpp>
#include <strata/ml/io/detail/line_reader.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <istream>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace strata::ml::io {

/// One observed entry of the rating matrix.
struct rating {
  std::uint32_t user = 0;  ///< 0-based row (user) id
  std::uint32_t item = 0;  ///< 0-based column (item) id
  float value = 0;         ///< the rating
};

/// A list of ratings plus the matrix shape they imply.
struct rating_set {
  std::vector<rating> ratings;  ///< in file order
  std::uint32_t num_users = 0;  ///< 1 + the largest user id (0 when empty)
  std::uint32_t num_items = 0;  ///< 1 + the largest item id (0 when empty)

  /// Number of ratings.
  std::size_t size() const noexcept { return ratings.size(); }
  /// True when there are no ratings.
  bool empty() const noexcept { return ratings.empty(); }
  /// Mean rating (0 when empty): the global-mean baseline predictor.
  double mean() const noexcept {
    double s = 0;
    for (const auto& r : ratings) s += r.value;
    return ratings.empty() ? 0.0 : s / static_cast<double>(ratings.size());
  }
};

namespace detail {
/// Parses a whole buffer; `name` only labels error messages.
inline rating_set parse_ratings(std::string_view text, std::string_view name) {
  using io::detail::fail;
  using io::detail::quoted;
  rating_set out;
  // Lines are at least 6 bytes ("0 0 1\n"): a cheap upper bound that avoids regrowth.
  out.ratings.reserve(text.size() / 6 + 1);
  io::detail::line_cursor lines(text);
  std::string_view line;
  // Ids are capped one below the maximum so that num_users = max + 1 cannot wrap to 0.
  constexpr std::uint32_t max_id = std::numeric_limits<std::uint32_t>::max() - 1;
  while (lines.next(line)) {
    const std::size_t ln = lines.line_number();
    io::detail::fields f(line);
    if (f.at_end() || f.rest().front() == '#') continue;
    rating r;
    const std::string_view tu = f.next(), ti = f.next(), tv = f.next();
    if (!io::detail::parse_uint(tu, r.user) || r.user > max_id)
      fail(name, ln, "bad user id " + quoted(tu) + " (want an integer in [0, 2^32-2])");
    if (ti.empty()) fail(name, ln, "missing item id (want \"user item rating\")");
    if (!io::detail::parse_uint(ti, r.item) || r.item > max_id)
      fail(name, ln, "bad item id " + quoted(ti) + " (want an integer in [0, 2^32-2])");
    if (tv.empty()) fail(name, ln, "missing rating (want \"user item rating\")");
    if (!io::detail::parse_float(tv, r.value)) fail(name, ln, "bad rating " + quoted(tv) + " (want a finite number)");
    if (!f.at_end()) fail(name, ln, "trailing text " + quoted(f.rest()) + " after the rating");
    out.num_users = std::max(out.num_users, r.user + 1);
    out.num_items = std::max(out.num_items, r.item + 1);
    out.ratings.push_back(r);
  }
  out.ratings.shrink_to_fit();
  return out;
}
}  // namespace detail

/// Reads ratings from a stream; `name` labels errors. Throws strata::error(bad_input, "name:line: ...").
inline rating_set read_ratings(std::istream& in, std::string_view name) {
  const std::string text = io::detail::slurp(in, name);
  return detail::parse_ratings(text, name);
}

/// Reads ratings from a file. Throws strata::error: bad_input for a malformed line, or the OS
/// error code when the file cannot be opened.
inline rating_set read_ratings(const std::filesystem::path& file) {
  const std::string text = io::detail::slurp_file(file);
  return detail::parse_ratings(text, file.string());
}

/// Reads ratings from a stream; on error returns an empty set and sets `ec` instead of throwing.
inline rating_set read_ratings(std::istream& in, std::string_view name, std::error_code& ec) {
  return io::detail::catch_into(ec, [&] { return read_ratings(in, name); });
}

/// Reads ratings from a file; on error returns an empty set and sets `ec` instead of throwing.
inline rating_set read_ratings(const std::filesystem::path& file, std::error_code& ec) {
  return io::detail::catch_into(ec, [&] { return read_ratings(file); });
}

}  // namespace strata::ml::io
