#pragma once
/// \file tcp: the transport between processes (and machines), on standalone Asio with C++20
/// coroutines and the frames of wire/frame.hpp.
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
/// Handshake (both sides send, both sides check, so both stop with the same diagnosis): a hello
/// with protocol version, rank, world size, run signature (its hash and its text, so a mismatch
/// names the differing field) and a fresh nonce; when a shared secret is set, an auth frame with
/// HMAC-SHA256(secret, nonces, rank) (see wire::auth: the secret never crosses the wire and a
/// recorded answer cannot be replayed; frames after the handshake are not encrypted or signed).
/// A mismatch of version, world size, signature or secret is fatal on both sides: fatal_fn gets
/// a message naming the field, the peer's rank and address. Note the trade-off: anyone who can
/// reach the port can send a well-formed but mismatched hello and so stop a run (a denial of
/// service, not an intrusion); listen on loopback or a private network.
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
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sys/socket.h>
#include <sys/types.h>

#include <asio/awaitable.hpp>
#include <asio/buffer.hpp>
#include <asio/co_spawn.hpp>
#include <asio/connect.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>

#include "../core/error.hpp"
#include "../wire/frame.hpp"
#include "../wire/handshake.hpp"
#include "transport.hpp"

// GCC 12 reports a false -Wmismatched-new-delete on Asio's awaitable frames (its own operator new
// and delete; GCC bug 109224, fixed in GCC 13). Silenced for this header only.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#define STRATA_TCP_POP_DIAGNOSTIC
#endif

namespace strata {

/// The TCP transport. One object per process; `rank` is this process's node id.
class tcp {
 public:
  struct config {
    node_id rank = 0;
    /// host and port of every rank, indexed by rank (this rank's entry gives the port to listen on)
    std::vector<std::pair<std::string, std::uint16_t>> peers;
    /// address to listen on; loopback unless told otherwise
    std::string listen_address = "127.0.0.1";
    /// when set, every peer must prove it knows the same secret in the handshake
    std::string secret;
    /// frames (header + payload) over this many bytes are refused, sending and receiving
    std::size_t max_frame = wire::default_max_frame;
    /// how long start() waits for every peer's handshake (peers may start at different times)
    std::chrono::milliseconds connect_timeout{30000};
    /// a peer silent this long is lost; also bounds each wait of the shutdown barrier
    std::chrono::milliseconds peer_timeout{10000};
    /// where diagnostics go, one line each; empty: stderr
    std::function<void(const std::string&)> log;
  };

  tcp() : tcp(config{}) {}
  explicit tcp(config c) : cfg_(std::move(c)), acceptor_(io_) {}
  tcp(const tcp&) = delete;
  tcp& operator=(const tcp&) = delete;
  ~tcp() { stop(); }

  /// Registers the delivery function of a local endpoint (before start).
  void bind(endpoint e, deliver_fn d) {
    if (e.node != cfg_.rank)
      throw error(errc::bad_input, "tcp rank " + std::to_string(cfg_.rank) + ": cannot bind endpoint of node " +
                                       std::to_string(e.node));
    routes_[e.slot] = std::move(d);
  }
  void on_fatal(fatal_fn f) { fatal_ = std::move(f); }

