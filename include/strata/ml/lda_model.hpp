#pragma once
/// \file The word-topic counts an LDA run ends with (trainers/lda_trainer.hpp), what can be read
/// off them without the documents (the words' log-likelihood log p(w | z), each topic's top
/// words), and their text file format.
///
/// File format (text; blank lines and lines starting with '#' are skipped):
///
///     strata_lda_model 1 topics K vocab V alpha α beta β
///     0 3:12 7:1          one line per word, ids 0..V-1 in order: the word id, then topic:count
///     1                   for each topic with a non-zero count, topics increasing
///     2 0:5 19:40
///     ...
///
/// The counts are n_wk, the number of tokens of word w assigned to topic k; the topic totals
/// n_k are their column sums. The documents' topic assignments are not saved, so a loaded model
/// can be evaluated and inspected but a Gibbs chain cannot resume from it. A malformed file throws
/// strata::error(bad_input, "FILE:LINE: what").
#include <strata/core/atomic_file.hpp>
#include <strata/core/error.hpp>
#include <strata/ml/io/detail/line_reader.hpp>
#include <strata/ml/lda.hpp>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace strata::ml {

/// Word-topic counts n_wk of an LDA model, with its hyperparameters.
struct lda_word_topic_model {
  std::uint32_t topics = 0;  ///< K
  std::uint32_t vocab = 0;   ///< V
  double alpha = 0.1;        ///< doc-topic prior
  double beta = 0.01;        ///< topic-word prior
  std::vector<std::vector<topic_count>> words;  ///< per word (V rows): its non-zero counts, topics increasing

  lda_params params() const noexcept { return {topics, vocab, alpha, beta}; }
  /// n_k = Σ_w n_wk.
  std::vector<std::int64_t> topic_totals() const {
    std::vector<std::int64_t> nk(topics, 0);
    for (const auto& row : words)
      for (const auto& e : row) nk.at(e.topic) += e.count;
    return nk;
  }
  /// Σ_k n_k: the tokens of the corpus it was trained on.
  std::int64_t tokens() const {
    std::int64_t n = 0;
    for (auto x : topic_totals()) n += x;
    return n;
  }
  /// log p(w | z): the word and topic parts of the joint log-likelihood (lda.hpp), i.e. the joint
  /// log-likelihood without the documents' part log p(z), which needs the assignments.
  double word_loglik() const {
    const lda_params p = params();
    double ll = lda_topic_loglik(topic_totals(), p);
    for (const auto& row : words) ll += lda_word_loglik(row, p);
    return ll;
  }
  /// The `n` words with the largest n_wk in each topic, largest first (ties: lower word id first);
  /// fewer when fewer words have a non-zero count in that topic.
  std::vector<std::vector<std::uint32_t>> top_words(std::uint32_t n) const {
    std::vector<std::vector<std::pair<std::int32_t, std::uint32_t>>> by_topic(topics);
    for (std::uint32_t w = 0; w < words.size(); ++w)
      for (const auto& e : words[w])
        if (e.count > 0) by_topic.at(e.topic).emplace_back(e.count, w);
    std::vector<std::vector<std::uint32_t>> out(topics);
    for (std::uint32_t k = 0; k < topics; ++k) {
      auto& v = by_topic[k];
      const auto m = std::min<std::size_t>(n, v.size());
      auto before = [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; };
      std::partial_sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end(), before);
      for (std::size_t i = 0; i < m; ++i) out[k].push_back(v[i].second);
    }
    return out;
  }
  /// n_wk (0 when absent).
  std::int32_t count(std::uint32_t w, std::uint32_t k) const noexcept {
    for (const auto& e : words[w])
      if (e.topic == k) return e.count;
    return 0;
  }
  friend bool operator==(const lda_word_topic_model& a, const lda_word_topic_model& b) noexcept {
    if (a.topics != b.topics || a.vocab != b.vocab || a.alpha != b.alpha || a.beta != b.beta || a.words.size() != b.words.size())
      return false;
    for (std::size_t w = 0; w < a.words.size(); ++w) {
      if (a.words[w].size() != b.words[w].size()) return false;
      for (std::size_t i = 0; i < a.words[w].size(); ++i)
        if (a.words[w][i].topic != b.words[w][i].topic || a.words[w][i].count != b.words[w][i].count) return false;
    }
    return true;
  }
};

