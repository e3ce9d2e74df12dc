#pragma once
/// \file The receiving side of a TCP connection: its receive buffer and the frame reader that the
/// handshake and the peer's reader coroutine share (one read_some usually brings many small frames,
/// and bytes read past the handshake stay for the reader). Also the error wording both use.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include <asio/awaitable.hpp>
#include <asio/buffer.hpp>
#include <asio/error.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>

#include <strata/core/error.hpp>
#include <strata/wire/frame.hpp>

// GCC 12 reports a false -Wmismatched-new-delete on Asio's awaitable frames (its own operator new
// and delete; GCC bug 109224, fixed in GCC 13). Silenced for the tcp headers only.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace strata::detail {

using tcp_socket = asio::ip::tcp::socket;

/// Completion token of the tcp coroutines: errors land in `ec` instead of being thrown.
inline auto redirect(std::error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

/// Received bytes of one connection; the unread ones are buf[head, tail). Small until the
/// connection is adopted as a peer's (handshake frames are small; a stranger costs little).
struct rx_buffer {
  static constexpr std::size_t handshake_size = std::size_t{4} << 10, peer_size = std::size_t{64} << 10;
  std::vector<std::byte> buf = std::vector<std::byte>(handshake_size);
  std::size_t head = 0, tail = 0;
};

/// Makes at least `n` bytes available in `r` (compacting or growing the buffer as needed).
inline asio::awaitable<void> fill(tcp_socket& sock, rx_buffer& r, std::size_t n, std::error_code& ec) {
  if (r.tail - r.head >= n) co_return;
  if (r.buf.size() - r.head < n) {
    if (r.head > 0) {
      std::memmove(r.buf.data(), r.buf.data() + r.head, r.tail - r.head);
      r.tail -= r.head;
      r.head = 0;
    }
    if (r.buf.size() < n) r.buf.resize(std::max(n, std::min(2 * r.buf.size(), n + (std::size_t{1} << 20))));
  }
  while (r.tail - r.head < n) {
    const std::size_t k =
        co_await sock.async_read_some(asio::buffer(r.buf.data() + r.tail, r.buf.size() - r.tail), redirect(ec));
    if (ec) co_return;
    r.tail += k;
  }
}

/// Reads one frame: its header and a view of its payload, valid until the next read into `r`.
/// `trailer` bytes (a frame's tag) follow the payload and are read with it, right after
/// `payload` in the buffer. Buffered: one read_some usually brings many small frames. Returns
/// false on a socket error (`ec` set) or a frame that does not decode (`bad` set, with `why`).
inline asio::awaitable<bool> read_frame(tcp_socket& sock, rx_buffer& r, std::size_t max, wire::frame_header& hdr,
                                        std::span<const std::byte>& payload, std::error_code& ec,
                                        std::error_code& bad, std::string& why, std::size_t trailer = 0) {
  ec.clear();
  bad.clear();
  co_await fill(sock, r, wire::frame_header_size, ec);
  if (ec) co_return false;
  hdr = wire::decode_header(std::span(r.buf.data() + r.head, wire::frame_header_size), max, bad, &why);
  if (bad) co_return false;
  const std::size_t need = wire::frame_header_size + static_cast<std::size_t>(hdr.length) + trailer;
  co_await fill(sock, r, need, ec);
  if (ec) co_return false;
  payload = std::span<const std::byte>(r.buf.data() + r.head + wire::frame_header_size,
                                       static_cast<std::size_t>(hdr.length));
  r.head += need;
  co_return true;
}

/// A socket error as said in diagnostics.
inline std::string describe(const std::error_code& ec) {
  if (ec == asio::error::eof) return "connection closed by the peer (end of file)";
  if (ec == asio::error::connection_reset) return "connection reset by the peer";
  return ec.message();
}

}  // namespace strata::detail

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic pop
#endif