  /// Listens, dials the lower ranks, and returns once every peer has completed its handshake, or
  /// after a fatal handshake error or connect_timeout (both reported through fatal_fn).
  /// Throws strata::error when the configuration is unusable (wrong peer count, cannot listen).
  void start(const run_shape& shape) {
    if (started_) throw error(errc::bad_input, "tcp::start called twice");
    if (cfg_.peers.size() != shape.nodes)
      throw error(errc::bad_input, "tcp rank " + std::to_string(cfg_.rank) + ": config lists " +
                                       std::to_string(cfg_.peers.size()) + " peer addresses, the run has " +
                                       std::to_string(shape.nodes) + " nodes");
    if (cfg_.rank >= shape.nodes)
      throw error(errc::bad_input, "tcp: rank " + std::to_string(cfg_.rank) + " out of range for " +
                                       std::to_string(shape.nodes) + " nodes");
    world_ = shape.nodes;
    started_ = true;
    if (world_ == 1) return;

    const auto quarter = cfg_.peer_timeout / 4;
    hb_interval_ = std::clamp<std::chrono::milliseconds>(std::chrono::duration_cast<std::chrono::milliseconds>(quarter),
                                                         std::chrono::milliseconds(5), std::chrono::milliseconds(2000));
    hello_.rank = cfg_.rank;
    hello_.world = world_;
    hello_.signature = shape.signature;
    hello_.signature_hash = wire::signature_hash(shape.signature);
    hello_.secret_set = !cfg_.secret.empty();
    const endpoint me{cfg_.rank, 0};
    heartbeat_frame_ = wire::encode_frame(wire::frame_kind::heartbeat, me, 0, wire::empty_body{});
    bye_frame_ = wire::encode_frame(wire::frame_kind::bye, me, 0, wire::empty_body{});
    for (node_id r = 0; r < world_; ++r) {
      auto p = std::make_unique<peer>();
      p->rank = r;
      p->host = cfg_.peers[r].first;
      p->port = cfg_.peers[r].second;
      peers_.push_back(std::move(p));
    }
    listen();
    deadline_ = clock::now() + cfg_.connect_timeout;
    spawn(accept_loop(), "accept loop");
    for (node_id r = 0; r < cfg_.rank; ++r) spawn(dial(*peers_[r]), "dialer");
    spawn(watchdog(), "watchdog");
    work_.emplace(asio::make_work_guard(io_));
    thread_ = std::thread([this] { io_.run(); });

    std::unique_lock lk(mu_);
    const bool ok = cv_.wait_until(lk, deadline_, [&] { return failed_ || established_ == world_ - 1; });
    if (!ok) {
      std::string missing;
      for (auto& p : peers_)
        if (p->rank != cfg_.rank && !p->established) missing += (missing.empty() ? "" : ", ") + who(p->rank);
      lk.unlock();
      asio::post(io_, [this, missing] {
        fail(make_error_code(errc::timeout), "no handshake within " + std::to_string(cfg_.connect_timeout.count()) +
                                                 " ms (connect_timeout) with " + missing);
      });
      lk.lock();
      cv_.wait_for(lk, std::chrono::seconds(5), [&] { return failed_; });
    }
  }

  /// Sends `m` from local endpoint `src` to `dst`; never waits for the network. Throws
  /// strata::error(frame_too_large) when the message's frame would exceed max_frame.
  void send(endpoint src, endpoint dst, wire::message&& m) {
    if (dst.node == cfg_.rank) {
      auto it = routes_.find(dst.slot);
      if (it == routes_.end()) throw error(errc::bad_input, "tcp: no endpoint bound for slot " + std::to_string(dst.slot));
      bytes_local_.fetch_add(detail::payload_size(m), std::memory_order_relaxed);
      it->second(src, std::move(m));
      return;
    }
    if (dst.node >= peers_.size())
      throw error(errc::bad_input, "tcp: no peer for node " + std::to_string(dst.node) + " (not started?)");
    peer& p = *peers_[dst.node];
    std::vector<std::byte> f;
    {
      std::lock_guard lk(p.qmu);
      if (!p.spare.empty()) {
        f = std::move(p.spare.back());
        p.spare.pop_back();
      }
    }
    f.clear();
    std::error_code ec;
    wire::encode_frame(f, wire::frame_kind::message, src, dst.slot, m, cfg_.max_frame, ec);
    if (ec) {
      const std::string what = "message to " + who(dst.node) + " over max_frame (" +
                               std::to_string(cfg_.max_frame) + " bytes)";
      asio::post(io_, [this, ec, what] { fail(ec, what); });  // the peers must not wait for this run
      throw error(ec, "tcp rank " + std::to_string(cfg_.rank) + ": " + what);
    }
    send_frame(p, std::move(f));
  }

  /// Marks this process's run as failed: every peer gets an abort frame with `reason` and stops
  /// at once, instead of waiting for this process's shutdown barrier. Call before stop() when the
  /// run ended with an error that the transport did not report itself (a worker's exception).
  void abort(const std::string& reason) {
    {
      std::lock_guard lk(mu_);
      if (!thread_.joinable() || failed_ || stop_requested_) return;
    }
    asio::post(io_, [this, reason] { fail(make_error_code(errc::peer_lost), "its run failed: " + reason); });
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, std::chrono::seconds(5), [&] { return failed_; });
  }

