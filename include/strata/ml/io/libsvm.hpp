#pragma once
/// \file Reader for the libsvm / svmlight sparse format: "label index:value index:value ..." per
/// line, indices 1-based and strictly increasing. A '#' starts a comment (svmlight allows one
/// at the end of a line); blank lines are skipped. The result is CSR with 0-based columns.
/// Labels and values must be finite (NaN and inf are refused naming file and line). The largest
/// index sizes per-column state in every solver, so it may be at most max(2^24, 8 × the stored
/// values): one stray index 4000000000 is refused (naming its line and the memory it would
/// take), not turned into four billion columns. A caller that can run fewer columns passes its
/// own cap (`libsvm_cap`): the first line with an index above it is refused as it is read, naming
/// the file, the line and the caller's reason.
#include <strata/core/error.hpp>
#include <strata/core/huge_pages.hpp>
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

/// A labelled sparse design matrix in CSR form (rows = examples), 0-based columns.
struct libsvm_data {
  std::vector<double> labels;               ///< one per row, as written (e.g. +1/-1, or a target)
  std::vector<std::uint64_t> row_offsets{0};///< size rows+1; row i is [row_offsets[i], row_offsets[i+1])
  std::vector<std::uint32_t> indices;       ///< 0-based column of each stored value, increasing within a row
  std::vector<double> values;               ///< the stored values (explicit zeros kept as written)
  std::uint32_t num_features = 0;           ///< 1 + the largest column index (0 when no values)

  /// Number of examples.
  std::size_t num_rows() const noexcept { return labels.size(); }
  /// Number of stored values.
  std::size_t nnz() const noexcept { return indices.size(); }
  /// Column indices of row i.
  std::span<const std::uint32_t> row_indices(std::size_t i) const noexcept {
    return {indices.data() + row_offsets[i], static_cast<std::size_t>(row_offsets[i + 1] - row_offsets[i])};
  }
  /// Values of row i (parallel to row_indices(i)).
  std::span<const double> row_values(std::size_t i) const noexcept {
    return {values.data() + row_offsets[i], static_cast<std::size_t>(row_offsets[i + 1] - row_offsets[i])};
  }
};

/// A caller's own bound on the columns (0: none but the reader's), and why, for the message.
struct libsvm_cap {
  std::uint32_t max_features = 0;
  std::string why;  ///< e.g. "an evaluation sends 8 bytes per column in one message of at most 16777216 bytes"
};

