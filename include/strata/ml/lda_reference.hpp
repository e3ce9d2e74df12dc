#pragma once
/// \file LDA's sequential reference trainer (`lda_reference`, ml/lda.hpp): collapsed Gibbs sweeps in
/// document order with any of the token samplers; the benchmark baseline and the oracle for the
/// distributed trainers.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <strata/core/error.hpp>
#include <strata/ml/alias_table.hpp>
#include <strata/ml/lda_loglik.hpp>
#include <strata/ml/lda_mh_sampler.hpp>
#include <strata/ml/lda_sparse_sampler.hpp>

namespace strata::ml {

// ---------------------------------------------------------------------------------------------
// Sequential reference trainer.
// ---------------------------------------------------------------------------------------------

/// Which token sampler lda_reference uses.
enum class lda_sampler {
  plain,   ///< lda_sample_plain, O(K) per token
  sparse,  ///< sparse_lda_sampler over sparse word rows kept beside the dense table
  mh,      ///< mh_lda_sampler: Metropolis–Hastings with doc and word (alias) proposals
};

/// Settings of the reference trainer.
struct lda_options {
  std::uint32_t num_topics = 10;            ///< K
  double alpha = 0.1;                       ///< doc-topic prior
  double beta = 0.01;                       ///< topic-word prior
  std::uint32_t iterations = 50;            ///< full Gibbs sweeps
  std::uint64_t seed = 1;                   ///< seeds the initial assignment and the sampler
  lda_sampler sampler = lda_sampler::plain; ///< token sampler
  std::uint32_t mh_steps = 2;               ///< with mh: doc + word proposal pairs per token
  std::uint32_t loglik_every = 1;           ///< evaluate LL every this many sweeps (0: first and last only)
};

/// What the reference trainer returns.
struct lda_result {
  lda_counts counts;                                  ///< final count tables
  std::vector<std::vector<std::uint32_t>> topics;     ///< final topic of every token, parallel to the input
  std::vector<double> loglik;                         ///< joint LL at the iterations in loglik_iteration
  std::vector<std::uint32_t> loglik_iteration;        ///< 0 = after the random initialisation, i = after sweep i
  double sweep_seconds = 0;                           ///< wall time of the sweeps alone (no initialisation, no LL)
};

/// Sequential collapsed Gibbs LDA: random initial topics, then `iterations` sweeps over every
/// token in document order. The benchmark baseline and the oracle for distributed trainers.
/// Throws strata::error(bad_input) for K = 0, non-positive priors, or a word id ≥ vocab_size.
inline lda_result lda_reference(std::span<const std::vector<std::uint32_t>> docs, std::uint32_t vocab_size,
                                const lda_options& opt) {
  const std::uint32_t K = opt.num_topics;
  if (K == 0 || vocab_size == 0 || !(opt.alpha > 0) || !(opt.beta > 0))
    throw strata::error(errc::bad_input, "lda_reference: need num_topics > 0, vocab_size > 0, alpha > 0, beta > 0");
  const lda_params p{K, vocab_size, opt.alpha, opt.beta};
  lda_result res;
  lda_counts& c = res.counts;
  c.num_topics = K;
  c.num_docs = static_cast<std::uint32_t>(docs.size());
  c.vocab_size = vocab_size;
  c.doc_topic.assign(std::size_t{c.num_docs} * K, 0);
  c.word_topic.assign(std::size_t{vocab_size} * K, 0);
  c.topic_totals.assign(K, 0);

  std::mt19937_64 rng(opt.seed);
  res.topics.resize(docs.size());
  for (std::uint32_t d = 0; d < c.num_docs; ++d) {
    res.topics[d].resize(docs[d].size());
    for (std::size_t i = 0; i < docs[d].size(); ++i) {
      const std::uint32_t w = docs[d][i];
      if (w >= vocab_size)
        throw strata::error(errc::bad_input, "lda_reference: document " + std::to_string(d) + " token " + std::to_string(i) +
                                                 ": word id " + std::to_string(w) + " >= vocab_size " + std::to_string(vocab_size));
      const auto k = static_cast<std::uint32_t>(detail::uniform01(rng) * K) % K;
      res.topics[d][i] = k;
      ++c.doc(d)[k];
      ++c.word(w)[k];
      ++c.topic_totals[k];
    }
  }
  auto record = [&](std::uint32_t it) {
    res.loglik.push_back(lda_loglik(c, opt.alpha, opt.beta));
    res.loglik_iteration.push_back(it);
  };
  record(0);

  sparse_lda_sampler sparse(p);
  std::vector<std::vector<topic_count>> sparse_rows;  // the sparse sampler's view of word_topic
  if (opt.sampler == lda_sampler::sparse) {
    sparse.set_topic_totals(c.topic_totals);
    sparse_rows.resize(vocab_size);
    for (std::uint32_t w = 0; w < vocab_size; ++w)
      for (std::uint32_t k = 0; k < K; ++k)
        if (c.word(w)[k] != 0) sparse_rows[w].push_back({k, c.word(w)[k]});
  }
  // The MH sampler's word proposals: each word's row as it was at its first use in the sweep.
  const bool use_mh = opt.sampler == lda_sampler::mh;
  mh_lda_sampler mh(p, std::max(opt.mh_steps, 1u));
  std::vector<lda_count> snap(use_mh ? c.word_topic.size() : 0);
  std::vector<std::uint32_t> built(use_mh ? vocab_size : 0, 0), ibuf, sbuf;
  std::vector<lda_alias_slice> slices(use_mh ? vocab_size : 0);
  std::vector<alias_entry> pool;
  std::vector<double> wbuf;
  auto sweep_start = std::chrono::steady_clock::now();
  for (std::uint32_t it = 1; it <= opt.iterations; ++it) {
    if (use_mh) {
      mh.set_topic_totals(c.topic_totals);
      pool.clear();
    }
    for (std::uint32_t d = 0; d < c.num_docs; ++d) {
      const auto doc = c.doc(d);
      if (opt.sampler == lda_sampler::sparse) sparse.begin_document(doc);
      if (use_mh) mh.begin_document(doc, res.topics[d]);
      for (std::size_t i = 0; i < docs[d].size(); ++i) {
        const std::uint32_t w = docs[d][i];
        const auto row = c.word(w);
        const std::uint32_t old = res.topics[d][i];
        std::uint32_t k;
        if (use_mh) {
          const std::span<lda_count> sn(snap.data() + std::size_t{w} * K, K);
          if (built[w] != it) {
            std::copy(row.begin(), row.end(), sn.begin());
            slices[w] = build_word_alias(sn, pool, wbuf, ibuf, sbuf);
            built[w] = it;
          }
          const lda_word_proposal wp{std::span<const alias_entry>(pool.data() + slices[w].offset, slices[w].size), sn, slices[w].mass};
          k = mh.resample(old, row, wp, rng);  // moves the doc, word and its own total counts
          --c.topic_totals[old];
          ++c.topic_totals[k];
        } else if (opt.sampler == lda_sampler::sparse) {
          auto& srow = sparse_rows[w];
          k = sparse.resample(old, std::span<const topic_count>(srow), rng);  // moves the doc count and its n_k
          if (k != old) {
            detail::sparse_row_add(srow, old, -1);
            detail::sparse_row_add(srow, k, +1);
          }
          --c.topic_totals[old];
          ++c.topic_totals[k];
          --row[old];
          ++row[k];
        } else {
          --doc[old];
          --row[old];
          --c.topic_totals[old];
          k = lda_sample_plain(doc, row, c.topic_totals, p, rng);
          ++doc[k];
          ++row[k];
          ++c.topic_totals[k];
        }
        res.topics[d][i] = k;
      }
    }
    if (it == opt.iterations || (opt.loglik_every != 0 && it % opt.loglik_every == 0)) {
      const auto now = std::chrono::steady_clock::now();
      res.sweep_seconds += std::chrono::duration<double>(now - sweep_start).count();
      record(it);
      sweep_start = std::chrono::steady_clock::now();
    }
  }
  return res;
}

}  // namespace strata::ml