  /// Flushes every queued frame, runs the shutdown barrier (see the file comment) and closes.
  /// Bounded: at most about 2 x peer_timeout. Idempotent.
  void stop() {
    {
      std::lock_guard lk(mu_);
      if (!started_ || stopped_) return;
      stopped_ = stop_requested_ = true;
    }
    if (!thread_.joinable()) return;
    std::unique_lock lk(mu_);
    if (!failed_) {
      lk.unlock();
      for (auto& p : peers_)
        if (p->rank != cfg_.rank) enqueue(*p, bye_frame_);
      lk.lock();
      const bool all = cv_.wait_for(lk, cfg_.peer_timeout, [&] {
        if (failed_) return true;
        for (auto& p : peers_)
          if (p->established && !p->bye_rx && !p->read_done) return false;
        return true;
      });
      if (!all) {
        std::string late;
        for (auto& p : peers_)
          if (p->established && !p->bye_rx && !p->read_done) late += (late.empty() ? "" : ", ") + who(p->rank);
        log_line("shutdown: no bye within " + std::to_string(cfg_.peer_timeout.count()) + " ms from " + late +
                 "; closing anyway");
      }
    }
    const bool clean = !failed_;
    lk.unlock();
    asio::post(io_, [this] {
      stopping_ = true;
      for (auto& p : peers_)
        if (p->c) {
          p->c->closing = true;
          p->c->wake.cancel();
        }
    });
    lk.lock();
    cv_.wait_for(lk, clean ? cfg_.peer_timeout : std::chrono::milliseconds(1000), [&] {
      for (auto& p : peers_)
        if (p->established && !(p->write_done && p->read_done)) return false;
      return true;
    });
    lk.unlock();
    asio::post(io_, [this] {
      std::error_code ig;
      acceptor_.close(ig);
      for (auto& p : peers_)
        if (p->c) close_conn(*p);
      for (auto& w : pending_)
        if (auto c = w.lock()) c->sock.close(ig);
      io_.stop();
    });
    work_.reset();
    thread_.join();
  }

  bool is_local(node_id n) const noexcept { return n == cfg_.rank; }
  /// Bytes written to sockets (frames with headers, heartbeats and handshakes included).
  std::uint64_t bytes_sent() const noexcept { return bytes_.load(std::memory_order_relaxed); }
  /// Payload bytes of messages between endpoints of this process (no socket involved).
  std::uint64_t bytes_local() const noexcept { return bytes_local_.load(std::memory_order_relaxed); }
  const config& settings() const noexcept { return cfg_; }

 private:
  using clock = std::chrono::steady_clock;
  using socket_t = asio::ip::tcp::socket;
  static constexpr std::size_t handshake_max_frame = std::size_t{1} << 20;
  static constexpr std::size_t max_spare = 16, max_spare_bytes = std::size_t{4} << 20;

  /// One TCP connection.
  struct conn {
    explicit conn(socket_t s) : sock(std::move(s)), wake(sock.get_executor()) {}
    socket_t sock;
    asio::steady_timer wake;  // the writer sleeps on it; send() cancels it
    std::string remote;       // far end as ip:port
    bool closing = false;     // io thread: drain the queue, then shut down the sending side
    struct {
      std::vector<std::byte> buf = std::vector<std::byte>(std::size_t{64} << 10);
      std::size_t head = 0, tail = 0;  // unread bytes are buf[head, tail)
    } rx;                               // io thread: received bytes, shared by handshake and reader
  };

  /// Everything about one rank.
  struct peer {
    node_id rank = 0;
    std::string host;
    std::uint16_t port = 0;
    std::mutex qmu;  // guards queue, signaled and spare (send() runs on any thread)
    std::vector<std::vector<std::byte>> queue;
    std::vector<std::vector<std::byte>> spare;  // written frame buffers, reused by send()
    int fd = -1;               // the socket, for direct writes from send(); -1: none or closing
    bool direct = false;       // a sending thread is in send(2) on fd
    bool writer_busy = false;  // the writer coroutine has a write in flight
    bool signaled = false;
    std::shared_ptr<conn> c;             // io thread
    clock::time_point last_rx{};         // io thread
    bool established = false, bye_rx = false, write_done = false, read_done = false;  // mu_
  };

  enum class hs_result { ok, retry, rejected, fatal };

  static auto redirect(std::error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

  std::string who(node_id r) const {
    if (r < cfg_.peers.size())
      return "rank " + std::to_string(r) + " (" + cfg_.peers[r].first + ":" + std::to_string(cfg_.peers[r].second) + ")";
    return "rank " + std::to_string(r);
  }
  void log_line(const std::string& s) const {
    const std::string line = "strata tcp[rank " + std::to_string(cfg_.rank) + "]: " + s;
    if (cfg_.log) cfg_.log(line);
    else std::fprintf(stderr, "%s\n", line.c_str());
  }

  template <class Awaitable>
  void spawn(Awaitable&& a, const char* what) {
    asio::co_spawn(io_, std::forward<Awaitable>(a), [this, what](std::exception_ptr e, auto&&...) {
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        fail(make_error_code(errc::bad_input), std::string("internal error in the ") + what + ": " + x.what());
      }
    });
  }

