#pragma once
/// \file LDA's counts and hyperparameters (`lda_count`, `topic_count`, `lda_params`, the dense count
/// tables `lda_counts`) and its joint log-likelihood, split into per-document, per-word and
/// topic-total parts that a distributed trainer's workers sum independently (ml/lda.hpp).
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <ranges>
#include <span>
#include <type_traits>
#include <vector>

#include <strata/core/error.hpp>

namespace strata::ml {

/// Count type of LDA's tables. Signed on purpose: under stale reads a worker's view of a count
/// (server value + its own un-flushed decrements) can be transiently negative; the kernels clamp
/// such values to 0 instead of wrapping around.
using lda_count = std::int32_t;

/// One non-zero entry of a sparse word-topic row (Bösen's sorted-vector rows hold these).
struct topic_count {
  std::uint32_t topic = 0;  ///< topic id in [0, K)
  lda_count count = 0;      ///< n_wk
};

/// Symmetric-Dirichlet LDA hyperparameters and sizes.
struct lda_params {
  std::uint32_t num_topics = 0;  ///< K
  std::uint32_t vocab_size = 0;  ///< V
  double alpha = 0.1;            ///< doc-topic prior
  double beta = 0.01;            ///< topic-word prior
};

/// ln Γ(x) for x > 0. Own implementation because glibc's lgamma writes the global `signgam`,
/// a data race when several worker threads evaluate the log-likelihood at once. Accurate to
/// ~1e-15 relative: recurrence up to x ≥ 10, then Stirling's series with six terms.
inline double log_gamma(double x) noexcept {
  if (!(x > 0)) return x == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  double shift = 1;
  while (x < 10) {
    shift *= x;
    x += 1;
  }
  const double inv = 1 / x, inv2 = inv * inv;
  const double series =
      inv * (1.0 / 12 - inv2 * (1.0 / 360 - inv2 * (1.0 / 1260 - inv2 * (1.0 / 1680 - inv2 * (1.0 / 1188 - inv2 * (691.0 / 360360))))));
  const double half_log_2pi = 0.91893853320467274178;
  return (x - 0.5) * std::log(x) - x + half_log_2pi + series - std::log(shift);
}

namespace detail {
/// A count as a non-negative double, whether the element is a plain count or a topic_count.
template <class T>
double lda_count_of(const T& x) noexcept {
  if constexpr (std::is_same_v<std::remove_cvref_t<T>, topic_count>)
    return x.count > 0 ? static_cast<double>(x.count) : 0.0;
  else
    return x > 0 ? static_cast<double>(x) : 0.0;
}

/// A uniform double in [0, 1). 53 random bits straight from a 64-bit engine (fast, and the
/// same sequence on every standard library); other engines go through the standard distribution.
template <class URBG>
double uniform01(URBG& rng) {
  using R = typename URBG::result_type;
  if constexpr (std::is_same_v<R, std::uint64_t> && URBG::min() == 0 &&
                URBG::max() == std::numeric_limits<std::uint64_t>::max()) {
    return static_cast<double>(rng() >> 11) * 0x1.0p-53;
  } else {
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  }
}
}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Joint log-likelihood, split for distributed summation.
//
// SEEDS.md writes
//   LL = Σ_d [lnΓ(Kα) − K lnΓ(α) + Σ_k lnΓ(n_dk+α) − lnΓ(n_d+Kα)]
//      + K[lnΓ(Vβ) − V lnΓ(β)] + Σ_w Σ_k lnΓ(n_wk+β) − Σ_k lnΓ(n_k+Vβ).
// Regrouping the −K lnΓ(α) per document and −KV lnΓ(β) into the sums gives the same value as
//   LL = Σ_d doc_part(d) + Σ_w word_part(w) + topic_part, with
//   doc_part(d)  = lnΓ(Kα) − lnΓ(n_d+Kα) + Σ_k [lnΓ(n_dk+α) − lnΓ(α)]
//   word_part(w) = Σ_k [lnΓ(n_wk+β) − lnΓ(β)]
//   topic_part   = K lnΓ(Vβ) − Σ_k lnΓ(n_k+Vβ).
// Every zero count now contributes exactly 0, so each part can be evaluated from a sparse row
// (only the non-zero counts), a word never seen contributes nothing, and a worker can sum the
// parts for the documents and word rows it owns.
// ---------------------------------------------------------------------------------------------

/// One document's term of the log-likelihood from its topic counts (dense, or only the non-zeros).
template <std::ranges::input_range R>
double lda_doc_loglik(const R& doc_topic_counts, const lda_params& p) noexcept {
  const double lg_alpha = log_gamma(p.alpha);
  double n_d = 0, sum = 0;
  for (const auto& x : doc_topic_counts) {
    const double n = detail::lda_count_of(x);
    if (n == 0) continue;
    n_d += n;
    sum += log_gamma(n + p.alpha) - lg_alpha;
  }
  const double k_alpha = p.num_topics * p.alpha;
  return log_gamma(k_alpha) - log_gamma(n_d + k_alpha) + sum;
}

/// One word's term of the log-likelihood from its topic counts (dense, or only the non-zeros).
template <std::ranges::input_range R>
double lda_word_loglik(const R& word_topic_counts, const lda_params& p) noexcept {
  const double lg_beta = log_gamma(p.beta);
  double sum = 0;
  for (const auto& x : word_topic_counts) {
    const double n = detail::lda_count_of(x);
    if (n != 0) sum += log_gamma(n + p.beta) - lg_beta;
  }
  return sum;
}

/// The topic-total term of the log-likelihood (counted once, not per worker).
template <std::ranges::input_range R>
double lda_topic_loglik(const R& topic_totals, const lda_params& p) noexcept {
  const double v_beta = p.vocab_size * p.beta;
  double sum = p.num_topics * log_gamma(v_beta);
  for (const auto& x : topic_totals) sum -= log_gamma(detail::lda_count_of(x) + v_beta);
  return sum;
}

/// One document's topic counts n_dk, counted from its tokens' topics when the document comes up
/// instead of kept for every document (documents × K counts: 1.2 GB at 300k documents and
/// K = 1,000, 12 GB at K = 10,000): load() fills a K-wide scratch from the topics in O(n_d),
/// unload() takes them out again in O(n_d) and says whether the counts, edited by a sampler
/// meanwhile, still match the (edited) topics; loglik() is the document's LL term in O(n_d).
class doc_topic_scratch {
 public:
  doc_topic_scratch() = default;
  explicit doc_topic_scratch(std::uint32_t K) : n_(K, 0) {}
  std::span<lda_count> load(std::span<const std::uint32_t> z) {
    for (auto k : z) ++n_[k];
    return n_;
  }
  /// Zeroes the counts again; false if they were not the recount of `z`.
  bool unload(std::span<const std::uint32_t> z) {
    for (auto k : z) --n_[k];
    bool ok = true;
    for (auto k : z) ok &= n_[k] == 0, n_[k] = 0;
    return ok;
  }
  /// lda_doc_loglik of the document whose tokens have topics `z`, from its non-zero counts only
  /// (the scratch must be zero before and is zero after).
  double loglik(std::span<const std::uint32_t> z, const lda_params& p) {
    load(z);
    const double lg_alpha = log_gamma(p.alpha);
    double sum = 0;
    for (auto k : z)
      if (n_[k] != 0) sum += log_gamma(n_[k] + p.alpha) - lg_alpha, n_[k] = 0;
    const double k_alpha = p.num_topics * p.alpha;
    return log_gamma(k_alpha) - log_gamma(static_cast<double>(z.size()) + k_alpha) + sum;
  }

