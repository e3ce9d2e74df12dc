#pragma once
/// \file Connecting the TCP transport: `tcp_start` (the body of tcp::start) listens, dials every
/// lower rank (the higher rank dials, so there is never a pair of crossing connections), accepts
/// the higher ones, and waits until every peer has completed its handshake. `connect_peer` runs
/// the handshake (tcp_handshake.hpp) on a new connection and acts on its result: log and close,
/// fail the run, refuse an accepted rank that should not connect, or adopt the connection as the
/// peer's and start its reader and writer.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include <asio/awaitable.hpp>
#include <asio/buffer.hpp>
#include <asio/connect.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>

#include <strata/core/error.hpp>
#include <strata/core/ids.hpp>
#include <strata/wire/frame.hpp>
#include <strata/wire/handshake.hpp>
#include <strata/transport/transport.hpp>
#include <strata/transport/detail/tcp_handshake.hpp>
#include <strata/transport/detail/tcp_liveness.hpp>
#include <strata/transport/detail/tcp_peer.hpp>
#include <strata/transport/detail/tcp_reader.hpp>
#include <strata/transport/detail/tcp_session.hpp>
#include <strata/transport/detail/tcp_state.hpp>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace strata::detail {

/// Whether `host` (an address or a name) is a loopback address; a name is resolved.
inline bool is_loopback_host(asio::io_context& io, const std::string& host) {
  std::error_code ec;
  const auto addr = asio::ip::make_address(host, ec);
  if (!ec) return addr.is_loopback();
  asio::ip::tcp::resolver res(io);
  const auto r = res.resolve(host, "0", ec);
  if (ec || r.empty()) return false;
  for (const auto& e : r)
    if (!e.endpoint().address().is_loopback()) return false;
  return true;
}

/// Opens the listening socket on listen_address and this rank's port. Throws strata::error, also
/// when the address is not loopback and no shared secret is set (unless cfg.insecure).
inline void open_listener(tcp_state& s) {
  std::error_code ec;
  const auto& host = s.cfg.listen_address;
  const auto port = s.cfg.peers[s.cfg.rank].second;
  const std::string me = "tcp rank " + std::to_string(s.cfg.rank) + ": ";
  if (s.cfg.secret.empty() && !s.cfg.insecure && !is_loopback_host(s.io, host))
    throw error(errc::bad_input,
                me + "refusing to listen on " + host + ":" + std::to_string(port) +
                    " without a shared secret: anyone who reaches that port could join the run as a rank and send it "
                    "frames. Set --secret (or STRATA_SECRET) on every rank, or pass --insecure on a network you trust "
                    "(docs/security.md)");
  asio::ip::tcp::endpoint ep;
  auto addr = asio::ip::make_address(host, ec);
  if (!ec) {
    ep = {addr, port};
  } else {
    asio::ip::tcp::resolver res(s.io);
    auto r = res.resolve(host, std::to_string(port), ec);
    if (ec || r.empty()) throw error(errc::bad_input, me + "cannot resolve listen address '" + host + "': " + ec.message());
    ep = r.begin()->endpoint();
  }
  auto bad = [&](const char* step) {
    return error(errc::bad_input, me + "cannot " + step + " " + host + ":" + std::to_string(port) + ": " + ec.message());
  };
  s.acceptor.open(ep.protocol(), ec);
  if (ec) throw bad("open");
  s.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  s.acceptor.bind(ep, ec);
  if (ec) throw bad("listen on");
  s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw bad("listen on");
}

/// Why an accepted connection that completed its handshake may not be the peer it says it is;
/// empty when it may.
inline std::string accepted_refusal(tcp_state& s, node_id r) {
  if (r >= s.world) return "rank " + std::to_string(r) + " is out of range";
  if (r == s.cfg.rank) return "rank " + std::to_string(r) + " is this process's own rank (two processes with one rank?)";
  if (r < s.cfg.rank) return "rank " + std::to_string(r) + " should be dialed by this rank, not dial it";
  if (s.peers[r]->c) return "rank " + std::to_string(r) + " is already connected";
  return "";
}

/// Closes a connection that was refused, first telling the other end why when `reply` is set.
inline asio::awaitable<void> refuse(tcp_state& s, std::shared_ptr<tcp_conn> c, const std::optional<wire::abort_notice>& reply) {
  c->handshaking = false;
  if (reply) {
    auto ab = wire::encode_frame(wire::frame_kind::abort, endpoint{s.cfg.rank, 0}, 0, *reply);
    std::error_code ec;
    co_await asio::async_write(c->sock, asio::buffer(ab), redirect(ec));
  }
  std::error_code ig;
  c->sock.close(ig);
}