  void listen() {
    std::error_code ec;
    const auto& host = cfg_.listen_address;
    const auto port = cfg_.peers[cfg_.rank].second;
    asio::ip::tcp::endpoint ep;
    auto addr = asio::ip::make_address(host, ec);
    if (!ec) {
      ep = {addr, port};
    } else {
      asio::ip::tcp::resolver res(io_);
      auto r = res.resolve(host, std::to_string(port), ec);
      if (ec || r.empty())
        throw error(errc::bad_input, "tcp rank " + std::to_string(cfg_.rank) + ": cannot resolve listen address '" +
                                         host + "': " + ec.message());
      ep = r.begin()->endpoint();
    }
    auto bad = [&](const char* step) {
      return error(errc::bad_input, "tcp rank " + std::to_string(cfg_.rank) + ": cannot " + step + " " + host + ":" +
                                        std::to_string(port) + ": " + ec.message());
    };
    acceptor_.open(ep.protocol(), ec);
    if (ec) throw bad("open");
    acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    acceptor_.bind(ep, ec);
    if (ec) throw bad("listen on");
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw bad("listen on");
  }

  // ---- sending ------------------------------------------------------------------------------

  void enqueue(peer& p, std::vector<std::byte> frame) {
    std::unique_lock lk(p.qmu);
    p.queue.push_back(std::move(frame));
    wake_writer(p, lk);
  }

  /// Makes sure the writer looks at the queue soon (one post per batch, not per frame). Takes the
  /// peer's queue lock and releases it.
  void wake_writer(peer& p, std::unique_lock<std::mutex>& lk) {
    const bool post = !p.signaled;
    p.signaled = true;
    lk.unlock();
    if (post)
      asio::post(io_, [&p] {
        if (p.c) p.c->wake.cancel();
      });
  }

  /// Sends a message frame. When the connection is idle (nothing queued, no write in progress)
  /// the calling thread writes it at once with one non-blocking send(2), saving the hop to the
  /// comm thread (a get that misses the cache waits for it); whatever does not fit in the socket
  /// buffer, and every frame that finds the connection busy, is queued for the writer, which
  /// batches them into one gather write. Order is kept: a direct write happens only on an empty queue.
  void send_frame(peer& p, std::vector<std::byte> f) {
    std::unique_lock lk(p.qmu);
    if (p.fd < 0 || p.direct || p.writer_busy || !p.queue.empty()) {
      p.queue.push_back(std::move(f));
      return wake_writer(p, lk);
    }
    p.direct = true;
    const int fd = p.fd;
    lk.unlock();
    const ::ssize_t n = ::send(fd, f.data(), f.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    const std::size_t done = n > 0 ? static_cast<std::size_t>(n) : 0;
    bytes_.fetch_add(done, std::memory_order_relaxed);
    lk.lock();
    p.direct = false;
    if (done == f.size()) {
      if (p.spare.size() < max_spare && f.capacity() <= max_spare_bytes) p.spare.push_back(std::move(f));
      if (p.queue.empty()) return;  // frames queued meanwhile (by other threads) need the writer
    } else {
      // Socket buffer full (or an error, which the writer will meet and report): the rest goes
      // first in line.
      f.erase(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(done));
      p.queue.insert(p.queue.begin(), std::move(f));
    }
    p.signaled = false;  // the writer may have consumed the last wake while we were writing
    wake_writer(p, lk);
  }

  /// Stops direct writes on p's socket (io thread): after this no other thread touches its fd,
  /// so it may be shut down or closed without a stray send(2) reaching a reused descriptor.
  void stop_direct(peer& p) {
    std::unique_lock lk(p.qmu);
    p.fd = -1;
    while (p.direct) {  // a non-blocking send(2) in progress: microseconds
      lk.unlock();
      std::this_thread::yield();
      lk.lock();
    }
  }
  void close_conn(peer& p) {
    stop_direct(p);
    std::error_code ig;
    p.c->sock.close(ig);
  }

  asio::awaitable<void> writer(std::shared_ptr<conn> c, peer& p) {
    std::vector<std::vector<std::byte>> batch;
    std::vector<asio::const_buffer> bufs;
    for (;;) {
      batch.clear();
      bool busy = false;
      {
        std::lock_guard lk(p.qmu);
        busy = p.direct;  // another thread is writing directly: wait for its wake
        if (!busy) {
          batch.swap(p.queue);
          p.writer_busy = !batch.empty();
        }
        p.signaled = false;
      }
      if (batch.empty()) {
        if (c->closing && !busy) {
          stop_direct(p);
          std::error_code ig;
          c->sock.shutdown(socket_t::shutdown_send, ig);
          set_flag(p, &peer::write_done);
          co_return;
        }
        c->wake.expires_after(busy ? std::chrono::milliseconds(1) : hb_interval_);
        std::error_code ec;
        co_await c->wake.async_wait(redirect(ec));
        if (!c->sock.is_open()) {
          set_flag(p, &peer::write_done);
          co_return;
        }
        if (!ec && !busy && !c->closing) {  // idle for a whole interval: keep the peer's read timeout at bay
          std::lock_guard lk(p.qmu);
          p.queue.push_back(heartbeat_frame_);
        }
        continue;
      }
      bufs.clear();
      for (auto& f : batch) bufs.push_back(asio::buffer(f));
      std::error_code ec;
      const std::size_t n = co_await asio::async_write(c->sock, bufs, redirect(ec));
      bytes_.fetch_add(n, std::memory_order_relaxed);
      {
        // Keep a few buffers for the next frames: large per-frame allocations cost more than the
        // copy (page faults, and madvise + TLB shootdowns when malloc trims).
        std::lock_guard lk(p.qmu);
        p.writer_busy = false;
        for (auto& f : batch)
          if (p.spare.size() < max_spare && f.capacity() <= max_spare_bytes) p.spare.push_back(std::move(f));
      }
      if (ec) {
        set_flag(p, &peer::write_done);
        if (!peer_gone_ok(p))
          fail(make_error_code(errc::peer_lost), "lost " + who(p.rank) + ": write failed: " + ec.message());
        co_return;
      }
    }
  }

  // ---- receiving ----------------------------------------------------------------------------

  /// Makes at least `n` bytes available in c.rx (compacting or growing the buffer as needed).
  static asio::awaitable<void> fill(conn& c, std::size_t n, std::error_code& ec) {
    auto& r = c.rx;
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
          co_await c.sock.async_read_some(asio::buffer(r.buf.data() + r.tail, r.buf.size() - r.tail), redirect(ec));
      if (ec) co_return;
      r.tail += k;
    }
  }