namespace detail {
inline void append_double(std::string& out, double x) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  out.append(buf, r.ptr);
}
}  // namespace detail

/// Writes the model in the text format above (zero counts are left out). Throws strata::error
/// when the stream fails.
inline void write_lda_model(std::ostream& out, const lda_word_topic_model& m) {
  std::string line = "# strata_lda word-topic counts: word id, then topic:count\n";
  line += "strata_lda_model 1 topics " + std::to_string(m.topics) + " vocab " + std::to_string(m.vocab) + " alpha ";
  detail::append_double(line, m.alpha);
  line += " beta ";
  detail::append_double(line, m.beta);
  line += '\n';
  out << line;
  for (std::uint32_t w = 0; w < m.vocab; ++w) {
    line = std::to_string(w);
    if (w < m.words.size())
      for (const auto& e : m.words[w])
        if (e.count != 0) line += ' ' + std::to_string(e.topic) + ':' + std::to_string(e.count);
    line += '\n';
    out << line;
  }
  if (!out) throw strata::error(std::make_error_code(std::errc::io_error), "write_lda_model: write failed");
}

/// Writes the model to a file atomically (core/atomic_file.hpp: a failed write leaves the previous
/// file whole). Throws strata::error naming the file and the reason when it cannot be written.
inline void write_lda_model(const std::filesystem::path& file, const lda_word_topic_model& m) {
  std::ostringstream text;
  write_lda_model(text, m);
  write_file_atomic(file, text.view());
}

/// Writes documents' topic assignments atomically, one document per line in the `.z` format
/// that WarpLDA writes (`<tokens> <word>:<topic> ...`, tokens in the order of the document's
/// words), so one tool reads either program's final state (benchmarks/lda_z_loglik.cpp).
/// `words[d]` are document d's word ids, each repeated as often as it occurs (counts[d][e]
/// times), and `z[d]` their topics. Throws strata::error naming the file when it cannot write.
inline void write_lda_assignments(const std::filesystem::path& file, const std::vector<std::vector<std::uint32_t>>& words,
                                  const std::vector<std::vector<std::uint32_t>>& counts,
                                  const std::vector<std::vector<std::uint32_t>>& z) {
  atomic_file f(file);
  std::string line;
  for (std::size_t d = 0; d < words.size(); ++d) {
    const auto& zd = z.at(d);
    line += std::to_string(zd.size());
    std::size_t zi = 0;
    for (std::size_t e = 0; e < words[d].size(); ++e)
      for (std::uint32_t j = 0; j < counts[d][e]; ++j) {
        if (zi == zd.size())
          throw strata::error(errc::bad_input, "write_lda_assignments: document " + std::to_string(d) + " has more tokens than topics");
        line += ' ' + std::to_string(words[d][e]) + ':' + std::to_string(zd[zi++]);
      }
    if (zi != zd.size())
      throw strata::error(errc::bad_input, "write_lda_assignments: document " + std::to_string(d) + " has fewer tokens than topics");
    line += '\n';
    if (line.size() >= (1u << 20)) f.write(std::string_view(line)), line.clear();
  }
  f.write(std::string_view(line));
  f.commit();
}

