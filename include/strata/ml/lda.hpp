#pragma once
/// \file Collapsed Gibbs sampling kernels for LDA, written so that a distributed trainer can keep
/// the word-topic counts in external storage (parameter-server rows): the joint log-likelihood
/// split into per-document, per-word and topic-total parts that workers sum independently; a
/// plain O(K) token sampler (the reference); a SparseLDA bucket sampler (Yao, Mimno & McCallum,
/// KDD 2009) that touches only non-zero counts; a Metropolis–Hastings sampler with O(1) proposals
/// (LightLDA / WarpLDA style); and a sequential reference trainer.
#include <strata/core/error.hpp>
#include <strata/ml/alias_table.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

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

// ---------------------------------------------------------------------------------------------
// Token samplers. All counts passed in must EXCLUDE the token being resampled.
// The full conditional is p(z = k) ∝ (n_dk + α)(n_wk + β) / (n_k + Vβ).
// ---------------------------------------------------------------------------------------------

/// Unnormalised full-conditional weight of topic k (negative counts read as 0).
inline double lda_topic_weight(double n_dk, double n_wk, double n_k, const lda_params& p) noexcept {
  n_dk = std::max(n_dk, 0.0);
  n_wk = std::max(n_wk, 0.0);
  n_k = std::max(n_k, 0.0);
  return (n_dk + p.alpha) * (n_wk + p.beta) / (n_k + p.vocab_size * p.beta);
}

/// The exact normalised full conditional over all K topics (for tests and diagnostics).
inline std::vector<double> lda_topic_probabilities(std::span<const lda_count> doc_topic,
                                                   std::span<const lda_count> word_topic,
                                                   std::span<const lda_count> topic_totals, const lda_params& p) {
  std::vector<double> w(p.num_topics);
  double total = 0;
  for (std::uint32_t k = 0; k < p.num_topics; ++k) total += w[k] = lda_topic_weight(doc_topic[k], word_topic[k], topic_totals[k], p);
  for (auto& x : w) x /= total;
  return w;
}

/// Plain O(K) sampler, the reference: draws a topic for one token from dense doc-topic, word-topic
/// and topic-total rows (each of length K). Two passes instead of a CDF buffer, so it needs no
/// scratch memory and no state.
template <class URBG>
std::uint32_t lda_sample_plain(std::span<const lda_count> doc_topic, std::span<const lda_count> word_topic,
                               std::span<const lda_count> topic_totals, const lda_params& p, URBG& rng) {
  const std::uint32_t K = p.num_topics;
  double total = 0;
  for (std::uint32_t k = 0; k < K; ++k) total += lda_topic_weight(doc_topic[k], word_topic[k], topic_totals[k], p);
  double u = detail::uniform01(rng) * total;
  for (std::uint32_t k = 0; k < K; ++k) {
    u -= lda_topic_weight(doc_topic[k], word_topic[k], topic_totals[k], p);
    if (u < 0) return k;
  }
  return K - 1;  // only reachable through rounding in the last subtraction
}

/// SparseLDA sampler. It splits the full conditional into three buckets,
///   (n_dk+α)(n_wk+β)/(n_k+Vβ) = αβ/(n_k+Vβ)  [s: all topics, changes slowly]
///                             + n_dk β/(n_k+Vβ)  [r: only topics in the document]
///                             + (n_dk+α) n_wk/(n_k+Vβ)  [q: only topics of the word],
/// keeps s and r up to date incrementally as tokens move, and computes q per token over the
/// word's non-zero counts only. Most of the mass is in q, so a draw usually costs O(nnz(word row))
/// rather than O(K). The sampler keeps its own copy of the topic totals (the worker's view:
/// server value plus its own moves) and edits the bound document's counts in place; word-topic
/// rows stay with the caller, who applies the returned moves to them.
class sparse_lda_sampler {
 public:
  /// Creates a sampler for the given hyperparameters with all topic totals zero.
  explicit sparse_lda_sampler(const lda_params& p)
      : p_(p), nk_(p.num_topics, 0), inv_(p.num_topics), coef_(p.num_topics), pos_(p.num_topics, npos) {
    if (p.num_topics == 0 || p.vocab_size == 0 || !(p.alpha > 0) || !(p.beta > 0))
      throw strata::error(errc::bad_input, "sparse_lda_sampler: need K > 0, V > 0, alpha > 0, beta > 0");
    refresh();
  }

