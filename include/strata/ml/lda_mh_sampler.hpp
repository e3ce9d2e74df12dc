#pragma once
/// \file LDA's Metropolis–Hastings token sampler with O(1) proposals (LightLDA / WarpLDA style;
/// ml/lda.hpp): the words' alias-table proposals and `mh_lda_sampler`.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <strata/core/error.hpp>
#include <strata/ml/alias_table.hpp>
#include <strata/ml/lda_loglik.hpp>

namespace strata::ml {

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
namespace detail {
// The table over the positive counts that `each(add)` hands to add(topic, count), appended to
// pool (the build_word_alias overloads below differ only in how they walk a row).
template <class Each>
lda_alias_slice append_alias(Each each, std::vector<alias_entry>& pool, std::vector<double>& weights, std::vector<std::uint32_t>& ids,
                             std::vector<std::uint32_t>& scratch) {
  weights.clear();
  ids.clear();
  each([&](std::size_t k, lda_count n) {
    if (n > 0) weights.push_back(static_cast<double>(n)), ids.push_back(static_cast<std::uint32_t>(k));
  });
  lda_alias_slice s{pool.size(), weights.size(), 0.0};
  if (weights.empty()) return s;
  pool.resize(pool.size() + weights.size());
  s.mass = build_alias(weights, ids, std::span<alias_entry>(pool).subspan(s.offset, s.size), scratch);
  return s;
}
}  // namespace detail

inline lda_alias_slice build_word_alias(std::span<const lda_count> snapshot, std::vector<alias_entry>& pool, std::vector<double>& weights,
                                        std::vector<std::uint32_t>& ids, std::vector<std::uint32_t>& scratch) {
  const auto each = [&](auto add) {
    for (std::size_t k = 0; k < snapshot.size(); ++k) add(k, snapshot[k]);
  };
  return detail::append_alias(each, pool, weights, ids, scratch);
}

/// One topic's current and snapshot counts side by side: in a dense row of K of them
/// (lda_paired_word_counts) the two counts a draw reads share a cache line.
struct lda_count_pair {
  lda_count current = 0;
  lda_count snapshot = 0;
};

/// The alias table over a paired dense row's positive snapshot counts (topic = index): the same
/// table as build_word_alias of the snapshot alone.
inline lda_alias_slice build_word_alias(std::span<const lda_count_pair> row, std::vector<alias_entry>& pool, std::vector<double>& weights,
                                        std::vector<std::uint32_t>& ids, std::vector<std::uint32_t>& scratch) {
  const auto each = [&](auto add) {
    for (std::size_t k = 0; k < row.size(); ++k) add(k, row[k].snapshot);
  };
  return detail::append_alias(each, pool, weights, ids, scratch);
}

/// One topic of a word's sparse counts: current and snapshot side by side (see lda_sparse_word_counts).
struct lda_word_entry {
  std::uint32_t topic = 0;
  lda_count current = 0;
  lda_count snapshot = 0;
};

/// The same from sparse counts (entries sorted by topic; their snapshot counts): the same table
/// as the dense snapshot they stand for gives.
inline lda_alias_slice build_word_alias(std::span<const lda_word_entry> row, std::vector<alias_entry>& pool, std::vector<double>& weights,
                                        std::vector<std::uint32_t>& ids, std::vector<std::uint32_t>& scratch) {
  const auto each = [&](auto add) {
    for (const auto& e : row) add(e.topic, e.snapshot);
  };
  return detail::append_alias(each, pool, weights, ids, scratch);
}

/// A word's counts as mh_lda_sampler reads and moves them: its current counts n_wk (this
/// worker's view) and its snapshot n̂_wk (what the word proposal was built from), both dense.
struct lda_dense_word_counts {
  lda_count* current;         ///< K counts, moved by the sampler
  const lda_count* snapshot;  ///< K counts
  struct pair {
    lda_count current, snapshot;
  };
  pair at(std::uint32_t k) const noexcept { return {current[k], snapshot[k]}; }
  void add(std::uint32_t k, lda_count d) noexcept { current[k] += d; }
};

/// A word's counts dense and paired (K lda_count_pair): one load finds both counts of a topic.
struct lda_paired_word_counts {
  lda_count_pair* row;  ///< K pairs, their current counts moved by the sampler
  using pair = lda_dense_word_counts::pair;
  pair at(std::uint32_t k) const noexcept { return {row[k].current, row[k].snapshot}; }
  void add(std::uint32_t k, lda_count d) noexcept { row[k].current += d; }
};

/// A word's counts kept sparse, sorted by topic, with the current and the snapshot count of each
/// topic in one entry, so one search finds both; a topic absent is 0 in both. Entries whose
/// counts fall to 0 stay (a later move back costs no insertion; the net change is current −
/// snapshot per entry). Memory: 12 bytes per topic the word has held, instead of 2·K counts.
class lda_sparse_word_counts {
 public:
  explicit lda_sparse_word_counts(std::vector<lda_word_entry>& row) noexcept : row_(row) {}
  using pair = lda_dense_word_counts::pair;
  pair at(std::uint32_t k) const noexcept {
    const std::size_t i = find(k);
    if (i < row_.size() && row_[i].topic == k) return {row_[i].current, row_[i].snapshot};
    return {0, 0};
  }
  void add(std::uint32_t k, lda_count d) {
    const std::size_t i = find(k);
    if (i < row_.size() && row_[i].topic == k) row_[i].current += d;
    else row_.insert(row_.begin() + static_cast<std::ptrdiff_t>(i), lda_word_entry{k, d, 0});
  }