  /// Reads one frame: its header and a view of its payload, valid until the next read on `c`.
  /// Buffered: one read_some usually brings many small frames. Returns false on a socket error
  /// (`ec` set) or a frame that does not decode (`bad` set, with `why`).
  asio::awaitable<bool> read_frame(conn& c, std::size_t max, wire::frame_header& hdr, std::span<const std::byte>& payload,
                                   std::error_code& ec, std::error_code& bad, std::string& why) {
    ec.clear();
    bad.clear();
    co_await fill(c, wire::frame_header_size, ec);
    if (ec) co_return false;
    hdr = wire::decode_header(std::span(c.rx.buf.data() + c.rx.head, wire::frame_header_size), max, bad, &why);
    if (bad) co_return false;
    const std::size_t need = wire::frame_header_size + static_cast<std::size_t>(hdr.length);
    co_await fill(c, need, ec);
    if (ec) co_return false;
    payload = std::span<const std::byte>(c.rx.buf.data() + c.rx.head + wire::frame_header_size,
                                         static_cast<std::size_t>(hdr.length));
    c.rx.head += need;
    co_return true;
  }

  asio::awaitable<void> reader(std::shared_ptr<conn> c, peer& p) {
    wire::frame_header h;
    std::span<const std::byte> body;
    std::error_code ec, bad;
    std::string why;
    for (;;) {
      const bool ok = co_await read_frame(*c, cfg_.max_frame, h, body, ec, bad, why);
      if (!ok && !bad) {  // end of file, reset, or our own close
        set_flag(p, &peer::read_done);
        if (!peer_gone_ok(p)) fail(make_error_code(errc::peer_lost), "lost " + who(p.rank) + ": " + describe(ec) +
                                                                           " before it finished its run");
        co_return;
      }
      p.last_rx = clock::now();
      if (!bad) switch (h.kind) {
          case wire::frame_kind::message: {
            if (h.src.node != p.rank) {
              bad = make_error_code(errc::bad_frame);
              why = "frame claims source node " + std::to_string(h.src.node);
              break;
            }
            auto m = wire::decode_body<wire::message>(body, bad, &why);
            if (bad) break;
            auto it = routes_.find(h.dst_slot);
            if (it == routes_.end()) {
              bad = make_error_code(errc::bad_frame);
              why = "no endpoint in slot " + std::to_string(h.dst_slot) + " here";
              break;
            }
            it->second(h.src, std::move(m));
            break;
          }
          case wire::frame_kind::heartbeat: break;
          case wire::frame_kind::bye: set_flag(p, &peer::bye_rx); break;
          case wire::frame_kind::abort: {
            auto a = wire::decode_body<wire::abort_notice>(body, bad, &why);
            if (bad) break;
            fail(abort_code(a.code), who(p.rank) + " stopped the run: " + a.reason);
            break;
          }
          default:
            bad = make_error_code(errc::bad_frame);
            why = "unexpected handshake frame after the handshake";
        }
      if (bad) {
        log_line("closing the connection to " + who(p.rank) + ": " + bad.message() + ": " + why);
        close_conn(p);
        set_flag(p, &peer::read_done);
        set_flag(p, &peer::write_done);
        fail(bad, who(p.rank) + " sent a frame that was refused (" + why +
                      "); its connection is closed and the run cannot finish without it");
        co_return;
      }
    }
  }

