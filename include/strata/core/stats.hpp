#pragma once
/// \file Small statistics: a running mean/variance (Welford) and an integer histogram.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>

namespace strata {

/// Running count, mean, variance, min and max of a stream of values (Welford's algorithm).
class running_stats {
 public:
  void add(double x) noexcept {
    ++n_;
    const double d = x - mean_;
    mean_ += d / static_cast<double>(n_);
    m2_ += d * (x - mean_);
    min_ = std::min(min_, x);
    max_ = std::max(max_, x);
  }
  /// Merges another stream's statistics into this one (Chan et al.).
  void merge(const running_stats& o) noexcept {
    if (o.n_ == 0) return;
    if (n_ == 0) { *this = o; return; }
    const double n = static_cast<double>(n_ + o.n_);
    const double d = o.mean_ - mean_;
    m2_ += o.m2_ + d * d * static_cast<double>(n_) * static_cast<double>(o.n_) / n;
    mean_ += d * static_cast<double>(o.n_) / n;
    n_ += o.n_;
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
  }
  std::uint64_t count() const noexcept { return n_; }
  double mean() const noexcept { return n_ ? mean_ : 0.0; }
  /// Population variance.
  double variance() const noexcept { return n_ ? m2_ / static_cast<double>(n_) : 0.0; }
  double min() const noexcept { return n_ ? min_ : 0.0; }
  double max() const noexcept { return n_ ? max_ : 0.0; }

 private:
  std::uint64_t n_ = 0;
  double mean_ = 0, m2_ = 0;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = -std::numeric_limits<double>::infinity();
};

/// Counts of integer values (e.g. observed staleness, which may be negative), with their stats.
class int_histogram {
 public:
  void add(std::int64_t v, std::uint64_t times = 1) {
    bins_[v] += times;
    for (std::uint64_t i = 0; i < times; ++i) stats_.add(static_cast<double>(v));
  }
  void merge(const int_histogram& o) {
    for (auto [v, c] : o.bins_) bins_[v] += c;
    stats_.merge(o.stats_);
  }
  /// Value -> count, in increasing value order.
  const std::map<std::int64_t, std::uint64_t>& bins() const noexcept { return bins_; }
  const running_stats& stats() const noexcept { return stats_; }
  std::uint64_t count() const noexcept { return stats_.count(); }
  void clear() { bins_.clear(); stats_ = {}; }

 private:
  std::map<std::int64_t, std::uint64_t> bins_;
  running_stats stats_;
};

}  // namespace strata
