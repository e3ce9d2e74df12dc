#pragma once
/// \file Reader for rating triples, one "user item rating" per line (as scripts/fetch_data.sh
/// writes MovieLens): non-negative integer ids (any up to 2^64-1) and a finite rating. Blank lines
/// and lines starting with '#' are skipped; anything else that is not exactly three fields is an
/// error naming the file and line.
///
/// Ids are remapped to dense 0-based indices in increasing order of the original id (the rank
/// of the id among the file's distinct ids), so memory follows the number of distinct users and
/// items, never the largest id: one user id 4000000000 costs one row, not four billion. Data
/// whose ids are already 0..n-1 keeps them (`user_ids` / `item_ids` stay empty: the identity).
/// Sets read separately (train and test) are put into one id space with `share_ids`, which
/// a trainer requires when they differ.
#include <strata/core/error.hpp>
#include <strata/ml/io/detail/line_reader.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <istream>
#include <limits>
#include <span>
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
  std::vector<rating> ratings;  ///< in file order, with dense 0-based ids
  std::uint32_t num_users = 0;  ///< 1 + the largest dense user index (0 when empty)
  std::uint32_t num_items = 0;  ///< 1 + the largest dense item index (0 when empty)
  /// The original id of each dense user index, increasing; empty when the ids are the indices
  /// (the identity: data that was dense already, or a set built by hand).
  std::vector<std::uint64_t> user_ids;
  std::vector<std::uint64_t> item_ids;  ///< the same for items

  /// The original id of dense user index u (of item index i).
  std::uint64_t user_id(std::uint32_t u) const noexcept { return user_ids.empty() ? u : user_ids[u]; }
  std::uint64_t item_id(std::uint32_t i) const noexcept { return item_ids.empty() ? i : item_ids[i]; }
  /// True when some id differs from its index (the file's ids were sparse).
  bool remapped() const noexcept { return !user_ids.empty() || !item_ids.empty(); }

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
/// Sorts and deduplicates ids.
inline void sort_unique(std::vector<std::uint64_t>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}
/// The dense index of `id` in the sorted list `ids` (which holds it).
inline std::uint32_t index_in(const std::vector<std::uint64_t>& ids, std::uint64_t id) noexcept {
  return static_cast<std::uint32_t>(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin());
}
/// Empties a sorted distinct id list that is the identity 0..n-1 (the "no remapping" form).
inline void drop_identity(std::vector<std::uint64_t>& ids) noexcept {
  if (!ids.empty() && ids.back() == ids.size() - 1) ids.clear();
}
/// The sorted distinct ids a set uses (materialising the identity).
inline std::vector<std::uint64_t> ids_or_identity(const std::vector<std::uint64_t>& ids, std::uint32_t n) {
  if (!ids.empty()) return ids;
  std::vector<std::uint64_t> out(n);
  for (std::uint32_t k = 0; k < n; ++k) out[k] = k;
  return out;
}

/// The sorted distinct ids among `n` values read by `get(k)`. When the largest id is small enough
/// for a table of 4 bytes per possible id (all the data sets here), `dense` comes back as that
/// table (id -> index) and nothing per value is allocated; else `dense` is empty and the caller
/// looks indices up in the list. Ids 0..n-1 all present come back as the identity (an empty list).
template <class Get>
std::vector<std::uint64_t> distinct_ids(std::size_t n, std::uint64_t max_id, Get get, std::vector<std::uint32_t>& dense) {
  std::vector<std::uint64_t> ids;
  dense.clear();
  if (n == 0) return ids;
  if (max_id < 4 * std::uint64_t{n} + (std::uint64_t{1} << 20)) {
    dense.assign(static_cast<std::size_t>(max_id) + 1, 0);
    for (std::size_t k = 0; k < n; ++k) dense[static_cast<std::size_t>(get(k))] = 1;
    std::uint32_t next = 0;
    for (std::size_t id = 0; id < dense.size(); ++id)
      if (dense[id]) dense[id] = next++, ids.push_back(id);  // marks become indices in id order
    if (next == dense.size()) dense.clear(), ids.clear();   // every id from 0 to the largest: the identity
    ids.shrink_to_fit();
    return ids;
  }
  ids.reserve(n);
  for (std::size_t k = 0; k < n; ++k) ids.push_back(get(k));
  sort_unique(ids);
  ids.shrink_to_fit();
  return ids;
}

