#pragma once
/// \file Wire framing: a fixed 32-byte header (magic, protocol version, kind, destination slot,
/// payload length, source endpoint) followed by a cereal binary payload (wire/archive.hpp);
/// bounded, never-UB decoding with std::error_code; the frame size limit; and the bodies of the
/// control frames that are not part of the handshake (abort, heartbeat, bye). The handshake's
/// bodies are in wire/handshake.hpp.
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
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <cereal/types/string.hpp>

#include <strata/core/error.hpp>
#include <strata/core/ids.hpp>
#include <strata/wire/archive.hpp>
#include <strata/wire/messages.hpp>

namespace strata::wire {

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

/// Sent before a process closes its connections because the run failed; the receiver stops too.
struct abort_notice {
  std::int32_t code = 0;  ///< a strata::errc value
  std::string reason;
  template <class Ar>
  void serialize(Ar& ar) { ar(code, reason); }
  /// The notice of a run that failed with `ec`: a strata::errc travels as its value, another code as 0.
  static abort_notice of(std::error_code ec, std::string reason) {
    return {ec.category() == strata_category() ? ec.value() : 0, std::move(reason)};
  }
  /// The error it carries, as a strata::errc (peer_lost when it is not one).
  std::error_code error() const {
    if (code <= 0 || code > static_cast<int>(errc::shutdown)) return make_error_code(errc::peer_lost);
    return make_error_code(static_cast<errc>(code));
  }
};

/// An empty body (heartbeat, bye).
struct empty_body {
  template <class Ar>
  void serialize(Ar&) {}
};

namespace detail {

/// Writes the low `n` bytes of `v` at `p`, little-endian.
inline void put_le(std::byte* p, std::uint64_t v, int n) noexcept {
  for (int i = 0; i < n; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
/// Reads an `n`-byte little-endian integer at `p`.
inline std::uint64_t get_le(const std::byte* p, int n) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= std::uint64_t{std::to_integer<std::uint8_t>(p[i])} << (8 * i);
  return v;
}

}  // namespace detail

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
  encode_body(out, body);
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
