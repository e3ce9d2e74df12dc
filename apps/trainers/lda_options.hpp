#pragma once
/// \file The settings, the corpus and the outcome of the distributed LDA trainer (trainers/lda_trainer.hpp).
#include <strata/ml/io/bag_of_words.hpp>
#include <strata/ml/lda.hpp>
#include <strata/ml/lda_model.hpp>
#include <trainers/run_stats.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace strata::ml {

/// Settings of the distributed LDA trainer (besides iterations = Gibbs sweeps after the
/// initialisation clock, seed, prefetch, keep_model: run_options).
struct lda_trainer_options : run_options {
  std::uint32_t topics = 20;      ///< K
  double alpha = 0.1;             ///< doc-topic prior
  double beta = 0.01;             ///< topic-word prior
  bool keep_assignments = false;  ///< fill lda_run::assignments (the documents of this process's workers)
  lda_sampler sampler = lda_sampler::sparse;  ///< sparse: exact SparseLDA; mh: Metropolis–Hastings (see the file comment)
  std::uint32_t mh_steps = 2;     ///< with mh: doc + word proposal pairs per token
  /// With mh: MiB per worker for dense (K-wide) rows of its most frequent words, whose counts
  /// are then one load away; the other words' rows are sparse (a search per count). 0: all sparse.
  std::uint32_t mh_dense_mb = 256;
  /// Word rotation only: word-topic entries per message part of a block handed on (8 bytes each;
  /// a block larger than this goes as several parts, each under the transport's message limit).
  std::size_t rotation_part_entries = std::size_t{1} << 20;
};

/// A corpus as the trainer wants it: per document, its distinct words and their counts.
struct lda_corpus {
  std::uint32_t vocab_size = 0;
  std::vector<std::vector<std::uint32_t>> words;   ///< per doc: word ids
  std::vector<std::vector<std::uint32_t>> counts;  ///< per doc: occurrences, parallel to words
  std::uint64_t tokens() const {
    std::uint64_t n = 0;
    for (const auto& c : counts)
      for (auto x : c) n += x;
    return n;
  }
  /// From a UCI bag of words; keeps the first `max_docs` documents (0: all).
  static lda_corpus from(const io::bag_of_words& bow, std::uint32_t max_docs = 0) {
    lda_corpus c;
    c.vocab_size = bow.num_words;
    const std::uint32_t D = max_docs ? std::min(max_docs, bow.num_docs) : bow.num_docs;
    c.words.resize(D);
    c.counts.resize(D);
    for (std::uint32_t d = 0; d < D; ++d) {
      const auto w = bow.doc_words(d);
      const auto n = bow.doc_counts(d);
      c.words[d].assign(w.begin(), w.end());
      c.counts[d].assign(n.begin(), n.end());
    }
    return c;
  }
  /// From token lists (word ids, repeats allowed).
  static lda_corpus from_tokens(std::span<const std::vector<std::uint32_t>> docs, std::uint32_t vocab_size) {
    lda_corpus c;
    c.vocab_size = vocab_size;
    for (const auto& d : docs) {
      std::vector<std::uint32_t> s = d;
      std::sort(s.begin(), s.end());
      std::vector<std::uint32_t> w, n;
      for (std::size_t i = 0; i < s.size();) {
        std::size_t j = i;
        while (j < s.size() && s[j] == s[i]) ++j;
        w.push_back(s[i]);
        n.push_back(static_cast<std::uint32_t>(j - i));
        i = j;
      }
      c.words.push_back(std::move(w));
      c.counts.push_back(std::move(n));
    }
    return c;
  }
};

/// The outcome of a run (iterations: [0] = after the random initialisation, [i] = after sweep i;
/// seconds, stats, bytes_sent: run_outcome).
struct lda_run : run_outcome {
  double final_loglik = 0;           ///< exact LL of the final state
  double sampling_s = 0;             ///< elapsed time of the last iteration (evaluation excluded)
  std::uint64_t tokens_sampled = 0;  ///< token draws (all workers, all sweeps)
  bool invariants_ok = false;        ///< count invariants held at the end
  std::string invariant_error;       ///< the first violation, if any
  lda_word_topic_model model;        ///< the final n_wk, with keep_model, in the process of worker 0 (else empty)
  /// With lda_trainer_options::keep_assignments: per document, its tokens' final topics, entry by
  /// entry (the counts[e] tokens of words[e] together); empty for documents of other processes.
  std::vector<std::vector<std::uint32_t>> assignments;
};

}  // namespace strata::ml