  /// Replaces the topic totals (e.g. with a fresh server row at a clock); O(K). Also unbinds
  /// the current document, so a refresh between documents never reads a document's counts
  /// after the caller has dropped them; call begin_document again before sampling.
  void set_topic_totals(std::span<const lda_count> totals) {
    if (totals.size() < p_.num_topics)
      throw strata::error(errc::bad_input, "sparse_lda_sampler: topic totals shorter than K");
    std::copy_n(totals.begin(), p_.num_topics, nk_.begin());
    doc_ = {};
    refresh();
  }
  /// The sampler's current view of the topic totals n_k.
  std::span<const lda_count> topic_totals() const noexcept { return nk_; }

  /// Binds the document whose tokens come next; remove()/add() update its counts in place.
  /// O(K): the s bucket is also recomputed here so rounding drift cannot accumulate across docs.
  void begin_document(std::span<lda_count> doc_topic) {
    doc_ = doc_topic;
    refresh();
  }

  /// Unbinds the current document (sampling then treats all n_dk as 0); O(K).
  void end_document() {
    doc_ = {};
    refresh();
  }

  /// Takes one token of topic k out of the bound document and the topic totals.
  void remove(std::uint32_t k) noexcept { move(k, -1); }
  /// Puts one token of topic k into the bound document and the topic totals.
  void add(std::uint32_t k) noexcept { move(k, +1); }

  /// Draws a topic given the current state and the token's word row (sparse, non-zeros only),
  /// which must already exclude the token itself.
  template <class URBG>
  std::uint32_t sample(std::span<const topic_count> word_row, URBG& rng) {
    return draw(word_row, npos, rng);
  }
  /// As above with a dense word row of length K (then the q bucket costs O(K)).
  template <class URBG>
  std::uint32_t sample(std::span<const lda_count> word_row, URBG& rng) {
    return draw_dense(word_row, npos, rng);
  }

  /// The whole Gibbs step for one token currently assigned `old`, whose word row still INCLUDES
  /// the token: remove(old), draw with that row's count for `old` read one lower, add(new).
  /// Returns the new topic. The bound document and the sampler's own totals are already updated;
  /// the caller applies the move to its word row and to any shared topic-total table.
  template <class URBG>
  std::uint32_t resample(std::uint32_t old, std::span<const topic_count> word_row, URBG& rng) {
    remove(old);
    const std::uint32_t k = draw(word_row, old, rng);
    add(k);
    return k;
  }
  /// As above with a dense word row of length K.
  template <class URBG>
  std::uint32_t resample(std::uint32_t old, std::span<const lda_count> word_row, URBG& rng) {
    remove(old);
    const std::uint32_t k = draw_dense(word_row, old, rng);
    add(k);
    return k;
  }

  /// Current mass of the smoothing bucket s = Σ_k αβ/(n_k+Vβ).
  double s_mass() const noexcept { return std::max(s_, 0.0); }
  /// Current mass of the document bucket r = Σ_k n_dk β/(n_k+Vβ).
  double r_mass() const noexcept { return std::max(r_, 0.0); }
  /// The hyperparameters.
  const lda_params& params() const noexcept { return p_; }

 private:
  static constexpr std::uint32_t npos = std::numeric_limits<std::uint32_t>::max();

  static double clamp0(lda_count n) noexcept { return n > 0 ? static_cast<double>(n) : 0.0; }
  double n_dk(std::uint32_t k) const noexcept { return doc_.empty() ? 0.0 : clamp0(doc_[k]); }