namespace detail {

/// Parses libsvm lines from `lines` (a buffer's or a file's); `name` only labels error messages.
template <class Lines>
libsvm_data parse_libsvm_lines(Lines& lines, std::string_view name, const libsvm_cap& cap = {}) {
  libsvm_data out;
  std::string_view line;
  std::size_t widest_line = 0;  // where the largest index is
  // A file of known size: after its first MiB, the arrays are reserved for the whole file at the
  // density seen so far (+5%), on huge pages, so that a large file is not copied each time they
  // double (a 1.6 GB file: 100M values, 1.2 GB copied again and faulted in 4 KiB pages).
  std::uint64_t bytes_seen = 0, reserve_at = std::uint64_t{1} << 20;
  std::uint64_t file_bytes = 0;
  if constexpr (requires { lines.file_size(); }) file_bytes = lines.file_size();
  while (lines.next(line)) {
    const std::size_t ln = lines.line_number();
    bytes_seen += line.size() + 1;
    if (bytes_seen >= reserve_at && file_bytes > 4 * reserve_at) {
      reserve_at = std::numeric_limits<std::uint64_t>::max();
      const double scale = 1.05 * static_cast<double>(file_bytes) / static_cast<double>(bytes_seen);
      reserve_huge(out.indices, static_cast<std::size_t>(scale * static_cast<double>(out.indices.size())) + 1024);
      reserve_huge(out.values, out.indices.capacity());
      reserve_huge(out.labels, static_cast<std::size_t>(scale * static_cast<double>(out.labels.size())) + 1024);
      reserve_huge(out.row_offsets, out.labels.capacity() + 1);
    }
    if (const auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    fields f(line);
    if (f.at_end()) continue;
    const std::string_view tl = f.next();
    double label = 0;
    if (!parse_float(tl, label)) fail(name, ln, "bad label " + quoted(tl) + " (want a finite number)");
    std::uint32_t prev = 0;  // 1-based; 0 = none yet
    for (std::string_view tok = f.next(); !tok.empty(); tok = f.next()) {
      const auto colon = tok.find(':');
      if (colon == std::string_view::npos) fail(name, ln, "bad feature " + quoted(tok) + " (want index:value)");
      const std::string_view ti = tok.substr(0, colon), tv = tok.substr(colon + 1);
      std::uint32_t idx = 0;
      // Capped one below the maximum so that num_features = idx cannot overflow.
      if (!parse_uint(ti, idx) || idx == 0 || idx == std::numeric_limits<std::uint32_t>::max())
        fail(name, ln, "bad feature index " + quoted(ti) + " (want an integer >= 1)");
      if (cap.max_features > 0 && idx > cap.max_features)
        refuse(name, ln, "feature index " + std::string(ti) + " is over the limit of " + std::to_string(cap.max_features) +
                             " columns" + (cap.why.empty() ? std::string() : " (" + cap.why + ")"));
      if (idx <= prev)
        fail(name, ln, "feature index " + std::string(ti) + " not above the previous " + std::to_string(prev) +
                           " (want strictly increasing indices)");
      double v = 0;
      if (!parse_float(tv, v)) fail(name, ln, "bad value " + quoted(tv) + " for feature " + std::string(ti));
      prev = idx;
      out.indices.push_back(idx - 1);
      out.values.push_back(v);
    }
    if (prev > out.num_features) out.num_features = prev, widest_line = ln;
    out.labels.push_back(label);
    out.row_offsets.push_back(out.indices.size());
  }
  lines.verify_end();
  const std::uint64_t max_features = std::max<std::uint64_t>(std::uint64_t{1} << 24, 8 * std::uint64_t{out.nnz()});
  if (out.num_features > max_features)
    refuse(name, widest_line, "feature index " + std::to_string(out.num_features) + " would make that many columns for " +
                                std::to_string(out.nnz()) + " stored values (at least " +
                                std::to_string((std::uint64_t{out.num_features} * 16) >> 20) +
                                " MiB of per-column state; the limit is max(2^24, 8 x stored values)): number the features densely");
  return out;
}

/// Parses a whole libsvm buffer; `name` only labels error messages.
inline libsvm_data parse_libsvm(std::string_view text, std::string_view name, const libsvm_cap& cap = {}) {
  buffer_lines lines(text);
  return parse_libsvm_lines(lines, name, cap);
}

}  // namespace detail

/// Reads a libsvm stream; `name` labels errors. Throws strata::error(bad_input, "name:line: ...").
inline libsvm_data read_libsvm(std::istream& in, std::string_view name) {
  const std::string text = detail::slurp(in, name);
  return detail::parse_libsvm(text, name);
}

/// Reads a libsvm file. Throws strata::error (bad_input or refused naming file:line, or the OS
/// code if it cannot open).
inline libsvm_data read_libsvm(const std::filesystem::path& file, const libsvm_cap& cap = {}) {
  detail::file_lines lines(file);
  return detail::parse_libsvm_lines(lines, file.string(), cap);
}

/// Reads a libsvm stream; on error returns an empty result and sets `ec`.
inline libsvm_data read_libsvm(std::istream& in, std::string_view name, std::error_code& ec) {
  return detail::catch_into(ec, [&] { return read_libsvm(in, name); });
}

/// Reads a libsvm file; on error returns an empty result and sets `ec`.
inline libsvm_data read_libsvm(const std::filesystem::path& file, std::error_code& ec) {
  return detail::catch_into(ec, [&] { return read_libsvm(file); });
}

}  // namespace strata::ml::io
