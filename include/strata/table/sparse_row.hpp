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
  void add(const sparse_row& o) {
    if (width_ == 0) width_ = o.width_;
    if (e_.empty()) { e_ = o.e_; return; }
    std::vector<entry> m;
    m.reserve(e_.size() + o.e_.size());
    auto a = e_.begin(), b = o.e_.begin();
    while (a != e_.end() || b != o.e_.end()) {
      if (b == o.e_.end() || (a != e_.end() && a->first < b->first)) m.push_back(*a++);
      else if (a == e_.end() || b->first < a->first) m.push_back(*b++);
      else {
        T s = a->second + b->second;
        if (s != T{}) m.emplace_back(a->first, s);
        ++a, ++b;
      }
    }
    e_.swap(m);
  }
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
