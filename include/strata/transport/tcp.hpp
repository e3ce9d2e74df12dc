#pragma once
/// \file tcp: the transport between processes (and machines), on standalone Asio with C++20
/// coroutines and the frames of wire/frame.hpp. This header is the public interface; the parts
/// are in transport/detail/: tcp_peer.hpp (connection, send queue, direct writes), tcp_reader.hpp
/// (receive buffer, frame reader), tcp_handshake.hpp (the handshake, a free coroutine),
/// tcp_dial.hpp (listen, dial, accept, start), tcp_session.hpp (send, writer, reader),
/// tcp_liveness.hpp (heartbeats, watchdog), tcp_shutdown.hpp (abort, the shutdown barrier).
/// The settings are tcp_settings.hpp.
///
/// Shape. One process per rank; one TCP connection per pair of ranks (the higher rank dials the
/// lower one, so there is never a pair of crossing connections to dedupe); one comm thread running
/// an io_context. `send` encodes the frame on the caller's thread; on an idle connection it writes
/// it at once with one non-blocking send(2) (no hop to the comm thread: this halves the latency of
/// a get that misses the cache), otherwise, or for what the socket buffer does not take, it appends
/// it to the peer's queue; it never waits for the network. A writer coroutine per peer takes
/// everything queued and hands it to one gather `async_write`; a reader coroutine per peer reads
/// into a buffer (many small frames per read), decodes frames and calls the deliver_fn bound to the
/// destination endpoint. Messages between endpoints of this process never touch a socket. FIFO per
/// pair of endpoints holds because each pair shares one queue and one connection, and a direct
/// write happens only when nothing is queued or being written.
///
/// Handshake: both sides send a hello with protocol version, rank, world size and a fresh nonce,
/// and (without a secret) the run signature, its hash and its text, so a mismatch names the
/// differing field. With a shared secret the dialer proves it first (HMAC-SHA256 over the nonces,
/// wire::auth), the acceptor answers only a proved peer, the signature travels in the auth frames,
/// and every later frame carries an AES-GMAC tag (wire/frame_mac.hpp). The dialing side trusts the
/// address it dialed: a mismatch there is fatal, and fatal_fn names the field, rank and address.
/// The accepting side trusts nothing a connection says before it has proved the secret: it refuses
/// that connection (an abort frame saying why, then close), logs it rate-limited, and keeps
/// serving. Listening on a non-loopback address without a secret is refused unless
/// config::insecure. The whole model: docs/security.md.
///
/// Bad input. A malformed or oversized frame closes that connection with a reason on stderr (or
/// config::log). From a connection that has not completed its handshake (a port scanner, a stray
/// client), that is all: the process goes on serving its peers. From an established peer it is
/// also fatal: a parameter-server run cannot finish without every shard, so fatal_fn reports the
/// rank and address at once, and the others learn it from an abort frame or from the closed
/// connection; every process of the run ends with an error instead of waiting.
///
/// Dead peers. End of file or reset without a preceding "bye" is reported at once as
/// errc::peer_lost naming the rank and address. An idle connection carries a heartbeat every
/// peer_timeout / 4, and a peer silent for peer_timeout (a hung process, a cut cable) is reported
/// as lost too, so a run never waits longer than peer_timeout for a dead peer.
///
/// Shutdown barrier. system::run returns when this process's workers are done and its shard has
/// seen every worker finish; a peer may still be waiting for this shard's last acknowledgements
/// or replies. `stop()` therefore (1) queues a "bye" after everything already queued, (2) keeps
/// delivering and sending while it waits, up to peer_timeout, for a bye from every peer, (3) lets
/// each writer drain its queue and shut down its sending side, (4) waits, bounded, for the peers'
/// end of file, then closes. A process leaves only after every peer has said its run is over.
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include <strata/core/error.hpp>
#include <strata/core/ids.hpp>
#include <strata/wire/messages.hpp>
#include <strata/transport/detail/tcp_dial.hpp>
#include <strata/transport/detail/tcp_session.hpp>
#include <strata/transport/detail/tcp_shutdown.hpp>
#include <strata/transport/detail/tcp_state.hpp>
#include <strata/transport/delayed.hpp>
#include <strata/transport/tcp_settings.hpp>
#include <strata/transport/transport.hpp>

namespace strata {

/// The TCP transport. One object per process; `rank` is this process's node id.
class tcp {
 public:
  /// rank, peer addresses, listen address, shared secret, max_frame, timeouts, log (tcp_settings.hpp)
  using config = tcp_settings;

  tcp() : tcp(config{}) {}
  explicit tcp(config c) : s_(std::move(c)) {}
  tcp(const tcp&) = delete;
  tcp& operator=(const tcp&) = delete;
  ~tcp() { stop(); }

  /// Registers the delivery function of a local endpoint (before start).
  void bind(endpoint e, deliver_fn d) {
    if (e.node != s_.cfg.rank)
      throw error(errc::bad_input, "tcp rank " + std::to_string(s_.cfg.rank) + ": cannot bind endpoint of node " +
                                       std::to_string(e.node));
    s_.routes[e.slot] = std::move(d);
  }
  void on_fatal(fatal_fn f) { s_.fatal = std::move(f); }

  /// Listens, dials the lower ranks, and returns once every peer has completed its handshake, or
  /// after a fatal handshake error or connect_timeout (both reported through fatal_fn).
  /// Throws strata::error when the configuration is unusable (wrong peer count, cannot listen).
  void start(const run_shape& shape) { detail::tcp_start(s_, shape); }

  /// Sends `m` from local endpoint `src` to `dst`; never waits for the network. Throws
  /// strata::error(frame_too_large) when the message's frame would exceed max_frame.
  void send(endpoint src, endpoint dst, wire::message&& m) { detail::tcp_send(s_, src, dst, std::move(m)); }

  /// Marks this process's run as failed: every peer gets an abort frame with `reason` and stops
  /// at once, instead of waiting for this process's shutdown barrier. Call before stop() when the
  /// run ended with an error that the transport did not report itself (a worker's exception).
  void abort(const std::string& reason) { detail::tcp_abort(s_, reason); }

  /// Flushes every queued frame, runs the shutdown barrier (see the file comment) and closes.
  /// Bounded: at most about 2 x peer_timeout. Idempotent.
  void stop() { detail::tcp_stop(s_); }

  bool is_local(node_id n) const noexcept { return n == s_.cfg.rank; }
  /// Bytes written to sockets (frames with headers, heartbeats and handshakes included).
  std::uint64_t bytes_sent() const noexcept { return s_.bytes.load(std::memory_order_relaxed); }
  /// Payload bytes of messages between endpoints of this process (no socket involved).
  std::uint64_t bytes_local() const noexcept { return s_.bytes_local.load(std::memory_order_relaxed); }
  const config& settings() const noexcept { return s_.cfg; }

 private:
  detail::tcp_state s_;
};

static_assert(transport<tcp>);

#if !STRATA_HEADER_ONLY
extern template class transport_model<tcp>;
extern template class delayed<tcp>;
extern template class transport_model<delayed<tcp>>;
#endif

}  // namespace strata
