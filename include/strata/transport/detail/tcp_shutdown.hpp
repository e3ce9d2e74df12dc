#pragma once
/// \file Ending a TCP transport's run: `tcp_abort` (the body of tcp::abort) and the shutdown
/// barrier `tcp_stop` (the body of tcp::stop). system::run returns when this process's workers are
/// done and its shard has seen every worker finish, but a peer may still be waiting for this
/// shard's last acknowledgements or replies. So stop (1) queues a "bye" after everything already
/// queued, (2) keeps delivering and sending while it waits, up to peer_timeout, for a bye from
/// every peer, (3) lets each writer drain its queue and shut down its sending side, (4) waits,
/// bounded, for the peers' end of file, then closes. A process leaves only after every peer has
/// said its run is over.
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>

#include <asio/post.hpp>

#include <strata/core/error.hpp>
#include <strata/transport/detail/tcp_peer.hpp>
#include <strata/transport/detail/tcp_state.hpp>

namespace strata::detail {

/// tcp::abort: every peer gets an abort frame with `reason` and stops at once.
inline void tcp_abort(tcp_state& s, const std::string& reason) {
  {
    std::lock_guard lk(s.mu);
    if (!s.thread.joinable() || s.failed || s.stop_requested) return;
  }
  asio::post(s.io, [&s, reason] { s.fail(make_error_code(errc::peer_lost), "its run failed: " + reason); });
  std::unique_lock lk(s.mu);
  s.cv.wait_for(lk, std::chrono::seconds(5), [&] { return s.failed; });
}

/// tcp::stop: flushes every queued frame, runs the shutdown barrier and closes. Bounded: at most
/// about 2 x peer_timeout. Idempotent.
inline void tcp_stop(tcp_state& s) {
  {
    std::lock_guard lk(s.mu);
    if (!s.started || s.stopped) return;
    s.stopped = s.stop_requested = true;
  }
  if (!s.thread.joinable()) return;
  std::unique_lock lk(s.mu);
  if (!s.failed) {
    lk.unlock();
    for (auto& p : s.peers)
      if (p->rank != s.cfg.rank) enqueue(s.io, *p, s.bye_frame);
    lk.lock();
    const bool all = s.cv.wait_for(lk, s.cfg.peer_timeout, [&] {
      if (s.failed) return true;
      for (auto& p : s.peers)
        if (p->established && !p->bye_rx && !p->read_done) return false;
      return true;
    });
    if (!all) {
      std::string late;
      for (auto& p : s.peers)
        if (p->established && !p->bye_rx && !p->read_done) late += (late.empty() ? "" : ", ") + s.who(p->rank);
      s.log_line("shutdown: no bye within " + std::to_string(s.cfg.peer_timeout.count()) + " ms from " + late +
                 "; closing anyway");
    }
  }
  const bool clean = !s.failed;
  lk.unlock();
  asio::post(s.io, [&s] {
    s.stopping = true;
    for (auto& p : s.peers)
      if (p->c) {
        p->c->closing = true;
        p->c->wake.cancel();
      }
  });
  lk.lock();
  s.cv.wait_for(lk, clean ? s.cfg.peer_timeout : std::chrono::milliseconds(1000), [&] {
    for (auto& p : s.peers)
      if (p->established && !(p->write_done && p->read_done)) return false;
    return true;
  });
  lk.unlock();
  asio::post(s.io, [&s] {
    std::error_code ig;
    s.acceptor.close(ig);
    for (auto& p : s.peers)
      if (p->c) close_conn(*p);
    for (auto& w : s.pending)
      if (auto c = w.lock()) c->sock.close(ig);
    s.io.stop();
  });
  s.work.reset();
  s.thread.join();
}

}  // namespace strata::detail
