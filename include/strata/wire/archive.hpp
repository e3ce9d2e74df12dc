#pragma once
/// \file The payload archives of wire frames: a frame payload is byte-for-byte what
/// `cereal::BinaryOutputArchive` writes for the body (native byte order, which strata requires to
/// be little-endian), produced and parsed by two small archives of our own. The writer appends
/// straight to the frame buffer (no stream); the reader is bounded by the payload, so a hostile
/// length inside a payload (a blob or container size) fails as errc::bad_frame instead of
/// allocating what it claims. encode_body / decode_body are the whole-payload entry points.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include <cereal/cereal.hpp>

#include <strata/core/error.hpp>
#include <strata/wire/messages.hpp>

namespace strata::wire {

static_assert(std::endian::native == std::endian::little,
              "strata's wire payloads are native binary: strata supports little-endian hosts only");

namespace detail {

/// Writes what cereal::BinaryOutputArchive writes, appending to a byte vector.
class frame_out : public cereal::OutputArchive<frame_out, cereal::AllowEmptyClassElision> {
 public:
  explicit frame_out(std::vector<std::byte>& out) : OutputArchive(this), out_(&out) {}
  void saveBinary(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out_->insert(out_->end(), b, b + n);  // no zero-fill before the copy (resize would)
  }

 private:
  std::vector<std::byte>* out_;
};

/// Reads what cereal::BinaryOutputArchive wrote, from a span; running past its end throws
/// cereal::Exception, and container sizes larger than the bytes left are refused up front.
class frame_in : public cereal::InputArchive<frame_in, cereal::AllowEmptyClassElision> {
 public:
  explicit frame_in(std::span<const std::byte> in) : InputArchive(this), in_(in) {}
  void loadBinary(void* p, std::size_t n) {
    if (n > in_.size() - pos_)
      throw cereal::Exception("payload truncated: " + std::to_string(n) + " bytes wanted, " +
                              std::to_string(in_.size() - pos_) + " left");
    if (n) std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
  }
  std::size_t remaining() const noexcept { return in_.size() - pos_; }
  /// The next n bytes as a view (for copying a blob without zero-filling it first).
  std::span<const std::byte> take(std::size_t n) {
    if (n > in_.size() - pos_) throw cereal::Exception("payload truncated");
    auto v = in_.subspan(pos_, n);
    pos_ += n;
    return v;
  }

 private:
  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
};

template <class T>
  requires std::is_arithmetic_v<T>
void CEREAL_SAVE_FUNCTION_NAME(frame_out& ar, const T& t) {
  ar.saveBinary(std::addressof(t), sizeof(t));
}
template <class T>
  requires std::is_arithmetic_v<T>
void CEREAL_LOAD_FUNCTION_NAME(frame_in& ar, T& t) {
  ar.loadBinary(std::addressof(t), sizeof(t));
}
template <class Ar, class T>
  requires(std::is_same_v<Ar, frame_in> || std::is_same_v<Ar, frame_out>)
void CEREAL_SERIALIZE_FUNCTION_NAME(Ar& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}
template <class T>
void CEREAL_SAVE_FUNCTION_NAME(frame_out& ar, const cereal::SizeTag<T>& t) {
  ar(t.size);
}
/// A size prefix (string, vector, map) cannot exceed the bytes left: every element takes >= 1 byte
/// for the types strata sends, so this refuses a hostile size before anything is allocated.
template <class T>
void CEREAL_LOAD_FUNCTION_NAME(frame_in& ar, cereal::SizeTag<T>& t) {
  ar(t.size);
  if (static_cast<std::uint64_t>(t.size) > ar.remaining())
    throw cereal::Exception("container size " + std::to_string(t.size) + " exceeds the payload");
}
template <class T>
void CEREAL_SAVE_FUNCTION_NAME(frame_out& ar, const cereal::BinaryData<T>& bd) {
  ar.saveBinary(bd.data, static_cast<std::size_t>(bd.size));
}
template <class T>
void CEREAL_LOAD_FUNCTION_NAME(frame_in& ar, cereal::BinaryData<T>& bd) {
  ar.loadBinary(bd.data, static_cast<std::size_t>(bd.size));
}

}  // namespace detail

/// blob's own load trusts its length prefix; on the wire that length is checked against the
/// payload first (selected for frame_in only, through the cereal::specialize below).
inline void CEREAL_LOAD_FUNCTION_NAME(detail::frame_in& ar, blob& b) {
  std::uint64_t n = 0;
  ar(n);
  if (n > ar.remaining())
    throw cereal::Exception("blob of " + std::to_string(n) + " bytes exceeds the payload");
  const auto v = ar.take(static_cast<std::size_t>(n));
  b.bytes.assign(v.begin(), v.end());
}

}  // namespace strata::wire

namespace cereal {
template <>
struct specialize<strata::wire::detail::frame_in, strata::wire::blob, specialization::non_member_load_save> {};
}  // namespace cereal
CEREAL_SETUP_ARCHIVE_TRAITS(strata::wire::detail::frame_in, strata::wire::detail::frame_out)

namespace strata::wire {

/// Appends the payload of `body` (what cereal::BinaryOutputArchive writes for it) to `out`.
template <class Body>
void encode_body(std::vector<std::byte>& out, const Body& body) {
  detail::frame_out ar(out);
  ar(body);
}

/// Parses a payload as a `Body` (wire::message, hello, auth, abort_notice, empty_body). The whole
/// payload must be consumed. Errors: errc::bad_frame with a reason.
template <class Body>
Body decode_body(std::span<const std::byte> payload, std::error_code& ec, std::string* why = nullptr) {
  ec.clear();
  Body b{};
  try {
    detail::frame_in ar(payload);
    ar(b);
    if (ar.remaining() != 0) {
      ec = make_error_code(errc::bad_frame);
      if (why) *why = std::to_string(ar.remaining()) + " trailing bytes after the payload";
      return Body{};
    }
  } catch (const std::exception& e) {  // cereal::Exception (truncated, bad variant index) or bad_alloc
    ec = make_error_code(errc::bad_frame);
    if (why) *why = std::string("payload does not parse: ") + e.what();
    return Body{};
  }
  return b;
}

/// Throwing form of decode_body.
template <class Body>
Body decode_body(std::span<const std::byte> payload) {
  std::error_code ec;
  std::string why;
  auto b = decode_body<Body>(payload, ec, &why);
  if (ec) throw error(ec, why);
  return b;
}

}  // namespace strata::wire
