#pragma once
/// \file dense_row<T>: a fixed-width contiguous row; travels as raw bytes. `strata/table/xtensor.hpp`
/// views it as an xtensor expression (`strata::as_xtensor`).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include <strata/table/row.hpp>

namespace strata {

/// A contiguous row of `width` values. Its delta form is itself (element-wise add). `inc` and `get`
/// check the column (a `strata::error` naming column and width); `operator[]` and `span()` do not.
template <class T>
class dense_row {
 public:
  using value_type = T;
  dense_row() = default;
  explicit dense_row(std::size_t width) : v_(width, T{}) {}

  void inc(col_id c, T d) {
    check_column(c, v_.size());
    v_.data()[c] += d;
  }
  void add(const dense_row& o) {
    if (v_.size() == 0) { v_ = o.v_; return; }
    T* p = v_.data();
    const T* q = o.v_.data();
    for (std::size_t i = 0, n = v_.size(); i < n; ++i) p[i] += q[i];
  }
  T get(col_id c) const {
    check_column(c, v_.size());
    return v_.data()[c];
  }
  T operator[](col_id c) const { return v_.data()[c]; }
  std::size_t width() const noexcept { return v_.size(); }
  bool empty() const noexcept { return v_.size() == 0; }
  double magnitude() const noexcept {
    double m = 0;
    for (T x : span()) m += static_cast<double>(x < T{} ? -x : x);
    return m;
  }
  std::span<const T> span() const noexcept { return {v_.data(), v_.size()}; }
  /// The values to write in place (e.g. a whole delta row at once instead of `inc` per column).
  std::span<T> mutable_span() noexcept { return {v_.data(), v_.size()}; }
  /// Sets every value to zero, keeping the storage (a recycled delta row).
  void zero() noexcept { std::fill(v_.data(), v_.data() + v_.size(), T{}); }

  void encode(byte_writer& w) const { w.put_span(span()); }
  /// Adds an encoded row of this row's width in place (no temporary row; the server's apply).
  void add_encoded(byte_reader& r) {
    const std::byte* q = r.take(v_.size() * sizeof(T)).data();
    T* p = v_.data();
    for (std::size_t i = 0, n = v_.size(); i < n; ++i) {
      T x;
      std::memcpy(&x, q + i * sizeof(T), sizeof(T));
      p[i] += x;
    }
  }
  /// Replaces the values with an encoded row of this row's width (a cache refresh, no allocation).
  void assign_encoded(byte_reader& r) { r.get_span(std::span<T>(v_.data(), v_.size())); }
  static dense_row decode(byte_reader& r, std::size_t width) {
    dense_row row(width);
    r.get_span(std::span<T>(row.v_.data(), width));
    return row;
  }
  /// Checks an encoded row without keeping it; a floating-point row must hold finite values only.
  static void skip(byte_reader& r, std::size_t width) {
    if constexpr (std::is_floating_point_v<T>) {
      const std::byte* q = r.take(width * sizeof(T)).data();
      bool finite = true;  // one pass without a branch per value; the column is found only on failure
      if constexpr (std::numeric_limits<T>::is_iec559 && (sizeof(T) == 4 || sizeof(T) == 8)) {
        // NaN and infinity are the values whose exponent bits are all set: an integer test that
        // the compiler vectorises (std::isfinite per value it does not).
        using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
        constexpr U exponent = static_cast<U>(sizeof(T) == 4 ? 0x7f800000ull : 0x7ff0000000000000ull);
        U bad = 0;
        for (std::size_t c = 0; c < width; ++c) {
          U b;
          std::memcpy(&b, q + c * sizeof(T), sizeof(T));
          bad |= static_cast<U>((b & exponent) == exponent);
        }
        finite = bad == 0;
      } else {
        for (std::size_t c = 0; c < width; ++c) {
          T x;
          std::memcpy(&x, q + c * sizeof(T), sizeof(T));
          finite &= std::isfinite(x);
        }
      }
      if (!finite)
        for (std::size_t c = 0; c < width; ++c) {
          T x;
          std::memcpy(&x, q + c * sizeof(T), sizeof(T));
          check_finite(static_cast<col_id>(c), x);
        }
    } else {
      r.skip(width * sizeof(T));
    }
  }

 private:
  std::vector<T> v_;
};

}  // namespace strata
