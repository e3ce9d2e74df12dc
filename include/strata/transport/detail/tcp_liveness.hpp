#pragma once
/// \file Liveness of the TCP transport's peers. An idle connection carries a heartbeat every
/// heartbeat_interval (peer_timeout / 4; the peer's writer sends it), and the watchdog reports a
/// peer silent for peer_timeout (a hung process, a cut cable) as lost, so a run never waits longer
/// than peer_timeout for a dead peer. End of file and resets are reported at once by the reader.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <system_error>

#include <asio/awaitable.hpp>
#include <asio/steady_timer.hpp>

#include <strata/core/error.hpp>
#include <strata/transport/detail/tcp_peer.hpp>
#include <strata/transport/detail/tcp_reader.hpp>
#include <strata/transport/detail/tcp_state.hpp>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace strata::detail {

/// How often an idle connection carries a heartbeat (and the watchdog looks): a quarter of
/// peer_timeout, within [5 ms, 2 s].
inline std::chrono::milliseconds heartbeat_interval(std::chrono::milliseconds peer_timeout) {
  const auto quarter = peer_timeout / 4;
  return std::clamp<std::chrono::milliseconds>(std::chrono::duration_cast<std::chrono::milliseconds>(quarter),
                                               std::chrono::milliseconds(5), std::chrono::milliseconds(2000));
}

/// Every hb_interval: fails the run when an established peer has sent nothing for peer_timeout.
/// Silence is counted only while this process ran: when the watchdog itself wakes late (the
/// process was descheduled on a loaded machine, stalled on I/O, or stopped), the time lost is not
/// the peers' silence; and a peer whose bytes wait unread in the socket is not silent either (the
/// reader has not had its turn yet).
inline asio::awaitable<void> watchdog(tcp_state& s) {
  asio::steady_timer t(s.io);
  auto last_look = tcp_state::clock::now();
  for (;;) {
    t.expires_after(s.hb_interval);
    std::error_code ec;
    co_await t.async_wait(redirect(ec));
    if (s.stopping || s.failed_now()) co_return;
    const auto now = tcp_state::clock::now();
    const auto late = now - last_look - s.hb_interval;
    last_look = now;
    for (auto& p : s.peers) {
      if (!p->c) continue;
      {
        std::lock_guard lk(s.mu);
        if (p->read_done) continue;
      }
      if (late > s.hb_interval) p->last_rx += late;
      if (now - p->last_rx > s.cfg.peer_timeout) {
        std::error_code aec;
        if (p->c->sock.available(aec) > 0 && !aec) {
          p->last_rx = now;
          continue;
        }
        close_conn(*p);
        s.fail(make_error_code(errc::peer_lost), "lost " + s.who(p->rank) + ": nothing received for " +
                                                     std::to_string(s.cfg.peer_timeout.count()) +
                                                     " ms (peer_timeout); the peer hangs or the network is down");
        co_return;
      }
    }
  }
}

}  // namespace strata::detail

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic pop
#endif
