#pragma once
/// \file LDA's exact token samplers (ml/lda.hpp): the full conditional, the plain O(K) sampler (the
/// reference), and the SparseLDA bucket sampler (Yao, Mimno & McCallum, KDD 2009) that touches
/// only non-zero counts; with the sparse-row helpers the trainers share.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <strata/core/error.hpp>
#include <strata/ml/lda_loglik.hpp>

namespace strata::ml {

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

  /// The same in O(|topics| log) instead of O(K), for large K: `topics` names every topic with
  /// n_dk > 0 (repeats and zero topics allowed: the document's tokens' topics will do). Only the
  /// previous document's topics and these are touched; the s bucket keeps its incremental value
  /// (set_topic_totals and the O(K) overload recompute it). The previous document's counts are
  /// not read, so its scratch may already be cleared.
  void begin_document(std::span<lda_count> doc_topic, std::span<const std::uint32_t> topics) {
    for (auto k : nz_) coef_[k] = p_.alpha * inv_[k], pos_[k] = npos;  // back to "n_dk = 0"
    nz_.clear();
    doc_ = doc_topic;
    r_ = 0;
    for (auto k : topics) {
      if (k >= p_.num_topics)
        throw strata::error(errc::bad_input, "sparse_lda_sampler: topic " + std::to_string(k) + " of " + std::to_string(p_.num_topics));
      const double ndk = n_dk(k);
      if (pos_[k] != npos || !(ndk > 0)) continue;
      pos_[k] = static_cast<std::uint32_t>(nz_.size());
      nz_.push_back(k);
      coef_[k] = (ndk + p_.alpha) * inv_[k];
    }
    // In topic order, as the O(K) binding lists them: the r bucket is walked in this order, so the
    // same random number draws the same topic either way (and r is summed in the same order).
    std::sort(nz_.begin(), nz_.end());
    for (std::uint32_t i = 0; i < nz_.size(); ++i) pos_[nz_[i]] = i, r_ += p_.beta * n_dk(nz_[i]) * inv_[nz_[i]];
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

}  // namespace strata::ml
