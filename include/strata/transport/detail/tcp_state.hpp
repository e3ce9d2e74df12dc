#pragma once
/// \file The state the parts of the TCP transport share (io_context and comm thread, settings,
/// routes, peers, counters, and the flags under `mu`), with the helpers every part uses: naming a
/// rank, logging, the run-wide flags, spawning a coroutine, and `fail`, which reports a fatal
/// error once and tells the peers (abort frame).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <asio/co_spawn.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>

#include <strata/core/error.hpp>
#include <strata/core/ids.hpp>
#include <strata/wire/frame.hpp>
#include <strata/wire/handshake.hpp>
#include <strata/transport/tcp_settings.hpp>
#include <strata/transport/transport.hpp>
#include <strata/transport/detail/tcp_peer.hpp>

namespace strata::detail {

/// Everything a tcp transport holds. Threads: `io`'s one comm thread runs every coroutine; send()
/// runs on any thread (peer queues are guarded by tcp_peer::qmu); start(), abort() and stop() run
/// on the owner's thread and wait on `cv`.
struct tcp_state {
  using clock = std::chrono::steady_clock;

  explicit tcp_state(tcp_settings c) : cfg(std::move(c)), acceptor(io) {}
  tcp_state(const tcp_state&) = delete;
  tcp_state& operator=(const tcp_state&) = delete;

  // io first: destroyed last, after everything that holds its sockets and timers.
  asio::io_context io{1};
  tcp_settings cfg;
  asio::ip::tcp::acceptor acceptor;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread thread;
  std::map<std::uint32_t, deliver_fn> routes;  // local slot -> delivery; read-only after start
  fatal_fn fatal;
  std::uint32_t world = 1;
  wire::hello hello;
  std::vector<std::byte> heartbeat_frame, bye_frame;
  std::chrono::milliseconds hb_interval{1000};
  clock::time_point deadline{};
  std::vector<std::unique_ptr<tcp_peer>> peers;
  std::vector<std::weak_ptr<tcp_conn>> pending;  // io thread: connections in their handshake
  std::deque<std::weak_ptr<tcp_conn>> accepted;  // io thread: accepted ones in their handshake, oldest first
  std::string last_refusal;                      // io thread: why the last accepted connection was refused
  clock::time_point refusal_window{};            // io thread: rate limit of the refusal log lines
  std::uint64_t refusals_logged = 0, refusals_quiet = 0;
  bool stopping = false;                         // io thread
  std::atomic<std::uint64_t> bytes{0}, bytes_local{0};

  std::mutex mu;  // guards the flags below and tcp_peer::{established, bye_rx, write_done, read_done}
  std::condition_variable cv;
  bool started = false, stopped = false, stop_requested = false, failed = false;
  std::uint32_t established = 0;

  /// "rank 1 (host:port)".
  std::string who(node_id r) const {
    if (r < cfg.peers.size())
      return "rank " + std::to_string(r) + " (" + cfg.peers[r].first + ":" + std::to_string(cfg.peers[r].second) + ")";
    return "rank " + std::to_string(r);
  }
  void log_line(const std::string& s) const {
    const std::string line = "strata tcp[rank " + std::to_string(cfg.rank) + "]: " + s;
    if (cfg.log) cfg.log(line);
    else std::fprintf(stderr, "%s\n", line.c_str());
  }

  /// Logs what happened to a connection that has not authenticated (its text escaped): at most
  /// 20 lines in 10 s, then one line with the count of those not logged.
  void log_refusal(const std::string& s) {
    const auto now = clock::now();
    if (now - refusal_window >= std::chrono::seconds(10)) {
      if (refusals_quiet > 0)
        log_line(std::to_string(refusals_quiet) + " more refused or dropped connection(s) were not logged");
      refusal_window = now;
      refusals_logged = refusals_quiet = 0;
    }
    if (refusals_logged < 20) {
      ++refusals_logged;
      log_line(s);
    } else {
      ++refusals_quiet;
    }
  }

  bool failed_now() {
    std::lock_guard lk(mu);
    return failed;
  }
  /// A closed connection is expected after a failure, or once both this process and the peer have
  /// finished their runs. A peer that leaves while this process still runs is lost, bye or not: it
  /// left early (its barrier timed out, or its run failed after it said bye).
  bool peer_gone_ok(tcp_peer& p) {
    std::lock_guard lk(mu);
    return failed || stopping || (stop_requested && p.bye_rx);
  }
  void set_flag(tcp_peer& p, bool tcp_peer::*f) {
    std::lock_guard lk(mu);
    p.*f = true;
    cv.notify_all();
  }

  /// Reports a fatal error once (io thread): log, tell the peers (abort frame), call fatal_fn.
  void fail(std::error_code ec, const std::string& what) {
    {
      std::lock_guard lk(mu);
      if (failed) return;
      failed = true;
      cv.notify_all();
    }
    log_line("fatal: " + what + " [" + ec.message() + "]");
    const auto ab = wire::encode_frame(wire::frame_kind::abort, endpoint{cfg.rank, 0}, 0,
                                       wire::abort_notice::of(ec, what));
    for (auto& p : peers)
      if (p->c && p->c->sock.is_open()) {
        enqueue(io, *p, ab);
        p->c->closing = true;
        p->c->wake.cancel();
      }
    if (fatal) fatal(ec, "tcp rank " + std::to_string(cfg.rank) + ": " + what);
  }

  /// Runs a coroutine on the comm thread; an exception escaping it fails the run.
  template <class Awaitable>
  void spawn(Awaitable&& a, const char* what) {
    asio::co_spawn(io, std::forward<Awaitable>(a), [this, what](std::exception_ptr e, auto&&...) {
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        fail(make_error_code(errc::bad_input), std::string("internal error in the ") + what + ": " + x.what());
      }
    });
  }
};

}  // namespace strata::detail