/// Makes a connection that completed its handshake the peer's, and starts its reader and writer.
inline void adopt(tcp_state& s, std::shared_ptr<tcp_conn> c, const handshake_result& hs) {
  c->handshaking = false;
  if (c->rx.buf.size() < rx_buffer::peer_size) c->rx.buf.resize(rx_buffer::peer_size);
  tcp_peer& p = *s.peers[hs.peer.rank];
  p.c = c;
  p.last_rx = tcp_state::clock::now();
  if (hs.rx_key) p.rx_mac = std::make_unique<wire::frame_mac>(*hs.rx_key);
  {
    std::lock_guard lk(p.qmu);
    if (hs.tx_key) p.tx_mac = std::make_unique<wire::frame_mac>(*hs.tx_key);
    p.fd = c->sock.native_handle();
  }
  {
    std::lock_guard lk(s.mu);
    p.established = true;
    ++s.established;
    s.cv.notify_all();
  }
  s.spawn(reader(s, c, p), "reader");
  s.spawn(writer(s, c, p), "writer");
}

/// Handshakes a new connection and, when it matches, makes it the peer's. `expect` is the rank
/// dialed (nullopt for an accepted connection: nothing it says before it has authenticated can
/// stop the run, and what is logged about it is rate-limited).
inline asio::awaitable<handshake_status> connect_peer(tcp_state& s, std::shared_ptr<tcp_conn> c,
                                                      std::optional<node_id> expect) {
  std::error_code ec;
  c->sock.set_option(asio::ip::tcp::no_delay(true), ec);
  {
    auto ep = c->sock.remote_endpoint(ec);
    c->remote = ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
  }
  std::erase_if(s.pending, [](const std::weak_ptr<tcp_conn>& w) { return w.expired(); });
  s.pending.push_back(c);
  // A connection that does not complete its handshake in time is closed (a silent stray client).
  // The timer holds only weak references, so nothing here touches the state after stop().
  auto guard = std::make_shared<asio::steady_timer>(s.io, std::min(s.cfg.handshake_timeout, s.cfg.connect_timeout));
  guard->async_wait([w = std::weak_ptr<tcp_conn>(c), guard](std::error_code e) {
    if (e) return;
    std::error_code ig;
    if (auto c = w.lock(); c && c->handshaking) c->sock.close(ig);
  });
  auto log = [&s, accepted = !expect](const std::string& line) {
    if (line.empty()) return;
    if (accepted) s.log_refusal(line);
    else s.log_line(line);
  };

  handshake_options o;
  o.secret = s.cfg.secret;
  o.max_frame = s.cfg.max_frame;
  o.expect = expect;
  o.remote = c->remote;
  o.who = [&s](node_id r) { return s.who(r); };
  o.bytes_sent = &s.bytes;
  handshake_result hs = co_await handshake(c->sock, c->rx, s.hello, std::move(o));
  if (!expect && hs.status == handshake_status::ok) {
    if (const std::string why = accepted_refusal(s, hs.peer.rank); !why.empty()) {
      hs.status = handshake_status::rejected;
      hs.what = "refusing " + (hs.peer.rank < s.world ? s.who(hs.peer.rank) : "rank " + std::to_string(hs.peer.rank)) +
                " connected from " + c->remote + ": " + why;
      hs.reply = wire::abort_notice{static_cast<std::int32_t>(errc::config_mismatch), why};
    }
  }
  switch (hs.status) {
    case handshake_status::retry: c->handshaking = false; log(hs.what); co_return handshake_status::retry;
    case handshake_status::rejected:
      log(hs.what);
      if (!expect) s.last_refusal = c->remote + ": " + hs.what;
      co_await refuse(s, c, hs.reply);
      co_return handshake_status::rejected;
    case handshake_status::fatal: c->handshaking = false; s.fail(hs.ec, hs.what); co_return handshake_status::fatal;
    case handshake_status::ok: break;
  }
  if (s.failed_now() || s.stopping) co_return handshake_status::fatal;
  adopt(s, c, hs);
  co_return handshake_status::ok;
}

/// Keeps at most max_pending_handshakes accepted connections in their handshake: closes the
/// oldest beyond it (a real peer completes its handshake in a round trip; a flood of strangers
/// cannot hold it out, nor cost more than a few KiB each).
inline void admit(tcp_state& s, const std::shared_ptr<tcp_conn>& c) {
  std::erase_if(s.accepted, [](const std::weak_ptr<tcp_conn>& w) {
    auto x = w.lock();
    return !x || !x->handshaking;
  });
  while (s.accepted.size() >= std::max<std::size_t>(s.cfg.max_pending_handshakes, 1)) {
    if (auto old = s.accepted.front().lock()) {
      s.log_refusal("closing " + old->remote + ": " + std::to_string(s.accepted.size()) +
                    " connections in their handshake (max_pending_handshakes), this one the oldest");
      old->handshaking = false;
      std::error_code ig;
      old->sock.close(ig);
    }
    s.accepted.pop_front();
  }
  s.accepted.push_back(c);
}

