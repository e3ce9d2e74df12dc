#pragma once
/// \file The biased matrix-factorisation model the distributed MF trainer learns
/// (trainers/mf_trainer.hpp), its text file format, and rating prediction for (user, item) pairs.
///
/// Model: r̂_ui = μ + b_u + b_i + u·v. File format (text, one record per line, fields separated by
/// blanks; blank lines and lines starting with '#' are skipped):
///
///     strata_mf_model 1 rank R users U items I mean μ
///     user 0 b_0 u_0,0 ... u_0,R-1
///     ...                              (U lines, ids increasing: 0..U-1 for dense data)
///     item 0 b_0 v_0,0 ... v_0,R-1
///     ...                              (I lines, ids increasing: 0..I-1 for dense data)
///
/// The ids are the data's original ids (io::rating_set remaps sparse ids to dense indices for
/// training; the model keeps the originals in `user_ids` / `item_ids`, so a saved model, --load
/// and predictions all speak the ids of the user's files).
///
/// The first record is the header (format version 1). Numbers are written in the shortest form
/// that reads back to the same float, so a saved and reloaded model predicts exactly the same
/// ratings. A malformed file throws strata::error(bad_input, "FILE:LINE: what").
///
/// Predictions file (`write_predictions`): one "user item predicted_rating" line per pair, in the
/// order of the pairs read by `read_pairs` (lines "user item", further fields such as a rating
/// ignored, so a ratings file can be given as it is).
#include <strata/core/atomic_file.hpp>
#include <strata/core/error.hpp>
#include <strata/ml/io/detail/line_reader.hpp>
#include <strata/ml/io/ratings.hpp>
#include <strata/ml/mf.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <ostream>
#include <sstream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::ml {

/// Factors and biases of biased MF. Each row holds the rank factors, then the bias (the layout
/// of the trainer's parameter-server rows).
struct mf_biased_model {
  std::uint32_t rank = 0;       ///< factor width
  std::uint32_t num_users = 0;  ///< user rows
  std::uint32_t num_items = 0;  ///< item rows
  float mean = 0;               ///< μ, the training mean
  std::vector<float> users;     ///< num_users × (rank + 1): u_0..u_{R-1}, b_u
  std::vector<float> items;     ///< num_items × (rank + 1): v_0..v_{R-1}, b_i
  std::vector<std::uint64_t> user_ids;  ///< original id of each user row, increasing; empty: row u is id u
  std::vector<std::uint64_t> item_ids;  ///< original id of each item row, increasing; empty: row i is id i

  std::size_t width() const noexcept { return std::size_t{rank} + 1; }
  /// User u's row (factors then bias).
  std::span<const float> user(std::uint32_t u) const noexcept { return {users.data() + u * width(), width()}; }
  std::span<float> user(std::uint32_t u) noexcept { return {users.data() + u * width(), width()}; }
  /// Item i's row (factors then bias).
  std::span<const float> item(std::uint32_t i) const noexcept { return {items.data() + i * width(), width()}; }
  std::span<float> item(std::uint32_t i) noexcept { return {items.data() + i * width(), width()}; }
  /// An all-zero model of the given shape.
  static mf_biased_model zeros(std::uint32_t rank, std::uint32_t num_users, std::uint32_t num_items, float mean) {
    mf_biased_model m;
    m.rank = rank;
    m.num_users = num_users;
    m.num_items = num_items;
    m.mean = mean;
    m.users.assign(num_users * m.width(), 0.0f);
    m.items.assign(num_items * m.width(), 0.0f);
    return m;
  }

  /// The original id of user row u (of item row i).
  std::uint64_t user_id(std::uint32_t u) const noexcept { return user_ids.empty() ? u : user_ids[u]; }
  std::uint64_t item_id(std::uint32_t i) const noexcept { return item_ids.empty() ? i : item_ids[i]; }
  /// The row of original user id `id` (of item id `id`), or num_users (num_items) when the model has none.
  std::uint32_t user_row(std::uint64_t id) const noexcept { return row_of(user_ids, num_users, id); }
  std::uint32_t item_row(std::uint64_t id) const noexcept { return row_of(item_ids, num_items, id); }
  /// The prediction for original ids (a user or item the model lacks counts as an all-zero row).
  float predict_ids(std::uint64_t u, std::uint64_t i) const noexcept { return predict(user_row(u), item_row(i)); }

  /// μ + b_u + b_i + u·v for rows u and i, in the trainer's float arithmetic (the same figure its RMSE uses). A user
  /// or item beyond the model counts as an all-zero row (no bias, no factors).
  float predict(std::uint32_t u, std::uint32_t i) const noexcept {
    const bool hu = u < num_users, hi = i < num_items;
    const float bu = hu ? user(u)[rank] : 0.0f, bi = hi ? item(i)[rank] : 0.0f;
    const float dot = hu && hi ? mf_dot(user(u).data(), item(i).data(), rank) : 0.0f;
    return mean + bu + bi + dot;
  }
  /// Test RMSE as the trainer computes it (0 for no ratings).
  double rmse(std::span<const io::rating> ratings) const noexcept {
    if (ratings.empty()) return 0;
    double s = 0;
    for (const auto& r : ratings) {
      const double e = r.value - predict(r.user, r.item);
      s += e * e;
    }
    return std::sqrt(s / static_cast<double>(ratings.size()));
  }
  bool operator==(const mf_biased_model&) const = default;

