// libFuzzer target: the TCP listener before authentication (transport/detail/tcp_dial.hpp's
// accept loop, handshake and admission) against many connections at once. The input's first byte
// chooses whether a shared secret is set, the second how many connections (1 to 96; the pending
// cap is set to 8 so it is exceeded), and the rest is dealt round-robin to them in chunks of up to
// 64 bytes; a connection whose first byte is odd stays open after its bytes, the others close.
// The listener binds 127.0.0.1 on an ephemeral port. Checks, whatever arrives:
//  - with a secret no connection is adopted and the run never fails (nothing can be proved);
//  - without one, the run fails only after a connection was adopted as a peer (a matching hello);
//  - never more accepted connections in their handshake than the cap;
//  - at most 20 refusal lines (one 10 s window), plus the count line.
#include <strata/transport/detail/tcp_dial.hpp>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace strata;
  using namespace std::chrono_literals;
  if (size < 2) return 0;
  const bool secret = data[0] & 1;
  const std::size_t conns = 1 + data[1] % 96;
  data += 2;
  size -= 2;

  tcp_settings cfg;
  cfg.rank = 0;
  cfg.peers = {{"127.0.0.1", 0}, {"127.0.0.1", 0}};
  cfg.secret = secret ? "s3cret" : "";
  cfg.max_frame = std::size_t{1} << 20;
  cfg.handshake_timeout = 50ms;
  cfg.max_pending_handshakes = 8;
  std::size_t refusal_lines = 0;
  cfg.log = [&](const std::string&) { ++refusal_lines; };
  detail::tcp_state s(cfg);
  bool failed = false;
  s.fatal = [&](std::error_code, const std::string&) { failed = true; };
  s.world = 2;
  s.hello.rank = 0;
  s.hello.world = 2;
  s.hello.signature = "bsp s=0;nodes=2;wpn=1;t0:dense/4";
  s.hello.signature_hash = wire::signature_hash(s.hello.signature);
  s.hello.secret_set = secret;
  const endpoint me{0, 0};
  s.heartbeat_frame = wire::encode_frame(wire::frame_kind::heartbeat, me, 0, wire::empty_body{});
  for (node_id r = 0; r < 2; ++r) {
    s.peers.push_back(std::make_unique<detail::tcp_peer>());
    s.peers.back()->rank = r;
  }
  detail::open_listener(s);
  const auto port = s.acceptor.local_endpoint().port();
  s.spawn(detail::accept_loop(s), "accept loop");

  // The clients: connect, write their share, close or stay.
  std::vector<std::vector<std::uint8_t>> share(conns);
  for (std::size_t off = 0, i = 0; off < size; i = (i + 1) % conns) {
    const std::size_t n = std::min<std::size_t>(64, size - off);
    share[i].insert(share[i].end(), data + off, data + off + n);
    off += n;
  }
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> clients;
  std::size_t max_pending = 0;
  for (std::size_t i = 0; i < conns; ++i) {
    auto c = std::make_unique<asio::ip::tcp::socket>(s.io);
    std::error_code ec;
    c->connect({asio::ip::make_address("127.0.0.1"), port}, ec);
    if (ec) std::abort();
    if (!share[i].empty()) asio::write(*c, asio::buffer(share[i]), ec);
    if (share[i].empty() || share[i][0] % 2 == 0) c->close(ec);
    clients.push_back(std::move(c));
    s.io.run_for(2ms);
    max_pending = std::max(max_pending, s.accepted.size());
  }
  // Until every handshake has ended (closed, refused or timed out), or 300 ms.
  for (int i = 0; i < 60; ++i) {
    s.io.run_for(5ms);
    max_pending = std::max(max_pending, s.accepted.size());
    std::erase_if(s.accepted, [](const std::weak_ptr<detail::tcp_conn>& w) {
      auto x = w.lock();
      return !x || !x->handshaking;
    });
    if (s.accepted.empty() && i >= 2) break;
  }

  std::size_t adopted = 0;
  for (auto& p : s.peers) adopted += p->c != nullptr;
  if (secret && (adopted > 0 || failed)) std::abort();
  if (!secret && failed && adopted == 0) std::abort();
  if (max_pending > cfg.max_pending_handshakes) std::abort();
  if (refusal_lines > 21 + (failed ? 2 : 0) + adopted) std::abort();

  // Tear down as tcp::stop does.
  std::error_code ig;
  s.acceptor.close(ig);
  for (auto& c : clients) c->close(ig);
  s.stopping = true;
  for (auto& p : s.peers)
    if (p->c) detail::close_conn(*p);
  for (auto& w : s.pending)
    if (auto c = w.lock()) c->sock.close(ig);
  s.io.run_for(50ms);
  return 0;
}
