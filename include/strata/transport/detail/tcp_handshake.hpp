#pragma once
/// \file The TCP handshake as a free coroutine on one connected socket: both sides send a hello,
/// read the peer's, exchange auth frames when a shared secret is set, and compare protocol
/// version, secret, world size, run signature and (when dialing) the rank that answered.
///
/// Who may stop the run: the dialing side trusts the address it dialed (it comes from the host
/// list), so a mismatch there is fatal. The accepting side trusts nothing a connection says until
/// it has proved the shared secret: before that, every mismatch only closes that connection (with
/// an abort frame saying why, so a misconfigured peer learns it) and the process keeps serving.
/// Without a secret nothing is ever proved, so an accepting side never fails on a handshake; the
/// dialing side reports the mismatch, and connect_timeout names the refused connections.
/// It touches nothing but the socket and its receive buffer: what to do with the result (log,
/// close, fail the run, adopt the connection) is the caller's (tcp_dial.hpp).
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

#include <strata/core/error.hpp>
#include <strata/core/printable.hpp>
#include <strata/core/ids.hpp>
#include <strata/wire/frame.hpp>
#include <strata/wire/frame_mac.hpp>
#include <strata/wire/handshake.hpp>
#include <strata/transport/detail/tcp_reader.hpp>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace strata::detail {

/// No handshake frame may be larger than this (nor than the transport's max_frame): a connection
/// that has not authenticated costs at most this much receive buffer.
inline constexpr std::size_t handshake_max_frame = std::size_t{16} << 10;

/// How a handshake ended.
enum class handshake_status {
  ok,        ///< the peer matches: the connection may carry the run
  retry,     ///< the connection broke (`ec`: the socket error); dial again
  rejected,  ///< close this connection only (`what`: the log line; `reply`: tell the other end first)
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
  /// an abort frame carried); rejected: why; retry: the socket error
  std::error_code ec;
  /// fatal: the message for fatal_fn; rejected and retry: the line to log (empty: nothing to log)
  std::string what;
  /// rejected: the abort frame to send before closing (nullopt: close without a word)
  std::optional<wire::abort_notice> reply;
  /// the peer's hello, once read (always on ok)
  wire::hello peer;
  /// ok with a shared secret: the keys of the frames this side sends and receives
  std::optional<wire::frame_key> tx_key, rx_key;
};

