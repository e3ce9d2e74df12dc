#pragma once
/// \file Reader for the UCI bag-of-words format (docword.*.txt): three header lines D, W, NNZ,
/// then NNZ lines "doc word count" with 1-based ids, sorted by doc and then word as the UCI
/// files and scripts/fetch_data.sh write them. Also readers for the one-entry-per-line vocab and
/// label files that go with it. Results are 0-based.
///
/// Sizes in the file never become unbounded allocations. The header's D and W size per-document
/// and per-word arrays, so each must be at most max(2^20, the file's size in bytes) (a file
/// cannot describe more non-empty documents or words than it has bytes). The counts are
/// expanded into one topic assignment per token by LDA (4 bytes each, plus the sampler's
/// tables), so their sum may not pass `max_tokens` (`default_max_tokens` = 2^30, about 4 GiB of
/// assignments; strata_lda --max-tokens raises it): the line that passes it is refused with the
/// memory the corpus would need.
#include <strata/core/error.hpp>
#include <strata/ml/io/detail/line_reader.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <istream>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace strata::ml::io {

/// The most tokens (sum of the counts) a bag of words may hold unless the caller passes more.
inline constexpr std::uint64_t default_max_tokens = std::uint64_t{1} << 30;

/// A document-term count matrix in CSR form (rows = documents), with 0-based ids.
struct bag_of_words {
  std::uint32_t num_docs = 0;               ///< D from the header
  std::uint32_t num_words = 0;              ///< W (vocabulary size) from the header
  std::vector<std::uint64_t> doc_offsets;   ///< size D+1; doc d's entries are [doc_offsets[d], doc_offsets[d+1])
  std::vector<std::uint32_t> word_ids;      ///< 0-based word of each entry, increasing within a doc
  std::vector<std::uint32_t> counts;        ///< occurrences of that word in that doc (≥ 1)

  /// Number of non-zero entries.
  std::size_t nnz() const noexcept { return word_ids.size(); }
  /// Total number of tokens (sum of all counts).
  std::uint64_t num_tokens() const noexcept {
    std::uint64_t n = 0;
    for (auto c : counts) n += c;
    return n;
  }
  /// The word ids of document d's entries.
  std::span<const std::uint32_t> doc_words(std::uint32_t d) const noexcept {
    return {word_ids.data() + doc_offsets[d], static_cast<std::size_t>(doc_offsets[d + 1] - doc_offsets[d])};
  }
  /// The counts of document d's entries (parallel to doc_words(d)).
  std::span<const std::uint32_t> doc_counts(std::uint32_t d) const noexcept {
    return {counts.data() + doc_offsets[d], static_cast<std::size_t>(doc_offsets[d + 1] - doc_offsets[d])};
  }
  /// Expands the counts into one token list per document (word w repeated count times, in word
  /// order): the input LDA's Gibbs samplers want, since they assign a topic to every token.
  std::vector<std::vector<std::uint32_t>> token_lists() const {
    std::vector<std::vector<std::uint32_t>> docs(num_docs);
    for (std::uint32_t d = 0; d < num_docs; ++d) {
      const auto w = doc_words(d);
      const auto c = doc_counts(d);
      std::uint64_t n = 0;
      for (auto x : c) n += x;
      docs[d].reserve(n);
      for (std::size_t i = 0; i < w.size(); ++i) docs[d].insert(docs[d].end(), c[i], w[i]);
    }
    return docs;
  }
};