  /// Recomputes every cached quantity from nk_ and the bound document; O(K).
  void refresh() {
    const double v_beta = p_.vocab_size * p_.beta;
    s_ = r_ = 0;
    nz_.clear();
    for (std::uint32_t k = 0; k < p_.num_topics; ++k) {
      inv_[k] = 1 / (clamp0(nk_[k]) + v_beta);
      const double ndk = n_dk(k);
      s_ += p_.alpha * p_.beta * inv_[k];
      r_ += p_.beta * ndk * inv_[k];
      coef_[k] = (ndk + p_.alpha) * inv_[k];
      pos_[k] = npos;
      if (ndk > 0) {
        pos_[k] = static_cast<std::uint32_t>(nz_.size());
        nz_.push_back(k);
      }
    }
  }

  /// Moves one token in or out of topic k: O(1) bucket maintenance (subtract the topic's old
  /// contributions, change the counts, add the new ones).
  void move(std::uint32_t k, lda_count delta) noexcept {
    const double v_beta = p_.vocab_size * p_.beta;
    s_ -= p_.alpha * p_.beta * inv_[k];
    r_ -= p_.beta * n_dk(k) * inv_[k];
    nk_[k] += delta;
    if (!doc_.empty()) doc_[k] += delta;
    inv_[k] = 1 / (clamp0(nk_[k]) + v_beta);
    const double ndk = n_dk(k);
    s_ += p_.alpha * p_.beta * inv_[k];
    r_ += p_.beta * ndk * inv_[k];
    coef_[k] = (ndk + p_.alpha) * inv_[k];
    if (ndk > 0 && pos_[k] == npos) {
      pos_[k] = static_cast<std::uint32_t>(nz_.size());
      nz_.push_back(k);
    } else if (ndk == 0 && pos_[k] != npos) {  // swap-remove keeps the non-zero list O(1)
      const std::uint32_t last = nz_.back();
      nz_[pos_[k]] = last;
      pos_[last] = pos_[k];
      nz_.pop_back();
      pos_[k] = npos;
    }
  }

  /// Draws from s + r + q once q's weights are in qw_ (parallel to `topic_of`) and q is their sum.
  template <class URBG, class TopicOf>
  std::uint32_t finish(double q, TopicOf&& topic_of, URBG& rng) {
    const double s = s_mass(), r = r_mass();
    double u = detail::uniform01(rng) * (s + r + q);
    if (u < q) {  // q bucket: the word's topics (most of the mass once counts have formed)
      const std::size_t n = qw_.size();
      for (std::size_t i = 0; i + 1 < n; ++i) {
        u -= qw_[i];
        if (u < 0) return topic_of(i);
      }
      return topic_of(n - 1);  // what rounding left over belongs to the last weight
    }
    u -= q;
    if (u < r && !nz_.empty()) {  // r bucket: the document's topics
      for (std::uint32_t k : nz_) {
        u -= p_.beta * n_dk(k) * inv_[k];
        if (u < 0) return k;
      }
      return nz_.back();  // the incremental r_ drifted a hair above the true sum
    }
    u = std::max(u - r, 0.0);  // s bucket: every topic, rarely reached
    for (std::uint32_t k = 0; k < p_.num_topics; ++k) {
      u -= p_.alpha * p_.beta * inv_[k];
      if (u < 0) return k;
    }
    return p_.num_topics - 1;
  }