 private:
  static std::uint32_t row_of(const std::vector<std::uint64_t>& ids, std::uint32_t n, std::uint64_t id) noexcept {
    if (ids.empty()) return id < n ? static_cast<std::uint32_t>(id) : n;
    const auto it = std::lower_bound(ids.begin(), ids.end(), id);
    return it != ids.end() && *it == id ? static_cast<std::uint32_t>(it - ids.begin()) : n;
  }
};

namespace detail {
/// The shortest text that reads back to the same float.
inline void append_float(std::string& out, float x) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  out.append(buf, r.ptr);
}
}  // namespace detail

/// Writes the model in the text format above. Throws strata::error when the stream fails.
inline void write_mf_model(std::ostream& out, const mf_biased_model& m) {
  std::string line = "# strata_mf model: r = mean + user bias + item bias + user factors . item factors\n";
  line += "strata_mf_model 1 rank " + std::to_string(m.rank) + " users " + std::to_string(m.num_users) + " items " +
          std::to_string(m.num_items) + " mean ";
  detail::append_float(line, m.mean);
  line += '\n';
  out << line;
  auto rows = [&](const char* kind, std::uint32_t n, auto row_of, auto id_of) {
    for (std::uint32_t e = 0; e < n; ++e) {
      const std::span<const float> r = row_of(e);
      line = kind;
      line += ' ';
      line += std::to_string(id_of(e));
      line += ' ';
      detail::append_float(line, r[m.rank]);
      for (std::uint32_t c = 0; c < m.rank; ++c) {
        line += ' ';
        detail::append_float(line, r[c]);
      }
      line += '\n';
      out << line;
    }
  };
  rows("user", m.num_users, [&](std::uint32_t u) { return m.user(u); }, [&](std::uint32_t u) { return m.user_id(u); });
  rows("item", m.num_items, [&](std::uint32_t i) { return m.item(i); }, [&](std::uint32_t i) { return m.item_id(i); });
  if (!out) throw strata::error(std::make_error_code(std::errc::io_error), "write_mf_model: write failed");
}

/// Writes the model to a file atomically (core/atomic_file.hpp: a failed write leaves the previous
/// file whole). Throws strata::error naming the file and the reason when it cannot be written.
inline void write_mf_model(const std::filesystem::path& file, const mf_biased_model& m) {
  std::ostringstream text;
  write_mf_model(text, m);
  write_file_atomic(file, text.view());
}

