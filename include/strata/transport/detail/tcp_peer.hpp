#pragma once
/// \file One peer of the TCP transport: its connection (socket, the writer's wake timer, receive
/// buffer), its send queue, and the send path that feeds it. `send_frame` writes a frame at once
/// from the calling thread with one non-blocking send(2) when the connection is idle, and queues
/// it for the peer's writer coroutine otherwise; FIFO holds because a direct write happens only
/// when nothing is queued or being written.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sys/socket.h>
#include <sys/types.h>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include <strata/core/ids.hpp>
#include <strata/wire/frame_mac.hpp>
#include <strata/transport/detail/tcp_reader.hpp>

namespace strata::detail {

/// One TCP connection.
struct tcp_conn {
  explicit tcp_conn(tcp_socket s) : sock(std::move(s)), wake(sock.get_executor()) {}
  tcp_socket sock;
  asio::steady_timer wake;  // the writer sleeps on it; send() cancels it
  std::string remote;       // far end as ip:port
  bool closing = false;     // io thread: drain the queue, then shut down the sending side
  bool handshaking = true;  // io thread: not yet adopted as a peer's, nor refused
  rx_buffer rx;             // io thread: received bytes, shared by handshake and reader
};

/// Everything about one rank.
struct tcp_peer {
  using clock = std::chrono::steady_clock;
  /// Written frame buffers kept for reuse by send(): at most this many, of at most this capacity.
  static constexpr std::size_t max_spare = 16, max_spare_bytes = std::size_t{4} << 20;

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
  std::unique_ptr<wire::frame_mac> tx_mac;  // guarded by qmu: tags every frame sent (shared secret set)
  std::unique_ptr<wire::frame_mac> rx_mac;  // io thread: verifies every frame received
  std::shared_ptr<tcp_conn> c;         // io thread
  clock::time_point last_rx{};         // io thread
  bool established = false, bye_rx = false, write_done = false, read_done = false;  // tcp_state::mu
};

/// Makes sure the writer looks at the queue soon (one post per batch, not per frame). Takes the
/// peer's queue lock and releases it.
inline void wake_writer(asio::io_context& io, tcp_peer& p, std::unique_lock<std::mutex>& lk) {
  const bool post = !p.signaled;
  p.signaled = true;
  lk.unlock();
  if (post)
    asio::post(io, [&p] {
      if (p.c) p.c->wake.cancel();
    });
}

/// Appends the frame's tag when the connection authenticates its frames. Called under p.qmu, in
/// the order the frames will go on the wire.
inline void seal(tcp_peer& p, std::vector<std::byte>& frame) {
  if (p.tx_mac) p.tx_mac->seal(frame);
}

/// Queues a frame for the peer's writer.
inline void enqueue(asio::io_context& io, tcp_peer& p, std::vector<std::byte> frame) {
  std::unique_lock lk(p.qmu);
  seal(p, frame);
  p.queue.push_back(std::move(frame));
  wake_writer(io, p, lk);
}

/// Sends a message frame. When the connection is idle (nothing queued, no write in progress)
/// the calling thread writes it at once with one non-blocking send(2), saving the hop to the
/// comm thread (a get that misses the cache waits for it); whatever does not fit in the socket
/// buffer, and every frame that finds the connection busy, is queued for the writer, which
/// batches them into one gather write. Order is kept: a direct write happens only on an empty
/// queue. `bytes` counts what the direct write sent.
inline void send_frame(asio::io_context& io, tcp_peer& p, std::vector<std::byte> f, std::atomic<std::uint64_t>& bytes) {
  std::unique_lock lk(p.qmu);
  seal(p, f);
  if (p.fd < 0 || p.direct || p.writer_busy || !p.queue.empty()) {
    p.queue.push_back(std::move(f));
    return wake_writer(io, p, lk);
  }
  p.direct = true;
  const int fd = p.fd;
  lk.unlock();
  const ::ssize_t n = ::send(fd, f.data(), f.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  const std::size_t done = n > 0 ? static_cast<std::size_t>(n) : 0;
  bytes.fetch_add(done, std::memory_order_relaxed);
  lk.lock();
  p.direct = false;
  if (done == f.size()) {
    if (p.spare.size() < tcp_peer::max_spare && f.capacity() <= tcp_peer::max_spare_bytes) p.spare.push_back(std::move(f));
    if (p.queue.empty()) return;  // frames queued meanwhile (by other threads) need the writer
  } else {
    // Socket buffer full (or an error, which the writer will meet and report): the rest goes
    // first in line.
    f.erase(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(done));
    p.queue.insert(p.queue.begin(), std::move(f));
  }
  p.signaled = false;  // the writer may have consumed the last wake while we were writing
  wake_writer(io, p, lk);
}

/// Stops direct writes on p's socket (io thread): after this no other thread touches its fd,
/// so it may be shut down or closed without a stray send(2) reaching a reused descriptor.
inline void stop_direct(tcp_peer& p) {
  std::unique_lock lk(p.qmu);
  p.fd = -1;
  while (p.direct) {  // a non-blocking send(2) in progress: microseconds
    lk.unlock();
    std::this_thread::yield();
    lk.lock();
  }
}

/// Closes p's connection (io thread).
inline void close_conn(tcp_peer& p) {
  stop_direct(p);
  std::error_code ig;
  p.c->sock.close(ig);
}

}  // namespace strata::detail