/// Parses "user item rating" lines from `lines` (a line_cursor over a buffer or a file_lines over
/// a file); `name` only labels error messages. Ids that fit in 32 bits (all data sets here) are
/// kept in the result's own array as read and remapped in place, so the ratings take 12 bytes
/// each and nothing else per rating; a file with a wider id switches to 24-byte records.
template <class Lines>
rating_set parse_ratings_lines(Lines& lines, std::string_view name, std::uint64_t size_bytes) {
  using io::detail::fail;
  using io::detail::quoted;
  struct raw {
    std::uint64_t user, item;
    float value;
  };
  rating_set out;
  std::vector<raw> wide;  // used once an id passes 2^32-1
  // Lines are at least 6 bytes ("0 0 1\n"): an upper bound that avoids regrowth (address space
  // only: pages never written are never resident).
  out.ratings.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(size_bytes / 6 + 1, std::uint64_t{1} << 32)));
  std::uint64_t max_user = 0, max_item = 0;
  std::string_view line;
  while (lines.next(line)) {
    const std::size_t ln = lines.line_number();
    io::detail::fields f(line);
    if (f.at_end() || f.rest().front() == '#') continue;
    raw r{};
    const std::string_view tu = f.next(), ti = f.next(), tv = f.next();
    if (!io::detail::parse_uint(tu, r.user)) fail(name, ln, "bad user id " + quoted(tu) + " (want an integer in [0, 2^64-1])");
    if (ti.empty()) fail(name, ln, "missing item id (want \"user item rating\")");
    if (!io::detail::parse_uint(ti, r.item)) fail(name, ln, "bad item id " + quoted(ti) + " (want an integer in [0, 2^64-1])");
    if (tv.empty()) fail(name, ln, "missing rating (want \"user item rating\")");
    if (!io::detail::parse_float(tv, r.value)) fail(name, ln, "bad rating " + quoted(tv) + " (want a finite number)");
    if (!f.at_end()) fail(name, ln, "trailing text " + quoted(f.rest()) + " after the rating");
    max_user = std::max(max_user, r.user), max_item = std::max(max_item, r.item);
    if (wide.empty() && std::max(max_user, max_item) <= std::numeric_limits<std::uint32_t>::max()) {
      out.ratings.push_back({static_cast<std::uint32_t>(r.user), static_cast<std::uint32_t>(r.item), r.value});
      continue;
    }
    if (wide.empty()) {  // the first wide id: move what was read to 24-byte records
      wide.reserve(out.ratings.size() + 1);
      for (const auto& n : out.ratings) wide.push_back({n.user, n.item, n.value});
      out.ratings = {};
    }
    wide.push_back(r);
  }
  lines.verify_end();
  const std::size_t n = wide.empty() ? out.ratings.size() : wide.size();
  if (n > std::numeric_limits<std::uint32_t>::max()) refuse(name, lines.line_number(), "more than 2^32-1 ratings in one file");
  std::vector<std::uint32_t> udense, idense;
  if (wide.empty()) {
    out.user_ids = distinct_ids(n, max_user, [&](std::size_t k) -> std::uint64_t { return out.ratings[k].user; }, udense);
    out.item_ids = distinct_ids(n, max_item, [&](std::size_t k) -> std::uint64_t { return out.ratings[k].item; }, idense);
  } else {
    out.user_ids = distinct_ids(n, max_user, [&](std::size_t k) { return wide[k].user; }, udense);
    out.item_ids = distinct_ids(n, max_item, [&](std::size_t k) { return wide[k].item; }, idense);
    out.ratings.resize(n);
  }
  const auto index = [](const std::vector<std::uint64_t>& ids, const std::vector<std::uint32_t>& dense, std::uint64_t id) {
    if (ids.empty()) return static_cast<std::uint32_t>(id);  // the identity
    return dense.empty() ? index_in(ids, id) : dense[static_cast<std::size_t>(id)];
  };
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t u = wide.empty() ? out.ratings[k].user : wide[k].user;
    const std::uint64_t i = wide.empty() ? out.ratings[k].item : wide[k].item;
    const float v = wide.empty() ? out.ratings[k].value : wide[k].value;
    out.ratings[k] = {index(out.user_ids, udense, u), index(out.item_ids, idense, i), v};
  }
  out.num_users = n == 0 ? 0 : static_cast<std::uint32_t>(out.user_ids.empty() ? max_user + 1 : out.user_ids.size());
  out.num_items = n == 0 ? 0 : static_cast<std::uint32_t>(out.item_ids.empty() ? max_item + 1 : out.item_ids.size());
  return out;
}