 private:
  std::vector<lda_count> n_;
};

/// Dense count tables of an LDA state (row-major, K columns).
struct lda_counts {
  std::uint32_t num_topics = 0;            ///< K
  std::uint32_t num_docs = 0;              ///< D
  std::uint32_t vocab_size = 0;            ///< V
  std::vector<lda_count> doc_topic;        ///< D × K: n_dk
  std::vector<lda_count> word_topic;       ///< V × K: n_wk
  std::vector<lda_count> topic_totals;     ///< K: n_k

  /// Document d's topic counts.
  std::span<lda_count> doc(std::uint32_t d) noexcept { return {doc_topic.data() + std::size_t{d} * num_topics, num_topics}; }
  /// Document d's topic counts (read-only).
  std::span<const lda_count> doc(std::uint32_t d) const noexcept { return {doc_topic.data() + std::size_t{d} * num_topics, num_topics}; }
  /// Word w's topic counts.
  std::span<lda_count> word(std::uint32_t w) noexcept { return {word_topic.data() + std::size_t{w} * num_topics, num_topics}; }
  /// Word w's topic counts (read-only).
  std::span<const lda_count> word(std::uint32_t w) const noexcept { return {word_topic.data() + std::size_t{w} * num_topics, num_topics}; }
};

/// The full joint log-likelihood of a count state (the sum of the three parts above).
inline double lda_loglik(const lda_counts& c, double alpha, double beta) {
  const lda_params p{c.num_topics, c.vocab_size, alpha, beta};
  double ll = lda_topic_loglik(c.topic_totals, p);
  for (std::uint32_t d = 0; d < c.num_docs; ++d) ll += lda_doc_loglik(c.doc(d), p);
  for (std::uint32_t w = 0; w < c.vocab_size; ++w) ll += lda_word_loglik(c.word(w), p);
  return ll;
}

}  // namespace strata::ml