/// Accepts connections until the acceptor closes; each one is handshaked on its own. A failed
/// accept (EMFILE, ENFILE, ENOBUFS...) pauses 100 ms instead of retrying at full speed, and is
/// logged at most once a second with the count of failures since the last line.
inline asio::awaitable<void> accept_loop(tcp_state& s) {
  asio::steady_timer pause(s.io);
  auto last_log = tcp_state::clock::now() - std::chrono::seconds(2);
  std::uint64_t failures = 0;
  for (;;) {
    std::error_code ec;
    tcp_socket sock = co_await s.acceptor.async_accept(redirect(ec));
    if (ec) {
      if (ec == asio::error::operation_aborted || !s.acceptor.is_open()) co_return;
      ++failures;
      if (tcp_state::clock::now() - last_log >= std::chrono::seconds(1)) {
        s.log_line("accept failed " + std::to_string(failures) + " time(s): " + ec.message() +
                   "; retrying every 100 ms");
        last_log = tcp_state::clock::now();
        failures = 0;
      }
      pause.expires_after(std::chrono::milliseconds(100));
      co_await pause.async_wait(redirect(ec));
      continue;
    }
    auto c = std::make_shared<tcp_conn>(std::move(sock));
    admit(s, c);
    s.spawn(connect_peer(s, c, std::nullopt), "handshake");
  }
}

/// Dials `p` until a handshake settles (every 25 ms, up to the connect deadline).
inline asio::awaitable<void> dial(tcp_state& s, tcp_peer& p) {
  asio::ip::tcp::resolver res(s.io);
  asio::steady_timer pause(s.io);
  for (;;) {
    if (s.failed_now() || s.stopping) co_return;
    std::error_code ec;
    auto eps = co_await res.async_resolve(p.host, std::to_string(p.port), redirect(ec));
    if (!ec) {
      auto c = std::make_shared<tcp_conn>(tcp_socket(s.io));
      co_await asio::async_connect(c->sock, eps, redirect(ec));
      if (!ec) {
        const handshake_status r = co_await connect_peer(s, c, p.rank);
        if (r != handshake_status::retry) co_return;
      }
    }
    if (tcp_state::clock::now() >= s.deadline) co_return;  // tcp_start reports the timeout
    pause.expires_after(std::chrono::milliseconds(25));
    co_await pause.async_wait(redirect(ec));
  }
}

/// tcp::start: listens, dials the lower ranks, and returns once every peer has completed its
/// handshake, or after a fatal handshake error or connect_timeout (both reported through fatal_fn).
/// Throws strata::error when the configuration is unusable (wrong peer count, cannot listen).
inline void tcp_start(tcp_state& s, const run_shape& shape) {
  if (s.started) throw error(errc::bad_input, "tcp::start called twice");
  if (s.cfg.peers.size() != shape.nodes)
    throw error(errc::bad_input, "tcp rank " + std::to_string(s.cfg.rank) + ": config lists " +
                                     std::to_string(s.cfg.peers.size()) + " peer addresses, the run has " +
                                     std::to_string(shape.nodes) + " nodes");
  if (s.cfg.rank >= shape.nodes)
    throw error(errc::bad_input, "tcp: rank " + std::to_string(s.cfg.rank) + " out of range for " +
                                     std::to_string(shape.nodes) + " nodes");
  s.world = shape.nodes;
  s.started = true;
  if (s.world == 1) return;

  s.hb_interval = heartbeat_interval(s.cfg.peer_timeout);
  s.hello.rank = s.cfg.rank;
  s.hello.world = s.world;
  s.hello.signature = shape.signature;
  s.hello.signature_hash = wire::signature_hash(shape.signature);
  s.hello.secret_set = !s.cfg.secret.empty();
  const endpoint me{s.cfg.rank, 0};
  s.heartbeat_frame = wire::encode_frame(wire::frame_kind::heartbeat, me, 0, wire::empty_body{});
  s.bye_frame = wire::encode_frame(wire::frame_kind::bye, me, 0, wire::empty_body{});
  for (node_id r = 0; r < s.world; ++r) {
    auto p = std::make_unique<tcp_peer>();
    p->rank = r;
    p->host = s.cfg.peers[r].first;
    p->port = s.cfg.peers[r].second;
    s.peers.push_back(std::move(p));
  }
  open_listener(s);
  s.deadline = tcp_state::clock::now() + s.cfg.connect_timeout;
  s.spawn(accept_loop(s), "accept loop");
  for (node_id r = 0; r < s.cfg.rank; ++r) s.spawn(dial(s, *s.peers[r]), "dialer");
  s.spawn(watchdog(s), "watchdog");
  s.work.emplace(asio::make_work_guard(s.io));
  s.thread = std::thread([&s] { s.io.run(); });

  std::unique_lock lk(s.mu);
  const bool ok = s.cv.wait_until(lk, s.deadline, [&] { return s.failed || s.established == s.world - 1; });
  if (!ok) {
    std::string missing;
    for (auto& p : s.peers)
      if (p->rank != s.cfg.rank && !p->established) missing += (missing.empty() ? "" : ", ") + s.who(p->rank);
    lk.unlock();
    asio::post(s.io, [&s, missing] {
      s.fail(make_error_code(errc::timeout),
             "no handshake within " + std::to_string(s.cfg.connect_timeout.count()) + " ms (connect_timeout) with " +
                 missing + (s.last_refusal.empty() ? "" : "; the last connection refused here was from " + s.last_refusal));
    });
    lk.lock();
    s.cv.wait_for(lk, std::chrono::seconds(5), [&] { return s.failed; });
  }
}

}  // namespace strata::detail

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic pop
#endif