/// Runs the handshake on a connected socket. `mine` is this side's hello; its nonce is replaced by
/// a fresh random one. `rx` is the connection's receive buffer: bytes that arrive after the
/// handshake's frames stay there for the connection's reader.
inline asio::awaitable<handshake_result> handshake(tcp_socket& sock, rx_buffer& rx, wire::hello mine,
                                                   handshake_options o) {
  handshake_result res;
  const bool dialer = o.expect.has_value();
  bool proved = false;  // the peer has proved the shared secret
  auto who = [&](node_id r) { return o.who ? o.who(r) : "rank " + std::to_string(r); };
  auto count = [&](std::size_t n) {
    if (o.bytes_sent) o.bytes_sent->fetch_add(n, std::memory_order_relaxed);
  };
  auto finish = [&](handshake_status s, std::error_code ec, std::string what) {
    res.status = s;
    res.ec = ec;
    res.what = std::move(what);
    return res;  // a copy: res stays set for a caller that discards the value (expect_frame)
  };
  const std::string from = dialer ? who(*o.expect) : "a connection from " + o.remote;
  // A mismatch: fatal where this side may trust the peer (it dialed, or the peer proved the
  // secret); otherwise this connection is refused, telling the other end `reply`.
  auto mismatch = [&](errc e, std::string what, std::string reply) {
    if (dialer || proved) return finish(handshake_status::fatal, make_error_code(e), std::move(what));
    res.reply = wire::abort_notice{static_cast<std::int32_t>(e), std::move(reply)};
    return finish(handshake_status::rejected, make_error_code(e), "refused " + what);
  };
  auto malformed = [&](std::error_code bad, const std::string& why) {
    return finish(handshake_status::rejected, bad, "closing " + from + ": " + bad.message() + ": " + printable(why, 200));
  };
  std::error_code ec, bad;
  const endpoint me{mine.rank, 0};

  std::random_device rd;
  for (auto& b : mine.nonce) b = static_cast<std::uint8_t>(rd());
  const std::string signature = mine.signature;
  const std::uint64_t signature_hash = mine.signature_hash;
  if (mine.secret_set) {  // sent in the auth frame, to a peer that has proved the secret
    mine.signature.clear();
    mine.signature_hash = 0;
  }
  auto send = [&](wire::frame_kind k, const auto& body) -> asio::awaitable<bool> {
    const auto bytes = wire::encode_frame(k, me, 0, body);
    co_await asio::async_write(sock, asio::buffer(bytes), redirect(ec));
    count(ec ? 0 : bytes.size());
    co_return !ec;
  };
  if (!co_await send(wire::frame_kind::hello, mine)) co_return finish(handshake_status::retry, ec, "");

  wire::frame_header h;
  std::span<const std::byte> body;
  std::string why;
  const std::size_t hs_max = std::min(o.max_frame, handshake_max_frame);
  // Reads the next frame of kind `want`: false with `res` set when it is anything else.
  auto expect_frame = [&](wire::frame_kind want) -> asio::awaitable<bool> {
    const bool ok = co_await read_frame(sock, rx, hs_max, h, body, ec, bad, why);
    if (!ok && !bad) {
      finish(handshake_status::retry, ec, dialer ? "" : "dropping " + from + ": " + describe(ec) + " during the handshake");
      co_return false;
    }
    if (bad == errc::protocol_mismatch) {
      const std::string v = "peer speaks protocol version " + std::to_string(h.version) + ", this process " +
                            std::to_string(wire::protocol_version);
      mismatch(errc::protocol_mismatch,
               "handshake with " + (dialer ? who(*o.expect) : "rank " + std::to_string(h.src.node) + " at " + o.remote) + ": " + v, v);
      co_return false;
    }
    if (!bad && h.kind == wire::frame_kind::abort) {
      auto a = wire::decode_body<wire::abort_notice>(body, bad, &why);
      if (!bad && dialer) {
        finish(handshake_status::fatal, a.error(), from + " refused the connection: " + printable(a.reason, 400));
        co_return false;
      }
      if (!bad) {
        finish(handshake_status::rejected, make_error_code(errc::bad_frame),
               "closing " + from + ": it sent an abort frame before its handshake completed (ignored): " + printable(a.reason, 200));
        co_return false;
      }
    }
    if (!bad && h.kind != want) {
      bad = make_error_code(errc::bad_frame);
      why = want == wire::frame_kind::hello ? "expected a hello frame" : "expected an auth frame";
    }
    if (bad) {
      malformed(bad, why);
      co_return false;
    }
    co_return true;
  };
  if (!co_await expect_frame(wire::frame_kind::hello)) co_return res;
  wire::hello theirs = wire::decode_body<wire::hello>(body, bad, &why);
  if (bad) co_return malformed(bad, why);
  res.peer = theirs;

  const node_id r = theirs.rank;
  const std::string peer_name = (r < mine.world ? who(r) : "rank " + std::to_string(r)) + (dialer ? "" : " connected from " + o.remote);
  const std::string hs = "handshake with " + peer_name + ": ";
  if (theirs.version != mine.version) {
    const std::string v = "protocol version differs: here " + std::to_string(mine.version) + ", peer " + std::to_string(theirs.version);
    co_return mismatch(errc::protocol_mismatch, hs + v, v);
  }
  if (mine.secret_set != theirs.secret_set) {
    const std::string v = mine.secret_set ? "a shared secret is set here but not on the peer"
                                          : "the peer requires a shared secret and none is set here (flag or STRATA_SECRET)";
    co_return mismatch(errc::auth_failed, hs + v, v);
  }
  std::string their_signature = theirs.signature;
  std::uint64_t their_hash = theirs.signature_hash;
  if (mine.secret_set) {
    wire::auth a;
    a.mac = wire::auth_mac(o.secret, theirs.nonce, mine.nonce, mine.rank);
    a.signature = signature;
    a.signature_hash = signature_hash;
    // The dialer proves the secret first; the accepting side answers only a proved peer.
    if (dialer && !co_await send(wire::frame_kind::auth, a)) co_return finish(handshake_status::retry, ec, "");
    if (!co_await expect_frame(wire::frame_kind::auth)) co_return res;
    const auto back = wire::decode_body<wire::auth>(body, bad, &why);
    if (bad) co_return malformed(bad, why);
    if (!wire::equal_macs(back.mac, wire::auth_mac(o.secret, mine.nonce, theirs.nonce, r)))
      co_return mismatch(errc::auth_failed, hs + "shared secret mismatch (the peer's proof does not match the secret set here)",
                         "shared secret mismatch");
    proved = true;
    if (!dialer && !co_await send(wire::frame_kind::auth, a)) co_return finish(handshake_status::retry, ec, "");
    their_signature = back.signature;
    their_hash = back.signature_hash;
    res.tx_key = wire::derive_frame_key(o.secret, mine.nonce, theirs.nonce, mine.rank);
    res.rx_key = wire::derive_frame_key(o.secret, theirs.nonce, mine.nonce, r);
  }
  if (theirs.world != mine.world) {
    const std::string v = "world size differs: here " + std::to_string(mine.world) + ", peer " + std::to_string(theirs.world);
    co_return mismatch(errc::config_mismatch, hs + v, v);
  }
  if (their_hash != signature_hash || their_signature != signature) {
    const std::string v = "run signature differs: " + printable(wire::signature_diff(signature, their_signature), 600);
    co_return mismatch(errc::config_mismatch, hs + v, v);
  }
  if (dialer && r != *o.expect)
    co_return mismatch(errc::config_mismatch,
                       "handshake: " + who(*o.expect) + " answered as rank " + std::to_string(r) + " (check the host list)", "");
  co_return finish(handshake_status::ok, {}, "");
}

}  // namespace strata::detail

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic pop
#endif