namespace detail {

/// Reads one header line that must hold exactly one integer, at most `max`.
template <class Lines>
std::uint32_t bow_header(Lines& lines, std::string_view name, const char* what, std::uint64_t max) {
  std::string_view line;
  if (!lines.next(line)) fail(name, lines.line_number() + 1, std::string("missing header line ") + what);
  fields f(line);
  const std::string_view tok = f.next();
  std::uint32_t v = 0;
  if (!parse_uint(tok, v) || !f.at_end())
    fail(name, lines.line_number(), std::string("bad header ") + what + " " + quoted(line) + " (want one integer)");
  if (v > max)
    fail(name, lines.line_number(), std::string("header ") + what + " " + std::to_string(v) + " is more than this " +
                                        "file could describe (at most " + std::to_string(max) + "; it would need " +
                                        std::to_string((std::uint64_t{v} * 8) >> 20) + " MiB of offsets)");
  return v;
}

/// Parses docword lines from `lines` (a buffer's or a file's, of `size_bytes` in all); `name` only
/// labels error messages.
template <class Lines>
bag_of_words parse_bag_of_words_lines(Lines& lines, std::string_view name, std::uint64_t size_bytes,
                                      std::uint64_t max_tokens = default_max_tokens) {
  bag_of_words out;
  const std::uint64_t max_dim = std::max<std::uint64_t>(std::uint64_t{1} << 20, size_bytes);
  out.num_docs = bow_header(lines, name, "D (number of documents)", max_dim);
  out.num_words = bow_header(lines, name, "W (vocabulary size)", max_dim);
  std::uint64_t nnz = 0;
  {
    std::string_view line;
    if (!lines.next(line)) fail(name, lines.line_number() + 1, "missing header line NNZ (number of entries)");
    fields f(line);
    const std::string_view tok = f.next();
    if (!parse_uint(tok, nnz) || !f.at_end())
      fail(name, lines.line_number(), "bad header NNZ " + quoted(line) + " (want one integer)");
    if (nnz > static_cast<std::uint64_t>(out.num_docs) * out.num_words)
      fail(name, lines.line_number(), "NNZ " + std::to_string(nnz) + " exceeds D*W");
  }
  // A corrupt NNZ must not make us allocate gigabytes: every entry line takes ≥ 6 bytes.
  const std::uint64_t cap = std::min<std::uint64_t>(nnz, size_bytes / 6 + 1);
  out.word_ids.reserve(cap);
  out.counts.reserve(cap);
  out.doc_offsets.assign(static_cast<std::size_t>(out.num_docs) + 1, 0);

  std::uint32_t prev_doc = 0, prev_word = 0;  // 1-based; 0 = none yet
  std::uint64_t tokens = 0;
  std::string_view line;
  while (lines.next(line)) {
    const std::size_t ln = lines.line_number();
    if (is_blank_line(line)) continue;
    if (out.word_ids.size() == nnz) fail(name, ln, "more entries than the header's NNZ " + std::to_string(nnz));
    fields f(line);
    const std::string_view td = f.next(), tw = f.next(), tc = f.next();
    std::uint32_t d = 0, w = 0, c = 0;
    if (!parse_uint(td, d) || d == 0 || d > out.num_docs)
      fail(name, ln, "bad doc id " + quoted(td) + " (want 1.." + std::to_string(out.num_docs) + ")");
    if (!parse_uint(tw, w) || w == 0 || w > out.num_words)
      fail(name, ln, "bad word id " + quoted(tw) + " (want 1.." + std::to_string(out.num_words) + ")");
    if (!parse_uint(tc, c) || c == 0) fail(name, ln, "bad count " + quoted(tc) + " (want an integer >= 1)");
    if (!f.at_end()) fail(name, ln, "trailing text " + quoted(f.rest()) + " after the count");
    tokens += c;
    if (tokens > max_tokens)
      refuse(name, ln, "count " + std::to_string(c) + " brings the corpus to " + std::to_string(tokens) +
                         " tokens, over the limit of " + std::to_string(max_tokens) + " (LDA would need at least " +
                         std::to_string((tokens * 4) >> 20) + " MiB for their topic assignments; raise the limit, " +
                         "e.g. strata_lda --max-tokens, if that is meant)");
    // Sorted input lets us build CSR in one pass and catch duplicate (doc, word) pairs here.
    if (d < prev_doc || (d == prev_doc && w <= prev_word))
      fail(name, ln, "entry (" + std::string(td) + ", " + std::string(tw) +
                         ") out of order or duplicated (want sorted by doc, then word)");
    prev_doc = d;
    prev_word = w;
    ++out.doc_offsets[d];  // count per doc now, prefix-summed below
    out.word_ids.push_back(w - 1);
    out.counts.push_back(c);
  }
  if (out.word_ids.size() != nnz)
    fail(name, lines.line_number(),
         "found " + std::to_string(out.word_ids.size()) + " entries, header says NNZ " + std::to_string(nnz));
  lines.verify_end();
  for (std::size_t d = 1; d < out.doc_offsets.size(); ++d) out.doc_offsets[d] += out.doc_offsets[d - 1];
  return out;
}

/// Parses a whole docword buffer; `name` only labels error messages.
inline bag_of_words parse_bag_of_words(std::string_view text, std::string_view name,
                                       std::uint64_t max_tokens = default_max_tokens) {
  buffer_lines lines(text);
  return parse_bag_of_words_lines(lines, name, text.size(), max_tokens);
}

/// Parses one non-blank, blank-free entry per line (vocab words, labels).
inline std::vector<std::string> parse_word_lines(std::string_view text, std::string_view name) {
  std::vector<std::string> out;
  line_cursor lines(text);
  std::string_view line;
  while (lines.next(line)) {
    fields f(line);
    const std::string_view tok = f.next();
    if (tok.empty()) {
      // A blank last line is just the file's final newline style; a blank line mid-file would
      // shift every later id by one, so it is an error.
      std::string_view more;
      line_cursor ahead = lines;
      bool only_blank_after = true;
      while (ahead.next(more))
        if (!is_blank_line(more)) only_blank_after = false;
      if (only_blank_after) break;
      fail(name, lines.line_number(), "empty line (each line must hold one entry)");
    }
    if (!f.at_end()) fail(name, lines.line_number(), "more than one entry: " + quoted(line));
    out.emplace_back(tok);
  }
  return out;
}

}  // namespace detail