namespace detail {
/// Parses a model text; `name` labels errors.
inline lda_word_topic_model parse_lda_model(std::string_view text, std::string_view name) {
  using io::detail::fail;
  io::detail::line_cursor lines(text);
  std::string_view line;
  io::detail::fields f(line);
  auto next_record = [&] {
    while (lines.next(line)) {
      f = io::detail::fields(line);
      if (!f.at_end() && f.rest().front() != '#') return true;
    }
    return false;
  };
  if (!next_record()) fail(name, lines.line_number() + 1, "empty model file (want a 'strata_lda_model 1 ...' header)");
  const std::size_t hl = lines.line_number();
  if (f.next() != "strata_lda_model") fail(name, hl, "not an LDA model (want a 'strata_lda_model 1 ...' header)");
  if (f.next() != "1") fail(name, hl, "unsupported model format version (want 1)");
  lda_word_topic_model m;
  auto keyed_uint = [&](std::string_view key, std::uint32_t& v) {
    const auto k = f.next(), t = f.next();
    if (k != key || !io::detail::parse_uint(t, v) || v == 0 || v == std::numeric_limits<std::uint32_t>::max())
      fail(name, hl, "bad header: want '" + std::string(key) + " N' with N a positive integer");
  };
  auto keyed_double = [&](std::string_view key, double& v) {
    const auto k = f.next(), t = f.next();
    if (k != key || !io::detail::parse_float(t, v) || !(v > 0))
      fail(name, hl, "bad header: want '" + std::string(key) + " X' with X a positive number");
  };
  keyed_uint("topics", m.topics);
  keyed_uint("vocab", m.vocab);
  keyed_double("alpha", m.alpha);
  keyed_double("beta", m.beta);
  if (!f.at_end()) fail(name, hl, "trailing text " + io::detail::quoted(f.rest()) + " in the header");
  if (m.vocab > text.size()) fail(name, hl, "the header promises " + std::to_string(m.vocab) + " words, more than the file holds");
  m.words.resize(m.vocab);
  for (std::uint32_t w = 0; w < m.vocab; ++w) {
    if (!next_record())
      fail(name, lines.line_number() + 1, "missing word " + std::to_string(w) + " (the header says vocab " + std::to_string(m.vocab) + ")");
    const std::size_t ln = lines.line_number();
    const auto t = f.next();
    std::uint32_t id = 0;
    if (!io::detail::parse_uint(t, id) || id != w)
      fail(name, ln, "want word id " + std::to_string(w) + " first, got " + io::detail::quoted(t));
    while (!f.at_end()) {
      const auto e = f.next();
      const auto colon = e.find(':');
      std::uint32_t k = 0;
      std::int32_t c = 0;
      const std::string_view tk = e.substr(0, colon);
      const std::string_view tc = colon == std::string_view::npos ? std::string_view{} : e.substr(colon + 1);
      const auto rc = std::from_chars(tc.data(), tc.data() + tc.size(), c);
      if (colon == std::string_view::npos || !io::detail::parse_uint(tk, k) || tc.empty() || rc.ec != std::errc() ||
          rc.ptr != tc.data() + tc.size())
        fail(name, ln, "bad entry " + io::detail::quoted(e) + " (want topic:count)");
      if (k >= m.topics) fail(name, ln, "topic " + std::to_string(k) + " out of range (topics " + std::to_string(m.topics) + ")");
      if (c <= 0) fail(name, ln, "count " + std::to_string(c) + " of topic " + std::to_string(k) + " is not positive");
      if (!m.words[w].empty() && m.words[w].back().topic >= k)
        fail(name, ln, "topics out of order or repeated at " + io::detail::quoted(e) + " (want increasing topics)");
      m.words[w].push_back({k, c});
    }
  }
  if (next_record()) fail(name, lines.line_number(), "unexpected line after the last word " + io::detail::quoted(line));
  return m;
}
}  // namespace detail

/// Reads a model file. Throws strata::error: bad_input "FILE:LINE: what" for a malformed file,
/// the OS error when it cannot be opened.
inline lda_word_topic_model read_lda_model(const std::filesystem::path& file) {
  const std::string text = io::detail::slurp_file(file);
  return detail::parse_lda_model(text, file.string());
}
/// Reads a model from a stream; `name` labels errors.
inline lda_word_topic_model read_lda_model(std::istream& in, std::string_view name) {
  const std::string text = io::detail::slurp(in, name);
  return detail::parse_lda_model(text, name);
}

}  // namespace strata::ml
