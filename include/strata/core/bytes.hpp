#pragma once
/// \file Appending and reading trivially copyable values and spans as raw bytes (the wire payload).
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include <strata/core/error.hpp>

namespace strata {

/// Appends raw bytes to a growing buffer.
class byte_writer {
 public:
  explicit byte_writer(std::vector<std::byte>& out) noexcept : out_(&out) {}
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void put(const T& v) {
    put_bytes(&v, sizeof(T));
  }
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void put_span(std::span<const T> s) {
    put_bytes(s.data(), s.size_bytes());
  }
  void put_bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    // A message is a few small puts (ids, a header) and then rows: growing an empty buffer by
    // exact fits would allocate three times for a one-row message, so it starts at min_capacity.
    if (out_->capacity() == 0) out_->reserve(std::max(n, min_capacity));
    out_->insert(out_->end(), b, b + n);  // no zero fill before the copy (resize would)
  }
  static constexpr std::size_t min_capacity = 256;
  /// Bytes written so far.
  std::size_t size() const noexcept { return out_->size(); }
  /// Makes room for `more` bytes beyond those written, so that a long run of puts copies once.
  void reserve(std::size_t more) { out_->reserve(out_->size() + more); }

 private:
  std::vector<std::byte>* out_;
};

/// Reads raw bytes in order; running past the end throws errc::bad_frame (never reads out of bounds).
class byte_reader {
 public:
  explicit byte_reader(std::span<const std::byte> in) noexcept : in_(in) {}
  template <class T>
    requires std::is_trivially_copyable_v<T>
  T get() {
    T v;
    get_bytes(&v, sizeof(T));
    return v;
  }
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void get_span(std::span<T> s) {
    get_bytes(s.data(), s.size_bytes());
  }
  void get_bytes(void* p, std::size_t n) {
    if (n > in_.size() - pos_) throw error(errc::bad_frame, "payload truncated");
    if (n) std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
  }
  void skip(std::size_t n) {
    if (n > in_.size() - pos_) throw error(errc::bad_frame, "payload truncated");
    pos_ += n;
  }
  /// The next n bytes, in place (read them with memcpy: they need not be aligned).
  std::span<const std::byte> take(std::size_t n) {
    if (n > in_.size() - pos_) throw error(errc::bad_frame, "payload truncated");
    pos_ += n;
    return in_.subspan(pos_ - n, n);
  }
  std::size_t remaining() const noexcept { return in_.size() - pos_; }
  bool done() const noexcept { return pos_ == in_.size(); }

 private:
  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
};

}  // namespace strata