/// Reads a UCI docword stream; `name` labels errors. Throws strata::error(bad_input, "name:line: ...").
inline bag_of_words read_bag_of_words(std::istream& in, std::string_view name, std::uint64_t max_tokens = default_max_tokens) {
  const std::string text = detail::slurp(in, name);
  return detail::parse_bag_of_words(text, name, max_tokens);
}

/// Reads a UCI docword file. Throws strata::error (bad_input, or the OS code if it cannot open).
inline bag_of_words read_bag_of_words(const std::filesystem::path& file, std::uint64_t max_tokens = default_max_tokens) {
  detail::file_lines lines(file);
  return detail::parse_bag_of_words_lines(lines, file.string(), lines.file_size(), max_tokens);
}

/// Reads a UCI docword stream; on error returns an empty result and sets `ec`.
inline bag_of_words read_bag_of_words(std::istream& in, std::string_view name, std::error_code& ec) {
  return detail::catch_into(ec, [&] { return read_bag_of_words(in, name); });
}

/// Reads a UCI docword file; on error returns an empty result and sets `ec`.
inline bag_of_words read_bag_of_words(const std::filesystem::path& file, std::error_code& ec) {
  return detail::catch_into(ec, [&] { return read_bag_of_words(file); });
}

/// Reads a vocabulary (or label) stream: one entry per line, line w = entry w-1.
inline std::vector<std::string> read_vocab(std::istream& in, std::string_view name) {
  const std::string text = detail::slurp(in, name);
  return detail::parse_word_lines(text, name);
}

/// Reads a vocabulary (or label) file: one entry per line, line w = entry w-1.
inline std::vector<std::string> read_vocab(const std::filesystem::path& file) {
  const std::string text = detail::slurp_file(file);
  return detail::parse_word_lines(text, file.string());
}

/// Reads a vocabulary (or label) file; on error returns an empty list and sets `ec`.
inline std::vector<std::string> read_vocab(const std::filesystem::path& file, std::error_code& ec) {
  return detail::catch_into(ec, [&] { return read_vocab(file); });
}

/// Reads a vocabulary (or label) stream; on error returns an empty list and sets `ec`.
inline std::vector<std::string> read_vocab(std::istream& in, std::string_view name, std::error_code& ec) {
  return detail::catch_into(ec, [&] { return read_vocab(in, name); });
}

}  // namespace strata::ml::io
