#pragma once
/// \file The TCP handshake as a free coroutine on one connected socket: both sides send a hello,
/// read the peer's, exchange auth frames when a shared secret is set, and compare protocol
/// version, secret, world size, run signature and (when dialing) the rank that answered. Both
/// sides check everything, so both stop with the same diagnosis. It touches nothing but the
/// socket and its receive buffer: what to do with the result (log, close, fail the run, adopt
/// the connection) is the caller's (tcp_dial.hpp).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include <asio/awaitable.hpp>
#include <asio/buffer.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>

#include "../../core/error.hpp"
#include "../../core/ids.hpp"
#include "../../wire/frame.hpp"
#include "../../wire/handshake.hpp"
#include "tcp_reader.hpp"

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace strata::detail {

/// No handshake frame may be larger than this (nor than the transport's max_frame).
inline constexpr std::size_t handshake_max_frame = std::size_t{1} << 20;

/// How a handshake ended.
enum class handshake_status {
  ok,        ///< the peer matches: the connection may carry the run
  retry,     ///< the connection broke (`ec`: the socket error); dial again
  rejected,  ///< the peer sent a frame that does not parse: close this connection only (`what`: log line)
  fatal,     ///< a mismatch, or the peer refused us: the run cannot go on (`ec`, `what`: for fatal_fn)
};

/// What the handshake needs besides the socket and this side's hello.
struct handshake_options {
  /// the shared secret; must be non-empty exactly when the hello's secret_set is
  std::string secret;
  /// the transport's frame limit (handshake frames are further held to handshake_max_frame)
  std::size_t max_frame = wire::default_max_frame;
  /// the rank dialed; nullopt for an accepted connection
  std::optional<node_id> expect;
  /// the far end as ip:port, for messages
  std::string remote = "?";
  /// names a rank in messages, e.g. "rank 1 (host:port)"; empty: "rank 1"
  std::function<std::string(node_id)> who;
  /// when given, counts the bytes written
  std::atomic<std::uint64_t>* bytes_sent = nullptr;
};

/// The outcome of a handshake.
struct handshake_result {
  handshake_status status = handshake_status::retry;
  /// fatal: the strata::errc to report (protocol_mismatch, auth_failed, config_mismatch, or what
  /// an abort frame carried); rejected: the decoding error; retry: the socket error
  std::error_code ec;
  /// fatal: the message for fatal_fn; rejected and retry: the line to log (empty: nothing to log)
  std::string what;
  /// the peer's hello, once read (always on ok)
  wire::hello peer;
};

/// Runs the handshake on a connected socket. `mine` is this side's hello; its nonce is replaced by
/// a fresh random one. `rx` is the connection's receive buffer: bytes that arrive after the
/// handshake's frames stay there for the connection's reader.
inline asio::awaitable<handshake_result> handshake(tcp_socket& sock, rx_buffer& rx, wire::hello mine,
                                                   handshake_options o) {
  handshake_result res;
  auto who = [&](node_id r) { return o.who ? o.who(r) : "rank " + std::to_string(r); };
  auto count = [&](std::size_t n) {
    if (o.bytes_sent) o.bytes_sent->fetch_add(n, std::memory_order_relaxed);
  };
  auto finish = [&](handshake_status s, std::error_code ec, std::string what) {
    res.status = s;
    res.ec = ec;
    res.what = std::move(what);
    return std::move(res);
  };
  const auto fatal = [&](errc e, std::string what) { return finish(handshake_status::fatal, make_error_code(e), std::move(what)); };
  std::error_code ec, bad;
  const endpoint me{mine.rank, 0};

  const std::string from = o.expect ? who(*o.expect) : "a connection from " + o.remote;
  std::random_device rd;
  for (auto& b : mine.nonce) b = static_cast<std::uint8_t>(rd());
  auto hello_bytes = wire::encode_frame(wire::frame_kind::hello, me, 0, mine);
  co_await asio::async_write(sock, asio::buffer(hello_bytes), redirect(ec));
  count(ec ? 0 : hello_bytes.size());
  if (ec) co_return finish(handshake_status::retry, ec, "");

  wire::frame_header h;
  std::span<const std::byte> body;
  std::string why;
  const std::size_t hs_max = std::min(o.max_frame, handshake_max_frame);
  bool ok = co_await read_frame(sock, rx, hs_max, h, body, ec, bad, why);
  if (!ok && !bad)
    co_return finish(handshake_status::retry, ec,
                     o.expect ? "" : "dropping " + from + ": " + describe(ec) + " during the handshake");
  if (bad == errc::protocol_mismatch)
    co_return fatal(errc::protocol_mismatch,
                    "handshake with " + (o.expect ? who(*o.expect) : "rank " + std::to_string(h.src.node) + " at " + o.remote) +
                        ": peer speaks protocol version " + std::to_string(h.version) + ", this process " +
                        std::to_string(wire::protocol_version));
  if (!bad && h.kind == wire::frame_kind::abort) {
    auto a = wire::decode_body<wire::abort_notice>(body, bad, &why);
    if (!bad) co_return finish(handshake_status::fatal, abort_code(a.code), from + " refused the connection: " + a.reason);
  }
  if (!bad && h.kind != wire::frame_kind::hello) {
    bad = make_error_code(errc::bad_frame);
    why = "expected a hello frame";
  }
  wire::hello theirs;
  if (!bad) theirs = wire::decode_body<wire::hello>(body, bad, &why);
  if (bad) co_return finish(handshake_status::rejected, bad, "closing " + from + ": " + bad.message() + ": " + why);
  res.peer = theirs;

  const node_id r = theirs.rank;
  const std::string peer_name =
      (r < mine.world ? who(r) : "rank " + std::to_string(r)) + (o.expect ? "" : " connected from " + o.remote);
  const std::string hs = "handshake with " + peer_name + ": ";
  if (theirs.version != mine.version)
    co_return fatal(errc::protocol_mismatch, hs + "protocol version differs: here " + std::to_string(mine.version) +
                                                 ", peer " + std::to_string(theirs.version));
  if (mine.secret_set != theirs.secret_set)
    co_return fatal(errc::auth_failed,
                    hs + (mine.secret_set ? "a shared secret is set here but not on the peer"
                                          : "the peer requires a shared secret and none is set here (flag or STRATA_SECRET)"));
  if (mine.secret_set) {
    wire::auth a;
    a.mac = wire::auth_mac(o.secret, theirs.nonce, mine.nonce, mine.rank);
    auto auth_bytes = wire::encode_frame(wire::frame_kind::auth, me, 0, a);
    co_await asio::async_write(sock, asio::buffer(auth_bytes), redirect(ec));
    if (ec) co_return finish(handshake_status::retry, ec, "");
    count(auth_bytes.size());
    ok = co_await read_frame(sock, rx, hs_max, h, body, ec, bad, why);
    if (!ok && !bad) co_return finish(handshake_status::retry, ec, "");
    wire::auth back;
    if (!bad && h.kind != wire::frame_kind::auth) {
      bad = make_error_code(errc::bad_frame);
      why = "expected an auth frame";
    }
    if (!bad) back = wire::decode_body<wire::auth>(body, bad, &why);
    if (bad) co_return finish(handshake_status::rejected, bad, "closing " + from + ": " + bad.message() + ": " + why);
    if (!wire::equal_macs(back.mac, wire::auth_mac(o.secret, mine.nonce, theirs.nonce, r)))
      co_return fatal(errc::auth_failed,
                      hs + "shared secret mismatch (the peer's proof does not match the secret set here)");
  }
  if (theirs.world != mine.world)
    co_return fatal(errc::config_mismatch, hs + "world size differs: here " + std::to_string(mine.world) + ", peer " +
                                               std::to_string(theirs.world));
  if (theirs.signature_hash != mine.signature_hash || theirs.signature != mine.signature)
    co_return fatal(errc::config_mismatch,
                    hs + "run signature differs: " + wire::signature_diff(mine.signature, theirs.signature));
  if (o.expect && r != *o.expect)
    co_return fatal(errc::config_mismatch, "handshake: " + who(*o.expect) + " answered as rank " + std::to_string(r) +
                                               " (check the host list)");
  co_return finish(handshake_status::ok, {}, "");
}

}  // namespace strata::detail

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic pop
#endif