/// Parses a whole buffer; `name` only labels error messages.
inline rating_set parse_ratings(std::string_view text, std::string_view name) {
  io::detail::buffer_lines lines(text);
  return parse_ratings_lines(lines, name, text.size());
}
}  // namespace detail

/// Puts rating sets read separately (train, test) into one id space: the sorted union of their
/// original ids and of `extra_users` / `extra_items` (e.g. a saved model's, so that its rows
/// keep their ids), re-indexing every set's ratings. Afterwards every set has the same
/// num_users, num_items, user_ids and item_ids, and a dense index means the same user everywhere.
inline void share_ids(std::span<rating_set* const> sets, std::span<const std::uint64_t> extra_users = {},
                      std::span<const std::uint64_t> extra_items = {}) {
  std::vector<std::uint64_t> users(extra_users.begin(), extra_users.end()), items(extra_items.begin(), extra_items.end());
  for (const rating_set* s : sets) {
    const auto u = detail::ids_or_identity(s->user_ids, s->num_users), i = detail::ids_or_identity(s->item_ids, s->num_items);
    users.insert(users.end(), u.begin(), u.end());
    items.insert(items.end(), i.begin(), i.end());
  }
  detail::sort_unique(users);
  detail::sort_unique(items);
  // The new index of each set's old one, as a table per set (a lookup per rating in the union
  // costs seconds on 100M ratings); a set whose table is the identity is left as it is.
  const auto remap = [](const rating_set& s, const std::vector<std::uint64_t>& ids, std::uint32_t n, bool user) {
    std::vector<std::uint32_t> to(n);
    bool same = true;
    for (std::uint32_t k = 0; k < n; ++k) {
      to[k] = detail::index_in(ids, user ? s.user_id(k) : s.item_id(k));
      same = same && to[k] == k;
    }
    if (same) to.clear();
    return to;
  };
  for (rating_set* s : sets) {
    const auto tu = remap(*s, users, s->num_users, true), ti = remap(*s, items, s->num_items, false);
    if (!tu.empty() || !ti.empty())
      for (auto& r : s->ratings) {
        if (!tu.empty()) r.user = tu[r.user];
        if (!ti.empty()) r.item = ti[r.item];
      }
    s->num_users = static_cast<std::uint32_t>(users.size());
    s->num_items = static_cast<std::uint32_t>(items.size());
  }
  detail::drop_identity(users);
  detail::drop_identity(items);
  for (rating_set* s : sets) s->user_ids = users, s->item_ids = items;
}

/// share_ids for a training and a test set.
inline void share_ids(rating_set& train, rating_set& test, std::span<const std::uint64_t> extra_users = {},
                      std::span<const std::uint64_t> extra_items = {}) {
  rating_set* sets[] = {&train, &test};
  share_ids(sets, extra_users, extra_items);
}

/// Reads ratings from a stream; `name` labels errors. Throws strata::error(bad_input, "name:line: ...").
inline rating_set read_ratings(std::istream& in, std::string_view name) {
  const std::string text = io::detail::slurp(in, name);
  return detail::parse_ratings(text, name);
}

/// Reads ratings from a file. Throws strata::error: bad_input for a malformed line, or the OS
/// error code when the file cannot be opened.
inline rating_set read_ratings(const std::filesystem::path& file) {
  io::detail::file_lines lines(file);
  return detail::parse_ratings_lines(lines, file.string(), lines.file_size());
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
