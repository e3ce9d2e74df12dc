#pragma once
/// \file sparse_row<T>: only non-zero entries stored, sorted by column (e.g. LDA word-topic counts).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "row.hpp"

namespace strata {

/// A row that stores (column, value) pairs for non-zero values only; an entry that reaches zero is removed.
/// `inc` and `get` check the column against the width (a `strata::error` naming both).
template <class T>
class sparse_row {
 public:
  using value_type = T;
  using entry = std::pair<col_id, T>;
  sparse_row() = default;
  explicit sparse_row(std::size_t width) : width_(width) {}

  void inc(col_id c, T d) {
    check_column(c, width_);
    auto it = std::lower_bound(e_.begin(), e_.end(), c, [](const entry& a, col_id k) { return a.first < k; });
    if (it != e_.end() && it->first == c) {
      it->second += d;
      if (it->second == T{}) e_.erase(it);
    } else if (d != T{}) {
      e_.insert(it, {c, d});
    }
  }
  /// Adds every entry of `o` (sums that reach zero are removed). In place: the row grows by the
  /// columns new to it (one resize, amortised like push_back) and the two sorted runs merge from
  /// the back, so an add that fits the row's capacity allocates nothing.
  void add(const sparse_row& o) {
    if (width_ == 0) width_ = o.width_;
    if (o.e_.empty()) return;
    if (e_.empty()) { e_ = o.e_; return; }  // reuses this row's capacity
    const std::size_t n = e_.size(), m = o.e_.size();
    if (m * 8 <= n) {  // a few columns into a long row: binary search each, shift in place
      auto from = e_.begin();
      for (const auto& [c, d] : o.e_) {
        from = std::lower_bound(from, e_.end(), c, [](const entry& a, col_id k) { return a.first < k; });
        if (from != e_.end() && from->first == c) {
          from->second += d;
          if (from->second == T{}) from = e_.erase(from);
          else ++from;
        } else {
          from = e_.insert(from, entry(c, d)) + 1;  // within capacity: no allocation
        }
      }
      return;
    }
    // Columns of o that this row lacks.
    std::size_t fresh = 0;
    for (std::size_t i = 0, j = 0; j < m;) {
      if (i == n || o.e_[j].first < e_[i].first) ++fresh, ++j;
      else if (e_[i].first < o.e_[j].first) ++i;
      else ++i, ++j;
    }
    if (fresh == 0) {  // the common steady state: every column already present
      std::size_t out = 0;
      for (std::size_t i = 0, j = 0; i < n; ++i) {
        entry x = e_[i];
        if (j < m && o.e_[j].first == x.first) x.second += o.e_[j++].second;
        if (x.second != T{}) e_[out++] = x;
      }
      e_.resize(out);
      return;
    }
    if (e_.capacity() < n + fresh) e_.reserve(std::max(n + fresh, 2 * e_.capacity()));
    e_.resize(n + fresh);
    // Merge from the back into [0, n + fresh). Invariant: out - i = (o's new columns still to
    // place) + (zero sums dropped so far) >= 0, so a write never lands on an unread entry.
    std::ptrdiff_t i = static_cast<std::ptrdiff_t>(n) - 1, j = static_cast<std::ptrdiff_t>(m) - 1,
                   out = static_cast<std::ptrdiff_t>(n + fresh) - 1;
    while (j >= 0) {
      if (i >= 0 && e_[i].first > o.e_[j].first) {
        e_[out--] = e_[i--];
      } else if (i >= 0 && e_[i].first == o.e_[j].first) {
        const T s = e_[i].second + o.e_[j].second;
        if (s != T{}) e_[out--] = entry(e_[i].first, s);
        --i, --j;
      } else {
        e_[out--] = o.e_[j--];
      }
    }
    // e_[0..i] are in place; dropped zeros left a gap (i, out] to close.
    if (out > i) {
      std::move(e_.begin() + (out + 1), e_.end(), e_.begin() + (i + 1));
      e_.resize(e_.size() - static_cast<std::size_t>(out - i));
    }
  }
  /// Makes room for n entries (e.g. before inc-ing a delta's columns in increasing order).
  void reserve(std::size_t n) { e_.reserve(n); }
  T get(col_id c) const {
    check_column(c, width_);
    auto it = std::lower_bound(e_.begin(), e_.end(), c, [](const entry& a, col_id k) { return a.first < k; });
    return (it != e_.end() && it->first == c) ? it->second : T{};
  }
  T operator[](col_id c) const { return get(c); }
  std::size_t width() const noexcept { return width_; }
  bool empty() const noexcept { return width_ == 0; }
  double magnitude() const noexcept {
    double m = 0;
    for (const auto& [c, x] : e_) m += static_cast<double>(x < T{} ? -x : x);
    return m;
  }
  /// The non-zero entries, sorted by column.
  const std::vector<entry>& entries() const noexcept { return e_; }
  std::size_t nnz() const noexcept { return e_.size(); }

  void encode(byte_writer& w) const {
    w.put(static_cast<std::uint32_t>(e_.size()));
    for (const auto& [c, v] : e_) { w.put(c); w.put(v); }
  }
  static sparse_row decode(byte_reader& r, std::size_t width) {
    sparse_row row(width);
    const auto n = r.get<std::uint32_t>();
    if (n > r.remaining() / (sizeof(col_id) + sizeof(T))) throw error(errc::bad_frame, "sparse row count too large");
    row.e_.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      const auto c = r.get<col_id>();
      const auto v = r.get<T>();
      if (c >= width || (!row.e_.empty() && c <= row.e_.back().first))
        throw error(errc::bad_frame, "sparse row column out of order or range");
      row.e_.emplace_back(c, v);
    }
    return row;
  }
  static void skip(byte_reader& r, std::size_t width) {
    const auto n = r.get<std::uint32_t>();
    if (n > r.remaining() / (sizeof(col_id) + sizeof(T))) throw error(errc::bad_frame, "sparse row count too large");
    col_id prev = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      const auto c = r.get<col_id>();
      const auto v = r.get<T>();
      if (c >= width || (i > 0 && c <= prev)) throw error(errc::bad_frame, "sparse row column out of order or range");
      check_finite(c, v);  // a floating-point delta must be finite
      prev = c;
    }
  }

 private:
  std::size_t width_ = 0;
  std::vector<entry> e_;
};

}  // namespace strata