  // The q weights go to qw_ and are summed in four independent chains: one running sum would make
  // every weight wait for the previous addition (its latency, not the arithmetic, bounded the loop).
  template <class Weight>
  double fill_weights(std::size_t n, Weight&& weight) {
    qw_.resize(n);
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
      a0 += qw_[i] = weight(i);
      a1 += qw_[i + 1] = weight(i + 1);
      a2 += qw_[i + 2] = weight(i + 2);
      a3 += qw_[i + 3] = weight(i + 3);
    }
    for (; i < n; ++i) a0 += qw_[i] = weight(i);
    return (a0 + a1) + (a2 + a3);
  }

  template <class URBG>
  std::uint32_t draw(std::span<const topic_count> row, std::uint32_t exclude, URBG& rng) {
    const double q = fill_weights(row.size(), [&](std::size_t i) {
      return clamp0(row[i].count - (row[i].topic == exclude ? 1 : 0)) * coef_[row[i].topic];
    });
    return finish(q, [&](std::size_t i) { return row[i].topic; }, rng);
  }

  // Dense rows: weights for all K topics, zeros included, so the loop has no data-dependent
  // branch (skipping zeros mispredicts on half-filled rows and costs more than it saves).
  template <class URBG>
  std::uint32_t draw_dense(std::span<const lda_count> row, std::uint32_t exclude, URBG& rng) {
    const double q = fill_weights(p_.num_topics, [&](std::size_t k) {
      return clamp0(row[k] - (k == exclude ? 1 : 0)) * coef_[k];
    });
    return finish(q, [](std::size_t i) { return static_cast<std::uint32_t>(i); }, rng);
  }

  lda_params p_;
  std::vector<lda_count> nk_;        // topic totals (this worker's view)
  std::vector<double> inv_;          // 1 / (n_k + Vβ)
  std::vector<double> coef_;         // (n_dk + α) / (n_k + Vβ): the q-bucket factor per topic
  std::vector<std::uint32_t> nz_;    // topics with n_dk > 0 in the bound document
  std::vector<std::uint32_t> pos_;   // index of k in nz_, or npos
  std::span<lda_count> doc_;         // bound document's counts (empty: none bound)
  std::vector<double> qw_;           // scratch: the q weights of the word row being drawn from
  double s_ = 0, r_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Metropolis–Hastings sampler.
//
// A Metropolis–Hastings token sampler for LDA in the manner of LightLDA (Yuan et al., WWW
// 2015) and WarpLDA (Chen et al., VLDB 2016): instead of the exact full conditional
//   p(k) ∝ (n_dk + α)(n_wk + β) / (n_k + Vβ)            (counts without the token)
// it alternates two cheap proposals and accepts each with the MH ratio of the current counts:
//  - doc proposal q_d(k) ∝ n_dk + α (counts with the token): a random token of the document (its
//    topic) with probability n_d / (n_d + Kα), else a uniform topic. O(1), no table.
//  - word proposal q_w(k) ∝ n̂_wk + β, where n̂ is a snapshot of the word's row (possibly stale):
//    an alias table over its non-zero counts with probability n̂_w / (n̂_w + Kβ), else a uniform
//    topic. O(1) per draw once the table is built (O(nnz) per word, once per sweep).
// A proposal t from state s is accepted with probability min(1, p(t) q(s) / (p(s) q(t))), q being
// the proposal that drew t; with both proposals' q computed from the very values they sampled
// from, each step leaves p invariant, so the chain is exact in the limit and close after a few
// steps (`steps` doc+word pairs per token). Every count move is the same as the exact sampler's
// (one token out of its old topic, into its new one), so the count invariants are unaffected.
// ---------------------------------------------------------------------------------------------
/// A word's proposal for mh_lda_sampler: its snapshot counts n̂_wk (dense, K) and an alias table
/// over their positive values (entries name topics), with their sum n̂_w.
struct lda_word_proposal {
  std::span<const alias_entry> alias;  ///< over the topics with n̂_wk > 0 (empty when none)
  std::span<const lda_count> snapshot; ///< n̂_wk for every topic (K)
  double mass = 0;                     ///< Σ_k max(n̂_wk, 0)
};

