#pragma once
/// \file An established peer of the TCP transport: `tcp_send` (the body of tcp::send: local
/// delivery, or encode and hand to the peer's send path), the writer coroutine (everything queued
/// in one gather write; a heartbeat on an idle connection; at shutdown, drain and shut down the
/// sending side), and the reader coroutine (decodes frames and delivers messages; bye, abort, end
/// of file and malformed frames).
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <asio/awaitable.hpp>
#include <asio/buffer.hpp>
#include <asio/post.hpp>
#include <asio/write.hpp>

#include <strata/core/error.hpp>
#include <strata/core/ids.hpp>
#include <strata/wire/frame.hpp>
#include <strata/transport/transport.hpp>
#include <strata/transport/detail/tcp_peer.hpp>
#include <strata/transport/detail/tcp_reader.hpp>
#include <strata/transport/detail/tcp_state.hpp>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace strata::detail {

/// tcp::send: delivers `m` from local endpoint `src` to `dst`; never waits for the network.
/// Throws strata::error(frame_too_large) when the message's frame would exceed max_frame.
inline void tcp_send(tcp_state& s, endpoint src, endpoint dst, wire::message&& m) {
  if (dst.node == s.cfg.rank) {
    auto it = s.routes.find(dst.slot);
    if (it == s.routes.end()) throw error(errc::bad_input, "tcp: no endpoint bound for slot " + std::to_string(dst.slot));
    s.bytes_local.fetch_add(payload_size(m), std::memory_order_relaxed);
    it->second(src, std::move(m));
    return;
  }
  if (dst.node >= s.peers.size())
    throw error(errc::bad_input, "tcp: no peer for node " + std::to_string(dst.node) + " (not started?)");
  tcp_peer& p = *s.peers[dst.node];
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
  wire::encode_frame(f, wire::frame_kind::message, src, dst.slot, m, s.cfg.max_frame, ec);
  if (ec) {
    const std::string what = "message to " + s.who(dst.node) + " over max_frame (" +
                             std::to_string(s.cfg.max_frame) + " bytes)";
    asio::post(s.io, [&s, ec, what] { s.fail(ec, what); });  // the peers must not wait for this run
    throw error(ec, "tcp rank " + std::to_string(s.cfg.rank) + ": " + what);
  }
  send_frame(s.io, p, std::move(f), s.bytes);
}

/// Writes what is queued for `p`, batched; a heartbeat after an idle hb_interval; at shutdown
/// (c->closing) drains the queue and shuts down the sending side.
inline asio::awaitable<void> writer(tcp_state& s, std::shared_ptr<tcp_conn> c, tcp_peer& p) {
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
        c->sock.shutdown(tcp_socket::shutdown_send, ig);
        s.set_flag(p, &tcp_peer::write_done);
        co_return;
      }
      c->wake.expires_after(busy ? std::chrono::milliseconds(1) : s.hb_interval);
      std::error_code ec;
      co_await c->wake.async_wait(redirect(ec));
      if (!c->sock.is_open()) {
        s.set_flag(p, &tcp_peer::write_done);
        co_return;
      }
      if (!ec && !busy && !c->closing) {  // idle for a whole interval: keep the peer's read timeout at bay
        std::lock_guard lk(p.qmu);
        auto hb = s.heartbeat_frame;
        seal(p, hb);
        p.queue.push_back(std::move(hb));
      }
      continue;
    }
    bufs.clear();
    for (auto& f : batch) bufs.push_back(asio::buffer(f));
    std::error_code ec;
    const std::size_t n = co_await asio::async_write(c->sock, bufs, redirect(ec));
    s.bytes.fetch_add(n, std::memory_order_relaxed);
    {
      // Keep a few buffers for the next frames: large per-frame allocations cost more than the
      // copy (page faults, and madvise + TLB shootdowns when malloc trims).
      std::lock_guard lk(p.qmu);
      p.writer_busy = false;
      for (auto& f : batch)
        if (p.spare.size() < tcp_peer::max_spare && f.capacity() <= tcp_peer::max_spare_bytes)
          p.spare.push_back(std::move(f));
    }
    if (ec) {
      s.set_flag(p, &tcp_peer::write_done);
      if (!s.peer_gone_ok(p))
        s.fail(make_error_code(errc::peer_lost), "lost " + s.who(p.rank) + ": write failed: " + ec.message());
      co_return;
    }
  }
}

/// Reads p's frames until the connection ends: delivers messages to the bound endpoints, notes
/// bye, stops the run on abort; end of file before this side may expect it, or a malformed frame,
/// is fatal (the run cannot finish without the peer).
inline asio::awaitable<void> reader(tcp_state& s, std::shared_ptr<tcp_conn> c, tcp_peer& p) {
  wire::frame_header h;
  std::span<const std::byte> body;
  std::error_code ec, bad;
  std::string why;
  for (;;) {
    const std::size_t tag = p.rx_mac ? wire::frame_tag_size : 0;
    const bool ok = co_await read_frame(c->sock, c->rx, s.cfg.max_frame, h, body, ec, bad, why, tag);
    if (!ok && !bad) {  // end of file, reset, or our own close
      s.set_flag(p, &tcp_peer::read_done);
      if (!s.peer_gone_ok(p))
        s.fail(make_error_code(errc::peer_lost), "lost " + s.who(p.rank) + ": " + describe(ec) + " before it finished its run");
      co_return;
    }
    p.last_rx = tcp_state::clock::now();
    if (!bad && p.rx_mac &&
        !p.rx_mac->open(std::span(body.data() - wire::frame_header_size, wire::frame_header_size + body.size()),
                        std::span(body.data() + body.size(), tag))) {
      bad = make_error_code(errc::bad_frame);
      why = "frame " + std::to_string(p.rx_mac->frames() - 1) +
            " failed authentication (its tag does not match: altered, injected or replayed on the way)";
    }
    if (!bad) switch (h.kind) {
        case wire::frame_kind::message: {
          if (h.src.node != p.rank) {
            bad = make_error_code(errc::bad_frame);
            why = "frame claims source node " + std::to_string(h.src.node);
            break;
          }
          auto m = wire::decode_body<wire::message>(body, bad, &why);
          if (bad) break;
          auto it = s.routes.find(h.dst_slot);
          if (it == s.routes.end()) {
            bad = make_error_code(errc::bad_frame);
            why = "no endpoint in slot " + std::to_string(h.dst_slot) + " here";
            break;
          }
          it->second(h.src, std::move(m));
          break;
        }
        case wire::frame_kind::heartbeat: break;
        case wire::frame_kind::bye: s.set_flag(p, &tcp_peer::bye_rx); break;
        case wire::frame_kind::abort: {
          auto a = wire::decode_body<wire::abort_notice>(body, bad, &why);
          if (bad) break;
          s.fail(a.error(), s.who(p.rank) + " stopped the run: " + a.reason);
          break;
        }
        default:
          bad = make_error_code(errc::bad_frame);
          why = "unexpected handshake frame after the handshake";
      }
    if (bad) {
      s.log_line("closing the connection to " + s.who(p.rank) + ": " + bad.message() + ": " + why);
      close_conn(p);
      s.set_flag(p, &tcp_peer::read_done);
      s.set_flag(p, &tcp_peer::write_done);
      s.fail(bad, s.who(p.rank) + " sent a frame that was refused (" + why +
                      "); its connection is closed and the run cannot finish without it");
      co_return;
    }
  }
}

}  // namespace strata::detail

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic pop
#endif