 private:
  // The first entry whose topic is >= k (branch-free halving: the comparisons do not mispredict).
  std::size_t find(std::uint32_t k) const noexcept {
    const lda_word_entry* base = row_.data();
    std::size_t n = row_.size();
    if (n == 0) return 0;
    while (n > 1) {
      const std::size_t half = n / 2;
      base += half * static_cast<std::size_t>(base[half - 1].topic < k);
      n -= half;
    }
    return static_cast<std::size_t>(base - row_.data()) + (base->topic < k ? 1 : 0);
  }
  std::vector<lda_word_entry>& row_;
};

/// The MH sampler (see the comment above). Like sparse_lda_sampler it keeps its own copy of the
/// topic totals (the worker's view: a server value plus its own moves) and edits the bound
/// document's counts in place; the word's counts belong to the caller (dense, or sparse:
/// lda_dense_word_counts / lda_sparse_word_counts), and the sampler moves the token in them too.
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
  /// still says `old`); `word_row` is the word's current counts (dense, K, INCLUDING the token)
  /// and `wp` its proposal, whose snapshot the MH ratio reads.
  /// Moves the token in the document, the totals and `word_row`, and returns its new topic.
  template <class URBG>
  std::uint32_t resample(std::uint32_t old, std::span<lda_count> word_row, const lda_word_proposal& wp, URBG& rng) {
    lda_dense_word_counts w{word_row.data(), wp.snapshot.data()};
    return resample(old, w, wp.alias, wp.mass, rng);
  }
  /// The same for any word counts `w` (lda_dense_word_counts, lda_sparse_word_counts: at(k) gives
  /// the current count INCLUDING the token and the snapshot count; add(k, d) moves), with the
  /// word proposal's alias table over the snapshot's positive counts and their sum `mass`.
  template <class WordCounts, class URBG>
  std::uint32_t resample(std::uint32_t old, WordCounts& w, std::span<const alias_entry> alias, double mass, URBG& rng) {
    const std::uint32_t K = p_.num_topics;
    const double alpha = p_.alpha, beta = p_.beta, v_beta = p_.vocab_size * p_.beta;
    lda_count* nd = doc_.data();
    lda_count* nk = nk_.data();
    double* inv = inv_.data();
    --nd[old], --nk[old];
    w.add(old, -1);
    inv[old] = 1 / (c0(nk[old]) + v_beta);
    // The target's unnormalised weight with the token removed (stale negatives read as 0).
    auto target = [&](std::uint32_t k, lda_count nwk) { return (c0(nd[k]) + alpha) * (c0(nwk) + beta) * inv[k]; };
    const double n_d = static_cast<double>(z_.size()), doc_mass = n_d + K * alpha;
    const double word_mass = mass + K * beta;
    std::uint32_t s = old;
    auto cs = w.at(s);
    double ps = target(s, cs.current);
    for (std::uint32_t step = 0; step < steps_; ++step) {
      {  // doc proposal: q_d(k) = n_dk (with the token) + α
        const std::uint64_t r = rng();
        const double u = hi(r) * doc_mass;
        const std::uint32_t t = u < n_d ? z_[std::min(static_cast<std::size_t>(u), z_.size() - 1)]
                                        : std::min(static_cast<std::uint32_t>((u - n_d) / alpha), K - 1);
        if (t != s) {
          const auto ct = w.at(t);
          const double pt = target(t, ct.current);
          const double qs = c0(nd[s]) + (s == old ? 1 : 0) + alpha, qt = c0(nd[t]) + (t == old ? 1 : 0) + alpha;
          if (lo(r) * ps * qt < pt * qs) s = t, ps = pt, cs = ct;
        }
      }
      {  // word proposal: q_w(k) = n̂_wk + β
        const std::uint64_t r = rng();
        const double u = hi(r) * word_mass;
        std::uint32_t t;
        if (u < mass) {  // the alias part: u / mass is uniform in [0, 1) again
          const double x = u / mass * static_cast<double>(alias.size());
          const std::size_t j = std::min(static_cast<std::size_t>(x), alias.size() - 1);
          t = x - static_cast<double>(j) < alias[j].prob ? alias[j].keep : alias[j].other;
        } else {
          t = std::min(static_cast<std::uint32_t>((u - mass) / beta), K - 1);
        }
        if (t != s) {
          const auto ct = w.at(t);
          const double pt = target(t, ct.current);
          const double qs = c0(cs.snapshot) + beta, qt = c0(ct.snapshot) + beta;
          if (lo(r) * ps * qt < pt * qs) s = t, ps = pt, cs = ct;
        }
      }
    }
    ++nd[s], ++nk[s];
    w.add(s, +1);
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

}  // namespace strata::ml
