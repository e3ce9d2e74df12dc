#pragma once
/// \file Small statistics: a running mean/variance (Welford) and an integer histogram.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

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
  /// Adds `times` copies of x.
  void add(double x, std::uint64_t times) noexcept {
    if (times == 0) return;
    running_stats same;
    same.n_ = times;
    same.mean_ = same.min_ = same.max_ = x;
    merge(same);
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
/// Adding is a counter increment (every read records one, so it must be cheap): values in
/// [dense_lo, dense_lo + dense_n) go to an array, others to a map; statistics are computed from
/// the counts when asked.
class int_histogram {
 public:
  static constexpr std::int64_t dense_lo = -16;
  static constexpr std::size_t dense_n = 256;

  void add(std::int64_t v, std::uint64_t times = 1) {
    const auto i = static_cast<std::uint64_t>(v - dense_lo);
    if (i < dense_n) {
      if (dense_.empty()) dense_.assign(dense_n, 0);
      dense_[i] += times;
    } else {
      sparse_[v] += times;
    }
    n_ += times;
  }
  void merge(const int_histogram& o) {
    for (auto [v, c] : o.bins()) add(v, c);
  }
  /// Value -> count, in increasing value order.
  std::map<std::int64_t, std::uint64_t> bins() const {
    std::map<std::int64_t, std::uint64_t> out(sparse_);
    for (std::size_t i = 0; i < dense_.size(); ++i)
      if (dense_[i]) out[static_cast<std::int64_t>(i) + dense_lo] = dense_[i];
    return out;
  }
  /// Count, mean, variance, min and max of the values added.
  running_stats stats() const {
    running_stats all;
    for (auto [v, c] : bins()) all.add(static_cast<double>(v), c);
    return all;
  }
  std::uint64_t count() const noexcept { return n_; }
  void clear() {
    dense_.clear();
    sparse_.clear();
    n_ = 0;
  }

 private:
  std::vector<std::uint64_t> dense_;
  std::map<std::int64_t, std::uint64_t> sparse_;
  std::uint64_t n_ = 0;
};

}  // namespace strata
