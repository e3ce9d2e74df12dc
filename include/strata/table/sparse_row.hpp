#pragma once
/// \file sparse_row<T>: only non-zero entries stored, sorted by column (e.g. LDA word-topic counts).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include <strata/table/row.hpp>

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
    merge(entries_view{o.e_.data(), o.e_.size()});
  }
  /// Adds an encoded delta (what `encode` writes) straight from the bytes, without a temporary row
  /// (the server's apply). The entries are checked as `decode` checks them (count, column order
  /// and range, finite values) before the row changes: a bad or short payload throws and leaves
  /// the row as it was.
  void add_encoded(byte_reader& r) { merge(take_entries(r, width_)); }
  /// Replaces the entries with an encoded row, reusing this row's storage (a cache refresh); the
  /// same checks first, the same guarantee.
  void assign_encoded(byte_reader& r) {
    const auto in = take_entries(r, width_);
    e_.resize(in.size());
    for (std::size_t j = 0; j < in.size(); ++j) e_[j] = in[j];
  }
  /// Makes room for n entries (e.g. before inc-ing a delta's columns in increasing order).
  void reserve(std::size_t n) { e_.reserve(n); }
  /// Removes every entry, keeping the entries' capacity (a recycled delta row).
  void zero() noexcept { e_.clear(); }
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
  // Sorted entries to merge in: a row's own vector, or encoded bytes read in place.
  struct entries_view {
    const entry* p;
    std::size_t n;
    std::size_t size() const noexcept { return n; }
    const entry& operator[](std::size_t j) const noexcept { return p[j]; }
  };
  struct encoded_view {
    static constexpr std::size_t stride = sizeof(col_id) + sizeof(T);
    const std::byte* p;
    std::size_t n;
    std::size_t size() const noexcept { return n; }
    entry operator[](std::size_t j) const noexcept {
      entry x;
      std::memcpy(&x.first, p + j * stride, sizeof(col_id));
      std::memcpy(&x.second, p + j * stride + sizeof(col_id), sizeof(T));
      return x;
    }
  };
  // Consumes one encoded row from r and checks it (within `width` when known) before anyone uses it.
  static encoded_view take_entries(byte_reader& r, std::size_t width) {
    const auto n = r.get<std::uint32_t>();
    if (n > r.remaining() / encoded_view::stride) throw error(errc::bad_frame, "sparse row count too large");
    const encoded_view in{r.take(std::size_t{n} * encoded_view::stride).data(), n};
    for (std::size_t j = 0; j < n; ++j) {
      const entry x = in[j];
      if ((width != 0 && x.first >= width) || (j > 0 && x.first <= in[j - 1].first))
        throw error(errc::bad_frame, "sparse row column out of order or range");
      check_finite(x.first, x.second);
    }
    return in;
  }
  // Adds the sorted entries o[0..m) in place (see add).
  template <class Src>
  void merge(const Src& o) {
    const std::size_t n = e_.size(), m = o.size();
    if (m == 0) return;
    if (n == 0) {  // reuses this row's capacity
      e_.resize(m);
      for (std::size_t j = 0; j < m; ++j) e_[j] = o[j];
      return;
    }
    if (m * 8 <= n) {  // a few columns into a long row: binary search each, shift in place
      auto from = e_.begin();
      for (std::size_t j = 0; j < m; ++j) {
        const entry x = o[j];
        from = std::lower_bound(from, e_.end(), x.first, [](const entry& a, col_id k) { return a.first < k; });
        if (from != e_.end() && from->first == x.first) {
          from->second += x.second;
          if (from->second == T{}) from = e_.erase(from);
          else ++from;
        } else {
          from = e_.insert(from, x) + 1;  // within capacity: no allocation
        }
      }
      return;
    }
    // Columns of o that this row lacks.
    std::size_t fresh = 0;
    for (std::size_t i = 0, j = 0; j < m;) {
      const col_id c = o[j].first;
      if (i == n || c < e_[i].first) ++fresh, ++j;
      else if (e_[i].first < c) ++i;
      else ++i, ++j;
    }
    if (fresh == 0) {  // the common steady state: every column already present
      std::size_t out = 0;
      for (std::size_t i = 0, j = 0; i < n; ++i) {
        entry x = e_[i];
        if (j < m && o[j].first == x.first) x.second += o[j++].second;
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
      const entry y = o[static_cast<std::size_t>(j)];
      if (i >= 0 && e_[i].first > y.first) {
        e_[out--] = e_[i--];
      } else if (i >= 0 && e_[i].first == y.first) {
        const T s = e_[i].second + y.second;
        if (s != T{}) e_[out--] = entry(e_[i].first, s);
        --i, --j;
      } else {
        e_[out--] = y;
        --j;
      }
    }
    // e_[0..i] are in place; dropped zeros left a gap (i, out] to close.
    if (out > i) {
      std::move(e_.begin() + (out + 1), e_.end(), e_.begin() + (i + 1));
      e_.resize(e_.size() - static_cast<std::size_t>(out - i));
    }
  }

  std::size_t width_ = 0;
  std::vector<entry> e_;
};

}  // namespace strata
