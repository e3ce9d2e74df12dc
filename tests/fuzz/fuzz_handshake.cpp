// libFuzzer target: the TCP handshake coroutine (transport/detail/tcp_handshake.hpp) against a
// peer that sends arbitrary bytes and then closes. The handshake runs on one end of a local
// socket pair (AF_UNIX, adopted as a TCP socket: the coroutine only reads and writes), so no
// port is bound. Whatever arrives, it must end with a status (ok, retry, rejected or fatal),
// never crash, hang or read out of bounds, and an accepting side never ends with fatal. The first input byte chooses whether a shared secret
// is set here (so the auth exchange is reached too).
#include <strata/transport/detail/tcp_handshake.hpp>
#include <strata/transport/detail/tcp_reader.hpp>
#include <strata/wire/handshake.hpp>

#include <asio/buffer.hpp>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/write.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>

namespace {
const std::string signature = "bsp s=0;nodes=2;wpn=1;t0:dense/4";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace strata;
  if (size == 0) return 0;
  const bool secret = data[0] & 1;
  const bool dialing = data[0] & 2;
  ++data;
  --size;
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::abort();
  asio::io_context io;
  detail::tcp_socket mine(io);
  mine.assign(asio::ip::tcp::v4(), fds[0]);
  // The peer's bytes go in first (the socket buffer holds them), then its end is closed.
  for (std::size_t off = 0; off < size;) {
    const ssize_t n = ::write(fds[1], data + off, size - off);
    if (n <= 0) break;
    off += static_cast<std::size_t>(n);
  }
  ::close(fds[1]);

  wire::hello h;
  h.rank = 0;
  h.world = 2;
  h.signature = signature;
  h.signature_hash = wire::signature_hash(signature);
  h.secret_set = secret;
  detail::handshake_options o;
  o.secret = secret ? "s3cret" : "";
  o.max_frame = std::size_t{1} << 20;
  if (dialing) o.expect = 1;
  detail::rx_buffer rx;
  bool done = false;
  asio::co_spawn(io, detail::handshake(mine, rx, h, o), [&](std::exception_ptr ex, detail::handshake_result r) {
    if (ex) std::abort();  // the coroutine reports through its result, never by throwing
    if (dialing && r.status == detail::handshake_status::ok && r.peer.rank != 1) std::abort();  // ok only from the rank dialed
    // An accepting side never fails the run on a peer that has not proved the secret (and the
    // fuzzer cannot prove it: the nonce is fresh), nor, without a secret, on anything.
    if (!dialing && r.status == detail::handshake_status::fatal) std::abort();
    done = true;
  });
  io.run_for(std::chrono::seconds(5));
  if (!done) std::abort();  // a closed peer must end the handshake
  return 0;
}