/// Builds a word's proposal from its snapshot counts (dense, K; negative stale counts read as 0):
/// the alias entries go to the end of `pool` (they are `pool[offset, offset + size)` for the
/// returned {offset, size}); `weights`, `ids` and `scratch` are reused buffers. Returns the mass too.
struct lda_alias_slice {
  std::size_t offset = 0, size = 0;
  double mass = 0;
};
inline lda_alias_slice build_word_alias(std::span<const lda_count> snapshot, std::vector<alias_entry>& pool, std::vector<double>& weights,
                                        std::vector<std::uint32_t>& ids, std::vector<std::uint32_t>& scratch) {
  weights.clear();
  ids.clear();
  for (std::size_t k = 0; k < snapshot.size(); ++k)
    if (snapshot[k] > 0) {
      weights.push_back(static_cast<double>(snapshot[k]));
      ids.push_back(static_cast<std::uint32_t>(k));
    }
  lda_alias_slice s{pool.size(), weights.size(), 0.0};
  if (weights.empty()) return s;
  pool.resize(pool.size() + weights.size());
  s.mass = build_alias(weights, ids, std::span<alias_entry>(pool).subspan(s.offset, s.size), scratch);
  return s;
}

/// The MH sampler (see the file comment). Like sparse_lda_sampler it keeps its own copy of the
/// topic totals (the worker's view: a server value plus its own moves) and edits the bound
/// document's counts in place; the word's current counts (dense, K) belong to the caller, and
/// the sampler moves the token in them too.
class mh_lda_sampler {
 public:
  /// `steps`: doc+word proposal pairs per token (at least 1).
  mh_lda_sampler(const lda_params& p, std::uint32_t steps) : p_(p), steps_(steps), nk_(p.num_topics, 0), inv_(p.num_topics, 0.0) {
    if (p.num_topics == 0 || p.vocab_size == 0 || !(p.alpha > 0) || !(p.beta > 0))
      throw strata::error(errc::bad_input, "mh_lda_sampler: need K > 0, V > 0, alpha > 0, beta > 0");
    if (steps == 0) throw strata::error(errc::bad_input, "mh_lda_sampler: need at least 1 MH step per token");
    set_inverse();
  }

  /// Replaces the topic totals (e.g. with a fresh server row at a clock); O(K).
  void set_topic_totals(std::span<const lda_count> totals) {
    if (totals.size() < p_.num_topics) throw strata::error(errc::bad_input, "mh_lda_sampler: topic totals shorter than K");
    std::copy_n(totals.begin(), p_.num_topics, nk_.begin());
    set_inverse();
  }
  /// The sampler's current view of the topic totals n_k.
  std::span<const lda_count> topic_totals() const noexcept { return nk_; }

  /// Binds a document: its topic counts (edited in place by resample) and its tokens' topics
  /// (read by the doc proposal; the caller stores each token's new topic after resample).
  void begin_document(std::span<lda_count> doc_topic, std::span<const std::uint32_t> doc_z) noexcept {
    doc_ = doc_topic;
    z_ = doc_z;
  }