namespace detail {
/// Parses a model text; `name` labels errors.
inline mf_biased_model parse_mf_model(std::string_view text, std::string_view name) {
  using io::detail::fail;
  io::detail::line_cursor lines(text);
  std::string_view line;
  auto next_record = [&](io::detail::fields& f) {
    while (lines.next(line)) {
      f = io::detail::fields(line);
      if (!f.at_end() && f.rest().front() != '#') return true;
    }
    return false;
  };
  io::detail::fields f(line);
  if (!next_record(f)) fail(name, lines.line_number() + 1, "empty model file (want a 'strata_mf_model 1 ...' header)");
  const std::size_t hl = lines.line_number();
  if (f.next() != "strata_mf_model") fail(name, hl, "not an MF model (want a 'strata_mf_model 1 ...' header)");
  if (f.next() != "1") fail(name, hl, "unsupported model format version (want 1)");
  mf_biased_model m;
  auto keyed_uint = [&](std::string_view key, std::uint32_t& v, std::uint32_t max) {
    const auto k = f.next(), t = f.next();
    if (k != key || !io::detail::parse_uint(t, v) || v > max)
      fail(name, hl, "bad header: want '" + std::string(key) + " N' with N an integer up to " + std::to_string(max) +
                         ", got " + io::detail::quoted(std::string(k) + " " + std::string(t)));
  };
  keyed_uint("rank", m.rank, 1u << 16);
  keyed_uint("users", m.num_users, std::numeric_limits<std::uint32_t>::max() - 1);
  keyed_uint("items", m.num_items, std::numeric_limits<std::uint32_t>::max() - 1);
  {
    const auto k = f.next(), t = f.next();
    if (k != "mean" || !io::detail::parse_float(t, m.mean)) fail(name, hl, "bad header: want 'mean X' with X a finite number");
  }
  if (!f.at_end()) fail(name, hl, "trailing text " + io::detail::quoted(f.rest()) + " in the header");
  // Guard the allocation against a header that promises more rows than the file could hold.
  const std::size_t min_line = 2 * m.width() + 6;
  if ((std::size_t{m.num_users} + m.num_items) * min_line > text.size() + min_line)
    fail(name, hl, "the header promises " + std::to_string(m.num_users) + " users and " + std::to_string(m.num_items) +
                       " items, more than the file holds");
  m.users.assign(m.num_users * m.width(), 0.0f);
  m.items.assign(m.num_items * m.width(), 0.0f);
  auto rows = [&](std::string_view kind, std::uint32_t n, std::vector<float>& out, std::vector<std::uint64_t>& ids) {
    ids.reserve(n);
    for (std::uint32_t e = 0; e < n; ++e) {
      if (!next_record(f))
        fail(name, lines.line_number() + 1, "missing " + std::string(kind) + " " + std::to_string(e) + " (the header says " +
                                                std::to_string(n) + ")");
      const std::size_t ln = lines.line_number();
      const auto k = f.next(), t = f.next();
      std::uint64_t id = 0;
      if (k != kind || !io::detail::parse_uint(t, id))
        fail(name, ln, "want '" + std::string(kind) + " ID ...', got " + io::detail::quoted(line));
      if (e > 0 && id <= ids.back())
        fail(name, ln, std::string(kind) + " id " + std::to_string(id) + " not above the previous " + std::to_string(ids.back()) +
                           " (want increasing ids)");
      ids.push_back(id);
      float* r = out.data() + std::size_t{e} * m.width();
      for (std::uint32_t c = 0; c <= m.rank; ++c) {
        const auto v = f.next();
        if (v.empty()) fail(name, ln, "too few numbers (want a bias and " + std::to_string(m.rank) + " factors)");
        float x = 0;
        if (!io::detail::parse_float(v, x)) fail(name, ln, "bad number " + io::detail::quoted(v) + " (want a finite number)");
        r[c == 0 ? m.rank : c - 1] = x;  // the file has the bias first
      }
      if (!f.at_end()) fail(name, ln, "too many numbers (want a bias and " + std::to_string(m.rank) + " factors)");
    }
  };
  rows("user", m.num_users, m.users, m.user_ids);
  rows("item", m.num_items, m.items, m.item_ids);
  io::detail::drop_identity(m.user_ids);
  io::detail::drop_identity(m.item_ids);
  if (next_record(f)) fail(name, lines.line_number(), "unexpected line after the last item " + io::detail::quoted(line));
  return m;
}
}  // namespace detail

/// Reads a model file. Throws strata::error: bad_input "FILE:LINE: what" for a malformed file,
/// the OS error when it cannot be opened.
inline mf_biased_model read_mf_model(const std::filesystem::path& file) {
  const std::string text = io::detail::slurp_file(file);
  return detail::parse_mf_model(text, file.string());
}
/// Reads a model from a stream; `name` labels errors.
inline mf_biased_model read_mf_model(std::istream& in, std::string_view name) {
  const std::string text = io::detail::slurp(in, name);
  return detail::parse_mf_model(text, name);
}

/// Reads "user item" pairs of original ids, one per line (further fields ignored; blank and '#'
/// lines skipped). Throws strata::error(bad_input, "FILE:LINE: what") on a malformed line.
inline std::vector<std::pair<std::uint64_t, std::uint64_t>> read_pairs(const std::filesystem::path& file) {
  const std::string text = io::detail::slurp_file(file);
  const std::string name = file.string();
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  io::detail::line_cursor lines(text);
  std::string_view line;
  while (lines.next(line)) {
    io::detail::fields f(line);
    if (f.at_end() || f.rest().front() == '#') continue;
    const auto tu = f.next(), ti = f.next();
    std::uint64_t u = 0, i = 0;
    if (!io::detail::parse_uint(tu, u)) io::detail::fail(name, lines.line_number(), "bad user id " + io::detail::quoted(tu));
    if (!io::detail::parse_uint(ti, i))
      io::detail::fail(name, lines.line_number(), ti.empty() ? std::string("missing item id (want \"user item\")")
                                                             : "bad item id " + io::detail::quoted(ti));
    out.emplace_back(u, i);
  }
  return out;
}

/// Writes "user item predicted_rating" for every pair of original ids (the prediction in the
/// shortest form that reads back to the same float), atomically. Throws strata::error naming the
/// file and the reason when it cannot be written.
inline void write_predictions(const std::filesystem::path& file, const mf_biased_model& m,
                              std::span<const std::pair<std::uint64_t, std::uint64_t>> pairs) {
  std::string text, line;
  for (auto [u, i] : pairs) {
    line = std::to_string(u) + ' ' + std::to_string(i) + ' ';
    detail::append_float(line, m.predict_ids(u, i));
    line += '\n';
    text += line;
  }
  write_file_atomic(file, text);  // a failed write leaves the previous file whole
}

}  // namespace strata::ml
