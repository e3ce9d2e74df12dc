#pragma once
/// \file Wire framing: a fixed 32-byte header (magic, protocol version, kind, destination slot,
/// payload length, source endpoint) followed by a cereal binary payload; bounded, never-UB
/// decoding with std::error_code; and the handshake messages of the TCP transport.
///
/// Header layout (all integers little-endian, whatever the host):
///
///     off  size  field
///       0     4  magic "STRA"
///       4     4  protocol version (wire::protocol_version)
///       8     1  kind (frame_kind)
///       9     3  reserved, zero
///      12     4  destination slot (the destination node is the receiving process)
///      16     8  payload length in bytes
///      24     4  source node
///      28     4  source slot
///
/// The payload is byte-for-byte what `cereal::BinaryOutputArchive` writes for the body (native
/// byte order, which strata requires to be little-endian), produced and parsed by two small
/// archives of our own: the writer appends straight to the frame buffer (no stream), and the
/// reader is bounded by the payload, so a hostile length inside a payload (a blob or container
/// size) fails as errc::bad_frame instead of allocating what it claims.
#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <cereal/cereal.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/string.hpp>

#include "../core/error.hpp"
#include "messages.hpp"

namespace strata::wire {

static_assert(std::endian::native == std::endian::little,
              "strata's wire payloads are native binary: strata supports little-endian hosts only");

/// Bytes in every frame header.
inline constexpr std::size_t frame_header_size = 32;
/// Default upper bound on a whole frame (header + payload); a configurable limit of the transport.
inline constexpr std::size_t default_max_frame = std::size_t{256} << 20;
/// The first four bytes of every frame.
inline constexpr std::array<std::byte, 4> frame_magic{std::byte{'S'}, std::byte{'T'}, std::byte{'R'},
                                                      std::byte{'A'}};

/// What a frame carries.
enum class frame_kind : std::uint8_t {
  message = 1,    ///< a wire::message for endpoint {receiver, dst_slot}
  hello = 2,      ///< handshake: who I am and what I run (wire::hello)
  auth = 3,       ///< handshake: proof of the shared secret (wire::auth)
  heartbeat = 4,  ///< empty; keeps an idle connection's read timeout from expiring
  bye = 5,        ///< empty; "my run has finished": the shutdown barrier
  abort = 6,      ///< the sender stops the run (wire::abort_notice says why)
};

/// A decoded frame header.
struct frame_header {
  std::uint32_t version = protocol_version;
  frame_kind kind = frame_kind::message;
  std::uint32_t dst_slot = 0;
  std::uint64_t length = 0;  ///< payload bytes after the header
  endpoint src{};
};

/// Handshake, first frame on every connection, sent by both sides. Everything here is compared:
/// protocol version, world size and the run signature (tables, consistency model and shape).
struct hello {
  std::uint32_t version = protocol_version;
  node_id rank = 0;
  std::uint32_t world = 0;
  std::uint64_t signature_hash = 0;  ///< first 8 bytes of SHA-256(signature)
  std::string signature;             ///< the text, so a mismatch can name the differing field
  std::array<std::uint8_t, 16> nonce{};  ///< fresh random challenge for the peer's auth frame
  bool secret_set = false;           ///< this side requires the shared-secret exchange
  template <class Ar>
  void serialize(Ar& ar) { ar(version, rank, world, signature_hash, signature, nonce, secret_set); }
};

/// Handshake, second frame when a shared secret is set:
/// mac = HMAC-SHA256(secret, "strata-auth-v1" | peer's nonce | my nonce | my rank (u32 LE)).
/// It proves knowledge of the secret without sending it, and the peer's fresh nonce stops a
/// recorded mac from being replayed. It authenticates the handshake only: later frames are
/// neither encrypted nor individually authenticated (use a private network or a tunnel for that).
struct auth {
  std::array<std::uint8_t, 32> mac{};
  template <class Ar>
  void serialize(Ar& ar) { ar(mac); }
};

/// Sent before a process closes its connections because the run failed; the receiver stops too.
struct abort_notice {
  std::int32_t code = 0;  ///< a strata::errc value
  std::string reason;
  template <class Ar>
  void serialize(Ar& ar) { ar(code, reason); }
};

/// An empty body (heartbeat, bye).
struct empty_body {
  template <class Ar>
  void serialize(Ar&) {}
};

// ---- payload archives -------------------------------------------------------------------------

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

// ---- SHA-256 and HMAC-SHA256 (handshake only; not on the data path) ---------------------------

namespace detail {

/// FIPS 180-4 SHA-256, incremental.
class sha256 {
 public:
  sha256() noexcept { reset(); }
  void reset() noexcept {
    h_ = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au, 0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    len_ = 0;
    fill_ = 0;
  }
  void update(const void* data, std::size_t n) noexcept {
    const auto* p = static_cast<const std::uint8_t*>(data);
    len_ += n;
    while (n > 0) {
      const std::size_t take = std::min<std::size_t>(n, 64 - fill_);
      std::memcpy(buf_.data() + fill_, p, take);
      fill_ += take;
      p += take;
      n -= take;
      if (fill_ == 64) {
        block(buf_.data());
        fill_ = 0;
      }
    }
  }
  void update(std::string_view s) noexcept { update(s.data(), s.size()); }
  std::array<std::uint8_t, 32> finish() noexcept {
    const std::uint64_t bits = len_ * 8;
    const std::uint8_t pad = 0x80;
    update(&pad, 1);
    const std::uint8_t zero = 0;
    while (fill_ != 56) update(&zero, 1);
    std::array<std::uint8_t, 8> l{};
    for (int i = 0; i < 8; ++i) l[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
    update(l.data(), 8);
    std::array<std::uint8_t, 32> out{};
    for (std::size_t i = 0; i < 8; ++i)
      for (std::size_t j = 0; j < 4; ++j) out[i * 4 + j] = static_cast<std::uint8_t>(h_[i] >> (24 - 8 * j));
    return out;
  }
  static std::array<std::uint8_t, 32> of(std::string_view s) noexcept {
    sha256 h;
    h.update(s);
    return h.finish();
  }

 private:
  static constexpr std::uint32_t rotr(std::uint32_t x, int n) noexcept { return (x >> n) | (x << (32 - n)); }
  void block(const std::uint8_t* p) noexcept {
    static constexpr std::array<std::uint32_t, 64> k{
        0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
        0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
        0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
        0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
        0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
        0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
        0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
        0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u};
    std::array<std::uint32_t, 64> w{};
    for (std::size_t i = 0; i < 16; ++i)
      w[i] = (std::uint32_t{p[4 * i]} << 24) | (std::uint32_t{p[4 * i + 1]} << 16) | (std::uint32_t{p[4 * i + 2]} << 8) |
             std::uint32_t{p[4 * i + 3]};
    for (std::size_t i = 16; i < 64; ++i) {
      const auto s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const auto s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    auto [a, b, c, d, e, f, g, h] = h_;
    for (std::size_t i = 0; i < 64; ++i) {
      const auto t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const auto t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h_[0] += a; h_[1] += b; h_[2] += c; h_[3] += d;
    h_[4] += e; h_[5] += f; h_[6] += g; h_[7] += h;
  }
  std::array<std::uint32_t, 8> h_{};
  std::array<std::uint8_t, 64> buf_{};
  std::uint64_t len_ = 0;
  std::size_t fill_ = 0;
};

/// RFC 2104 HMAC with SHA-256.
inline std::array<std::uint8_t, 32> hmac_sha256(std::string_view key, std::span<const std::uint8_t> msg) noexcept {
  std::array<std::uint8_t, 64> k{};
  if (key.size() > 64) {
    const auto d = sha256::of(key);
    std::memcpy(k.data(), d.data(), d.size());
  } else if (!key.empty()) {
    std::memcpy(k.data(), key.data(), key.size());
  }
  std::array<std::uint8_t, 64> ipad{}, opad{};
  for (std::size_t i = 0; i < 64; ++i) {
    ipad[i] = static_cast<std::uint8_t>(k[i] ^ 0x36);
    opad[i] = static_cast<std::uint8_t>(k[i] ^ 0x5c);
  }
  sha256 in;
  in.update(ipad.data(), ipad.size());
  in.update(msg.data(), msg.size());
  const auto inner = in.finish();
  sha256 out;
  out.update(opad.data(), opad.size());
  out.update(inner.data(), inner.size());
  return out.finish();
}

inline void put_le(std::byte* p, std::uint64_t v, int n) noexcept {
  for (int i = 0; i < n; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
inline std::uint64_t get_le(const std::byte* p, int n) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= std::uint64_t{std::to_integer<std::uint8_t>(p[i])} << (8 * i);
  return v;
}

}  // namespace detail

/// The first 8 bytes of SHA-256 of a run signature, as compared in the handshake.
inline std::uint64_t signature_hash(std::string_view signature) noexcept {
  const auto d = detail::sha256::of(signature);
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | d[static_cast<std::size_t>(i)];
  return v;
}

/// The auth mac a process of rank `rank` sends, answering the peer's `peer_nonce` (see wire::auth).
inline std::array<std::uint8_t, 32> auth_mac(std::string_view secret, const std::array<std::uint8_t, 16>& peer_nonce,
                                             const std::array<std::uint8_t, 16>& own_nonce, node_id rank) noexcept {
  static constexpr std::string_view label = "strata-auth-v1";
  std::array<std::uint8_t, label.size() + 16 + 16 + 4> msg{};
  std::memcpy(msg.data(), label.data(), label.size());
  std::memcpy(msg.data() + label.size(), peer_nonce.data(), 16);
  std::memcpy(msg.data() + label.size() + 16, own_nonce.data(), 16);
  for (int i = 0; i < 4; ++i) msg[label.size() + 32 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(rank >> (8 * i));
  return detail::hmac_sha256(secret, msg);
}

/// Compares two macs in time independent of where they differ.
inline bool equal_macs(const std::array<std::uint8_t, 32>& a, const std::array<std::uint8_t, 32>& b) noexcept {
  std::uint8_t d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = static_cast<std::uint8_t>(d | (a[i] ^ b[i]));
  return d == 0;
}

// ---- encoding ---------------------------------------------------------------------------------

/// Appends one frame (header + cereal payload of `body`) to `out`. A frame over `max_frame`
/// bytes is not appended and sets errc::frame_too_large.
template <class Body>
void encode_frame(std::vector<std::byte>& out, frame_kind kind, endpoint src, std::uint32_t dst_slot, const Body& body,
                  std::size_t max_frame, std::error_code& ec) {
  ec.clear();
  const std::size_t start = out.size();
  if constexpr (std::is_same_v<Body, message>) {  // one allocation for the whole frame
    const std::size_t blob = std::visit(
        [](const auto& x) -> std::size_t {
          if constexpr (requires { x.payload; }) return x.payload.bytes.size();
          else return 0;
        },
        body);
    out.reserve(start + frame_header_size + 64 + blob);
  }
  out.resize(start + frame_header_size);
  {
    detail::frame_out ar(out);
    ar(body);
  }
  const std::size_t len = out.size() - start - frame_header_size;
  if (out.size() - start > max_frame) {
    out.resize(start);
    ec = make_error_code(errc::frame_too_large);
    return;
  }
  std::byte* h = out.data() + start;
  std::memcpy(h, frame_magic.data(), 4);
  detail::put_le(h + 4, protocol_version, 4);
  h[8] = static_cast<std::byte>(kind);
  h[9] = h[10] = h[11] = std::byte{0};
  detail::put_le(h + 12, dst_slot, 4);
  detail::put_le(h + 16, len, 8);
  detail::put_le(h + 24, src.node, 4);
  detail::put_le(h + 28, src.slot, 4);
}

/// Throwing form: one frame in a fresh buffer; throws strata::error(frame_too_large) over the limit.
template <class Body>
std::vector<std::byte> encode_frame(frame_kind kind, endpoint src, std::uint32_t dst_slot, const Body& body,
                                    std::size_t max_frame = default_max_frame) {
  std::vector<std::byte> out;
  std::error_code ec;
  encode_frame(out, kind, src, dst_slot, body, max_frame, ec);
  if (ec) throw error(ec, "frame for slot " + std::to_string(dst_slot) + " over the limit of " +
                              std::to_string(max_frame) + " bytes");
  return out;
}

/// A parameter-server message from `src` to `dst` as one frame (`dst.node` is implied by the connection).
inline std::vector<std::byte> encode_message(endpoint src, endpoint dst, const message& m,
                                             std::size_t max_frame = default_max_frame) {
  return encode_frame(frame_kind::message, src, dst.slot, m, max_frame);
}

// ---- decoding ---------------------------------------------------------------------------------

/// Parses a frame header from the first frame_header_size bytes of `in`.
/// Errors: errc::bad_frame (too few bytes, bad magic, unknown kind), errc::protocol_mismatch (the
/// header is still filled in, so the caller can name the sender), errc::frame_too_large (header +
/// payload over `max_frame`). `why`, when given, receives a one-line reason.
inline frame_header decode_header(std::span<const std::byte> in, std::size_t max_frame, std::error_code& ec,
                                  std::string* why = nullptr) {
  ec.clear();
  frame_header h;
  auto fail = [&](errc e, std::string reason) {
    ec = make_error_code(e);
    if (why) *why = std::move(reason);
    return h;
  };
  if (in.size() < frame_header_size)
    return fail(errc::bad_frame, "truncated header: " + std::to_string(in.size()) + " of " +
                                     std::to_string(frame_header_size) + " bytes");
  const std::byte* p = in.data();
  if (std::memcmp(p, frame_magic.data(), 4) != 0) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", static_cast<unsigned>(detail::get_le(p, 4)));
    return fail(errc::bad_frame, std::string("bad magic ") + hex + " (not a strata peer)");
  }
  h.version = static_cast<std::uint32_t>(detail::get_le(p + 4, 4));
  const auto kind = std::to_integer<std::uint8_t>(p[8]);
  h.dst_slot = static_cast<std::uint32_t>(detail::get_le(p + 12, 4));
  h.length = detail::get_le(p + 16, 8);
  h.src.node = static_cast<node_id>(detail::get_le(p + 24, 4));
  h.src.slot = static_cast<std::uint32_t>(detail::get_le(p + 28, 4));
  h.kind = static_cast<frame_kind>(kind);
  if (h.version != protocol_version)
    return fail(errc::protocol_mismatch, "protocol version " + std::to_string(h.version) + ", this process speaks " +
                                             std::to_string(protocol_version));
  if (kind < 1 || kind > 6) return fail(errc::bad_frame, "unknown frame kind " + std::to_string(kind));
  if (h.length > max_frame || h.length + frame_header_size > max_frame)
    return fail(errc::frame_too_large, "frame of " + std::to_string(h.length + frame_header_size) +
                                           " bytes over the limit of " + std::to_string(max_frame));
  return h;
}

/// Throwing form of decode_header.
inline frame_header decode_header(std::span<const std::byte> in, std::size_t max_frame = default_max_frame) {
  std::error_code ec;
  std::string why;
  auto h = decode_header(in, max_frame, ec, &why);
  if (ec) throw error(ec, why);
  return h;
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

/// One whole frame held in memory: its header and a view of its payload.
struct frame_view {
  frame_header header;
  std::span<const std::byte> payload;
};

/// Splits a buffer holding exactly one frame. Errors as decode_header, plus errc::bad_frame when
/// the buffer is shorter or longer than the header says.
inline frame_view split_frame(std::span<const std::byte> in, std::size_t max_frame, std::error_code& ec,
                              std::string* why = nullptr) {
  frame_view v;
  v.header = decode_header(in, max_frame, ec, why);
  if (ec) return v;
  if (in.size() - frame_header_size != v.header.length) {
    ec = make_error_code(errc::bad_frame);
    if (why)
      *why = "frame holds " + std::to_string(in.size() - frame_header_size) + " payload bytes, header says " +
             std::to_string(v.header.length);
    return v;
  }
  v.payload = in.subspan(frame_header_size);
  return v;
}

/// Decodes a buffer holding exactly one message frame: its header and the message.
inline std::pair<frame_header, message> decode_message(std::span<const std::byte> in, std::size_t max_frame,
                                                       std::error_code& ec, std::string* why = nullptr) {
  auto v = split_frame(in, max_frame, ec, why);
  if (ec) return {v.header, message{}};
  if (v.header.kind != frame_kind::message) {
    ec = make_error_code(errc::bad_frame);
    if (why) *why = "not a message frame (kind " + std::to_string(static_cast<int>(v.header.kind)) + ")";
    return {v.header, message{}};
  }
  return {v.header, decode_body<message>(v.payload, ec, why)};
}

}  // namespace strata::wire