  static std::string describe(const std::error_code& ec) {
    if (ec == asio::error::eof) return "connection closed by the peer (end of file)";
    if (ec == asio::error::connection_reset) return "connection reset by the peer";
    return ec.message();
  }
  static std::error_code abort_code(std::int32_t code) {
    if (code <= 0 || code > static_cast<int>(errc::shutdown)) return make_error_code(errc::peer_lost);
    return make_error_code(static_cast<errc>(code));
  }
  /// A closed connection is expected after a failure, or once both this process and the peer have
  /// finished their runs. A peer that leaves while this process still runs is lost, bye or not: it
  /// left early (its barrier timed out, or its run failed after it said bye).
  bool peer_gone_ok(peer& p) {
    std::lock_guard lk(mu_);
    return failed_ || stopping_ || (stop_requested_ && p.bye_rx);
  }
  void set_flag(peer& p, bool peer::*f) {
    std::lock_guard lk(mu_);
    p.*f = true;
    cv_.notify_all();
  }

  // ---- connecting and the handshake ----------------------------------------------------------

  asio::awaitable<void> accept_loop() {
    for (;;) {
      std::error_code ec;
      socket_t s = co_await acceptor_.async_accept(redirect(ec));
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
        log_line("accept failed: " + ec.message());
        continue;
      }
      auto c = std::make_shared<conn>(std::move(s));
      spawn(handshake(c, std::nullopt), "handshake");
    }
  }

  asio::awaitable<void> dial(peer& p) {
    asio::ip::tcp::resolver res(io_);
    asio::steady_timer pause(io_);
    for (;;) {
      if (failed_now() || stopping_) co_return;
      std::error_code ec;
      auto eps = co_await res.async_resolve(p.host, std::to_string(p.port), redirect(ec));
      if (!ec) {
        auto c = std::make_shared<conn>(socket_t(io_));
        co_await asio::async_connect(c->sock, eps, redirect(ec));
        if (!ec) {
          const hs_result r = co_await handshake(c, p.rank);
          if (r != hs_result::retry) co_return;
        }
      }
      if (clock::now() >= deadline_) co_return;  // start() reports the timeout
      pause.expires_after(std::chrono::milliseconds(25));
      co_await pause.async_wait(redirect(ec));
    }
  }

  bool failed_now() {
    std::lock_guard lk(mu_);
    return failed_;
  }

  /// Both sides: send hello, read hello, (send auth, read auth), compare. `expect` is the rank
  /// dialed (nullopt for an accepted connection).
  asio::awaitable<hs_result> handshake(std::shared_ptr<conn> c, std::optional<node_id> expect) {
    std::error_code ec, bad;
    c->sock.set_option(asio::ip::tcp::no_delay(true), ec);
    {
      auto ep = c->sock.remote_endpoint(ec);
      c->remote = ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
    }
    std::erase_if(pending_, [](const std::weak_ptr<conn>& w) { return w.expired(); });
    pending_.push_back(c);
    // A connection that does not complete its handshake in time is closed (a silent stray client).
    // The timer holds only weak references, so nothing here touches `this` after stop().
    auto done = std::make_shared<bool>(false);
    auto guard = std::make_shared<asio::steady_timer>(io_, cfg_.connect_timeout);
    guard->async_wait([w = std::weak_ptr<conn>(c), done, guard](std::error_code e) {
      if (e || *done) return;
      std::error_code ig;
      if (auto c = w.lock()) c->sock.close(ig);
    });

    const std::string from = expect ? who(*expect) : "a connection from " + c->remote;
    wire::hello mine = hello_;
    std::random_device rd;
    for (auto& b : mine.nonce) b = static_cast<std::uint8_t>(rd());
    auto hello_bytes = wire::encode_frame(wire::frame_kind::hello, endpoint{cfg_.rank, 0}, 0, mine);
    co_await asio::async_write(c->sock, asio::buffer(hello_bytes), redirect(ec));
    bytes_.fetch_add(ec ? 0 : hello_bytes.size(), std::memory_order_relaxed);
    if (ec) co_return hs_result::retry;

    wire::frame_header h;
    std::span<const std::byte> body;
    std::string why;
    const std::size_t hs_max = std::min(cfg_.max_frame, handshake_max_frame);
    bool ok = co_await read_frame(*c, hs_max, h, body, ec, bad, why);
    if (!ok && !bad) {
      if (!expect) log_line("dropping " + from + ": " + describe(ec) + " during the handshake");
      co_return hs_result::retry;
    }
    if (bad == errc::protocol_mismatch) {
      fail(bad, "handshake with " + (expect ? who(*expect) : "rank " + std::to_string(h.src.node) + " at " + c->remote) +
                    ": peer speaks protocol version " + std::to_string(h.version) + ", this process " +
                    std::to_string(wire::protocol_version));
      co_return hs_result::fatal;
    }
    if (!bad && h.kind == wire::frame_kind::abort) {
      auto a = wire::decode_body<wire::abort_notice>(body, bad, &why);
      if (!bad) {
        fail(abort_code(a.code), from + " refused the connection: " + a.reason);
        co_return hs_result::fatal;
      }
    }
    if (!bad && h.kind != wire::frame_kind::hello) {
      bad = make_error_code(errc::bad_frame);
      why = "expected a hello frame";
    }
    wire::hello theirs;
    if (!bad) theirs = wire::decode_body<wire::hello>(body, bad, &why);
    if (bad) {
      log_line("closing " + from + ": " + bad.message() + ": " + why);
      std::error_code ig;
      c->sock.close(ig);
      co_return hs_result::rejected;
    }

    const node_id r = theirs.rank;
    const std::string peer_name =
        (r < world_ ? who(r) : "rank " + std::to_string(r)) + (expect ? "" : " connected from " + c->remote);
    const std::string hs = "handshake with " + peer_name + ": ";
    if (theirs.version != wire::protocol_version) {
      fail(make_error_code(errc::protocol_mismatch), hs + "protocol version differs: here " +
                                                         std::to_string(wire::protocol_version) + ", peer " +
                                                         std::to_string(theirs.version));
      co_return hs_result::fatal;
    }
    if (mine.secret_set != theirs.secret_set) {
      fail(make_error_code(errc::auth_failed),
           hs + (mine.secret_set ? "a shared secret is set here but not on the peer"
                                 : "the peer requires a shared secret and none is set here (flag or STRATA_SECRET)"));
      co_return hs_result::fatal;
    }
    if (mine.secret_set) {
      wire::auth a;
      a.mac = wire::auth_mac(cfg_.secret, theirs.nonce, mine.nonce, cfg_.rank);
      auto auth_bytes = wire::encode_frame(wire::frame_kind::auth, endpoint{cfg_.rank, 0}, 0, a);
      co_await asio::async_write(c->sock, asio::buffer(auth_bytes), redirect(ec));
      if (ec) co_return hs_result::retry;
      bytes_.fetch_add(auth_bytes.size(), std::memory_order_relaxed);
      ok = co_await read_frame(*c, hs_max, h, body, ec, bad, why);
      if (!ok && !bad) co_return hs_result::retry;
      wire::auth back;
      if (!bad && h.kind != wire::frame_kind::auth) {
        bad = make_error_code(errc::bad_frame);
        why = "expected an auth frame";
      }
      if (!bad) back = wire::decode_body<wire::auth>(body, bad, &why);
      if (bad) {
        log_line("closing " + from + ": " + bad.message() + ": " + why);
        std::error_code ig;
        c->sock.close(ig);
        co_return hs_result::rejected;
      }
      if (!wire::equal_macs(back.mac, wire::auth_mac(cfg_.secret, mine.nonce, theirs.nonce, r))) {
        fail(make_error_code(errc::auth_failed), hs + "shared secret mismatch (the peer's proof does not match the "
                                                      "secret set here)");
        co_return hs_result::fatal;
      }
    }
    if (theirs.world != world_) {
      fail(make_error_code(errc::config_mismatch), hs + "world size differs: here " + std::to_string(world_) +
                                                       ", peer " + std::to_string(theirs.world));
      co_return hs_result::fatal;
    }
    if (theirs.signature_hash != mine.signature_hash || theirs.signature != mine.signature) {
      fail(make_error_code(errc::config_mismatch), hs + "run signature differs: " +
                                                       signature_diff(mine.signature, theirs.signature));
      co_return hs_result::fatal;
    }
    if (expect && r != *expect) {
      fail(make_error_code(errc::config_mismatch), "handshake: " + who(*expect) + " answered as rank " +
                                                       std::to_string(r) + " (check the host list)");
      co_return hs_result::fatal;
    }
    if (!expect) {
      std::string refuse;
      if (r >= world_) refuse = "rank " + std::to_string(r) + " is out of range";
      else if (r == cfg_.rank) refuse = "rank " + std::to_string(r) + " is this process's own rank (two processes with one rank?)";
      else if (r < cfg_.rank) refuse = "rank " + std::to_string(r) + " should be dialed by this rank, not dial it";
      else if (peers_[r]->c) refuse = "rank " + std::to_string(r) + " is already connected";
      if (!refuse.empty()) {
        log_line("refusing " + peer_name + ": " + refuse);
        auto ab = wire::encode_frame(wire::frame_kind::abort, endpoint{cfg_.rank, 0}, 0,
                                     wire::abort_notice{static_cast<std::int32_t>(errc::config_mismatch), refuse});
        co_await asio::async_write(c->sock, asio::buffer(ab), redirect(ec));
        std::error_code ig;
        c->sock.close(ig);
        co_return hs_result::rejected;
      }
    }
    if (failed_now() || stopping_) co_return hs_result::fatal;

    *done = true;
    peer& p = *peers_[r];
    p.c = c;
    p.last_rx = clock::now();
    {
      std::lock_guard lk(p.qmu);
      p.fd = c->sock.native_handle();
    }
    {
      std::lock_guard lk(mu_);
      p.established = true;
      ++established_;
      cv_.notify_all();
    }
    spawn(reader(c, p), "reader");
    spawn(writer(c, p), "writer");
    co_return hs_result::ok;
  }

  /// Names the first ';'-separated field where two run signatures differ.
  static std::string signature_diff(const std::string& a, const std::string& b) {
    auto split = [](const std::string& s) {
      std::vector<std::string> out;
      std::size_t at = 0;
      for (;;) {
        const auto k = s.find(';', at);
        out.push_back(s.substr(at, k == std::string::npos ? std::string::npos : k - at));
        if (k == std::string::npos) return out;
        at = k + 1;
      }
    };
    const auto x = split(a), y = split(b);
    for (std::size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
      const std::string u = i < x.size() ? x[i] : "(none)", v = i < y.size() ? y[i] : "(none)";
      if (u == v) continue;
      const auto eq = u.find('=');
      std::string field = i == 0 ? "consistency model" : eq != std::string::npos ? u.substr(0, eq) : "field " + std::to_string(i);
      if (u.size() > 1 && u[0] == 't' && u.find(':') != std::string::npos) field = "table " + u.substr(1, u.find(':') - 1);
      return field + " (here '" + u + "', peer '" + v + "')";
    }
    return "signature hash only";
  }

  // ---- failure and liveness ------------------------------------------------------------------

  /// Reports a fatal error once (io thread): log, tell the peers (abort frame), call fatal_fn.
  void fail(std::error_code ec, const std::string& what) {
    {
      std::lock_guard lk(mu_);
      if (failed_) return;
      failed_ = true;
      cv_.notify_all();
    }
    log_line("fatal: " + what + " [" + ec.message() + "]");
    const auto ab = wire::encode_frame(wire::frame_kind::abort, endpoint{cfg_.rank, 0}, 0,
                                       wire::abort_notice{ec.category() == strata_category() ? ec.value() : 0,
                                                          what});
    for (auto& p : peers_)
      if (p->c && p->c->sock.is_open()) {
        enqueue(*p, ab);
        p->c->closing = true;
        p->c->wake.cancel();
      }
    if (fatal_) fatal_(ec, "tcp rank " + std::to_string(cfg_.rank) + ": " + what);
  }

  asio::awaitable<void> watchdog() {
    asio::steady_timer t(io_);
    for (;;) {
      t.expires_after(hb_interval_);
      std::error_code ec;
      co_await t.async_wait(redirect(ec));
      if (stopping_ || failed_now()) co_return;
      const auto now = clock::now();
      for (auto& p : peers_) {
        if (!p->c) continue;
        {
          std::lock_guard lk(mu_);
          if (p->read_done) continue;
        }
        if (now - p->last_rx > cfg_.peer_timeout) {
          close_conn(*p);
          fail(make_error_code(errc::peer_lost), "lost " + who(p->rank) + ": nothing received for " +
                                                     std::to_string(cfg_.peer_timeout.count()) +
                                                     " ms (peer_timeout); the peer hangs or the network is down");
          co_return;
        }
      }
    }
  }

  // io_ first: destroyed last, after everything that holds its sockets and timers.
  asio::io_context io_{1};
  config cfg_;
  asio::ip::tcp::acceptor acceptor_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::map<std::uint32_t, deliver_fn> routes_;  // local slot -> delivery; read-only after start
  fatal_fn fatal_;
  std::uint32_t world_ = 1;
  wire::hello hello_;
  std::vector<std::byte> heartbeat_frame_, bye_frame_;
  std::chrono::milliseconds hb_interval_{1000};
  clock::time_point deadline_{};
  std::vector<std::unique_ptr<peer>> peers_;
  std::vector<std::weak_ptr<conn>> pending_;  // io thread: connections in their handshake
  bool stopping_ = false;                       // io thread
  std::atomic<std::uint64_t> bytes_{0}, bytes_local_{0};

  std::mutex mu_;  // guards the flags below and peer::{established, bye_rx, write_done, read_done}
  std::condition_variable cv_;
  bool started_ = false, stopped_ = false, stop_requested_ = false, failed_ = false;
  std::uint32_t established_ = 0;
};

static_assert(transport<tcp>);

}  // namespace strata

#ifdef STRATA_TCP_POP_DIAGNOSTIC
#undef STRATA_TCP_POP_DIAGNOSTIC
#pragma GCC diagnostic pop
#endif