  /// Resamples one token of the bound document currently assigned `old` (its entry in doc_z
  /// still says `old`); `word_row` is the word's current counts (dense, K, INCLUDING the token).
  /// Moves the token in the document, the totals and `word_row`, and returns its new topic.
  template <class URBG>
  std::uint32_t resample(std::uint32_t old, std::span<lda_count> word_row, const lda_word_proposal& wp, URBG& rng) {
    const std::uint32_t K = p_.num_topics;
    const double alpha = p_.alpha, beta = p_.beta, v_beta = p_.vocab_size * p_.beta;
    lda_count* nd = doc_.data();
    lda_count* nw = word_row.data();
    lda_count* nk = nk_.data();
    double* inv = inv_.data();
    --nd[old], --nw[old], --nk[old];
    inv[old] = 1 / (c0(nk[old]) + v_beta);
    // The target's unnormalised weight with the token removed (stale negatives read as 0).
    auto target = [&](std::uint32_t k) { return (c0(nd[k]) + alpha) * (c0(nw[k]) + beta) * inv[k]; };
    const double n_d = static_cast<double>(z_.size()), doc_mass = n_d + K * alpha;
    const double word_mass = wp.mass + K * beta;
    std::uint32_t s = old;
    double ps = target(s);
    for (std::uint32_t step = 0; step < steps_; ++step) {
      {  // doc proposal: q_d(k) = n_dk (with the token) + α
        const std::uint64_t r = rng();
        const double u = hi(r) * doc_mass;
        const std::uint32_t t = u < n_d ? z_[std::min(static_cast<std::size_t>(u), z_.size() - 1)]
                                        : std::min(static_cast<std::uint32_t>((u - n_d) / alpha), K - 1);
        if (t != s) {
          const double pt = target(t);
          const double qs = c0(nd[s]) + (s == old ? 1 : 0) + alpha, qt = c0(nd[t]) + (t == old ? 1 : 0) + alpha;
          if (lo(r) * ps * qt < pt * qs) s = t, ps = pt;
        }
      }
      {  // word proposal: q_w(k) = n̂_wk + β
        const std::uint64_t r = rng();
        const double u = hi(r) * word_mass;
        std::uint32_t t;
        if (u < wp.mass) {  // the alias part: u / mass is uniform in [0, 1) again
          const double x = u / wp.mass * static_cast<double>(wp.alias.size());
          const std::size_t j = std::min(static_cast<std::size_t>(x), wp.alias.size() - 1);
          t = x - static_cast<double>(j) < wp.alias[j].prob ? wp.alias[j].keep : wp.alias[j].other;
        } else {
          t = std::min(static_cast<std::uint32_t>((u - wp.mass) / beta), K - 1);
        }
        if (t != s) {
          const double pt = target(t);
          const double qs = c0(wp.snapshot[s]) + beta, qt = c0(wp.snapshot[t]) + beta;
          if (lo(r) * ps * qt < pt * qs) s = t, ps = pt;
        }
      }
    }
    ++nd[s], ++nw[s], ++nk[s];
    inv[s] = 1 / (c0(nk[s]) + v_beta);
    return s;
  }

  const lda_params& params() const noexcept { return p_; }
  std::uint32_t steps() const noexcept { return steps_; }

 private:
  static double c0(lda_count n) noexcept { return n > 0 ? static_cast<double>(n) : 0.0; }
  void set_inverse() {
    for (std::uint32_t k = 0; k < p_.num_topics; ++k) inv_[k] = 1 / (c0(nk_[k]) + p_.vocab_size * p_.beta);
  }
  static double hi(std::uint64_t r) noexcept { return static_cast<double>(r >> 32) * 0x1.0p-32; }
  static double lo(std::uint64_t r) noexcept { return static_cast<double>(r & 0xffffffffu) * 0x1.0p-32; }

  lda_params p_;
  std::uint32_t steps_;
  std::vector<lda_count> nk_;
  std::vector<double> inv_;  // 1 / (n_k + Vβ), kept with nk_
  std::span<lda_count> doc_;
  std::span<const std::uint32_t> z_;
};

// ---------------------------------------------------------------------------------------------
// Sequential reference trainer.
// ---------------------------------------------------------------------------------------------

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

/// Which token sampler lda_reference uses.
enum class lda_sampler {
  plain,   ///< lda_sample_plain, O(K) per token
  sparse,  ///< sparse_lda_sampler over sparse word rows kept beside the dense table
  mh,      ///< mh_lda_sampler: Metropolis–Hastings with doc and word (alias) proposals
};

namespace detail {
/// Asks the CPU to bring the cache line at p in for reading (a hint; nothing where unsupported).
inline void prefetch_read(const void* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 0, 3);
#else
  (void)p;
#endif
}

/// Adds delta to topic k's entry of an unordered sparse row, inserting or swap-removing as the
/// count leaves or reaches 0. Linear search: rows hold at most K entries and the sampler walks
/// the whole row anyway.
inline void sparse_row_add(std::vector<topic_count>& row, std::uint32_t k, lda_count delta) {
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (row[i].topic != k) continue;
    row[i].count += delta;
    if (row[i].count == 0) {
      row[i] = row.back();
      row.pop_back();
    }
    return;
  }
  row.push_back({k, delta});
}
}  // namespace detail

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
