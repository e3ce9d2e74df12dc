#pragma once
/// \file Walker's alias method (Vose's construction): a discrete distribution over n outcomes
/// built in O(n) and sampled in O(1) from one 64-bit random number. The entries can live in a
/// caller's pool (many small tables, e.g. one per word, without an allocation each) or in an
/// `alias_table`.
#include <strata/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace strata::ml {

/// One bucket of an alias table: with probability `prob` the draw is `keep`, else `other`.
struct alias_entry {
  double prob = 1;
  std::uint32_t keep = 0;
  std::uint32_t other = 0;
};

/// Builds an alias table over `weights` (non-negative, not all zero) into `out` (same length);
/// outcome i is reported as `ids[i]`. `scratch` is reused between calls. Returns the total weight.
inline double build_alias(std::span<const double> weights, std::span<const std::uint32_t> ids, std::span<alias_entry> out,
                          std::vector<std::uint32_t>& scratch) {
  const std::size_t n = weights.size();
  if (ids.size() != n || out.size() != n) throw strata::error(errc::bad_input, "build_alias: weights, ids and out differ in length");
  double total = 0;
  for (double w : weights) {
    if (!(w >= 0)) throw strata::error(errc::bad_input, "build_alias: a weight is negative or NaN");
    total += w;
  }
  if (n == 0 || !(total > 0)) throw strata::error(errc::bad_input, "build_alias: no outcome has a positive weight");
  // scratch: a stack of small outcomes (scaled weight < 1) growing from the front and one of
  // large outcomes growing from the back (together never more than n).
  scratch.resize(n);
  std::size_t ns = 0, nl = n;
  const double scale = static_cast<double>(n) / total;
  for (std::size_t i = 0; i < n; ++i) {
    out[i].prob = weights[i] * scale;
    out[i].keep = out[i].other = ids[i];
    if (out[i].prob < 1) scratch[ns++] = static_cast<std::uint32_t>(i);
    else scratch[--nl] = static_cast<std::uint32_t>(i);
  }
  // Each small bucket is filled up by a large outcome, which loses that much and may become small.
  while (ns > 0 && nl < n) {
    const std::uint32_t lo = scratch[--ns], hi = scratch[nl];
    out[lo].other = ids[hi];
    out[hi].prob = (out[hi].prob + out[lo].prob) - 1;
    if (out[hi].prob < 1) {
      ++nl;
      scratch[ns++] = hi;
    }
  }
  // Rounding leftovers: whatever is still listed holds (about) 1.
  for (std::size_t i = 0; i < ns; ++i) out[scratch[i]].prob = 1;
  for (std::size_t i = nl; i < n; ++i) out[scratch[i]].prob = 1;
  return total;
}

/// One draw from an alias table built by build_alias: the high 32 bits of `r` pick the bucket,
/// the low 32 bits decide between its two outcomes.
inline std::uint32_t alias_draw(std::span<const alias_entry> table, std::uint64_t r) noexcept {
  const std::size_t j = static_cast<std::size_t>(((r >> 32) * table.size()) >> 32);
  const double u = static_cast<double>(r & 0xffffffffu) * 0x1.0p-32;
  return u < table[j].prob ? table[j].keep : table[j].other;
}

/// An alias table that owns its entries: outcomes 0..n-1 with the given weights.
class alias_table {
 public:
  alias_table() = default;
  /// Builds over `weights` (non-negative, not all zero); throws strata::error(bad_input) otherwise.
  explicit alias_table(std::span<const double> weights) { build(weights); }
  void build(std::span<const double> weights) {
    ids_.resize(weights.size());
    for (std::size_t i = 0; i < ids_.size(); ++i) ids_[i] = static_cast<std::uint32_t>(i);
    entries_.resize(weights.size());
    total_ = build_alias(weights, ids_, entries_, scratch_);
  }
  /// An outcome in [0, size()) drawn with probability weight / total.
  template <class URBG>
  std::uint32_t operator()(URBG& rng) const {
    return alias_draw(entries_, static_cast<std::uint64_t>(rng()));
  }
  std::size_t size() const noexcept { return entries_.size(); }
  double total() const noexcept { return total_; }
  std::span<const alias_entry> entries() const noexcept { return entries_; }

 private:
  std::vector<alias_entry> entries_;
  std::vector<std::uint32_t> ids_, scratch_;
  double total_ = 0;
};

}  // namespace strata::ml
