// The TCP handshake coroutine (transport/detail/tcp_handshake.hpp) on a connected loopback socket
// pair inside one process: a matching pair succeeds (with and without a shared secret, and agrees
// on the per-frame keys); another protocol version, world size, run signature, rank or secret is
// fatal on the dialing side with the right strata::errc and a message naming what differs, while
// the accepting side only refuses that connection (telling the other end why) until the peer has
// proved the shared secret; a stranger never learns the run signature when a secret is set; a
// malformed, refused or vanished peer is told apart; and bytes that follow the handshake stay in
// the receive buffer for the reader.
#include <doctest/doctest.h>

#include <strata/transport/detail/tcp_handshake.hpp>
#include <strata/transport/detail/tcp_reader.hpp>
#include <strata/wire/frame.hpp>
#include <strata/wire/handshake.hpp>

#include <asio/buffer.hpp>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_transport_handshake {

namespace {

using namespace strata;
using namespace std::chrono_literals;
using detail::handshake_status;

const std::string sig_bsp = "bsp s=0;nodes=2;wpn=1;t0:dense/4";
const std::string sig_ssp = "ssp s=2;nodes=2;wpn=1;t0:dense/4";
const std::string sig_wide = "bsp s=0;nodes=2;wpn=1;t0:dense/7";

wire::hello make_hello(node_id rank, const std::string& signature, bool secret = false, std::uint32_t world = 2) {
  wire::hello h;
  h.rank = rank;
  h.world = world;
  h.signature = signature;
  h.signature_hash = wire::signature_hash(signature);
  h.secret_set = secret;
  return h;
}

/// One end of the pair: its hello and its handshake options.
struct side {
  wire::hello hello;
  detail::handshake_options opt;
};

std::string test_who(node_id r) { return "rank " + std::to_string(r) + " (test:" + std::to_string(7000 + r) + ")"; }

/// The dialing end (dialing rank `expect`) and the accepting end, set up as the transport does.
side dialer(wire::hello h, node_id expect, std::string secret = "") {
  side e{std::move(h), {}};
  e.opt.expect = expect;
  e.opt.secret = std::move(secret);
  e.opt.who = test_who;
  return e;
}
side acceptor(wire::hello h, std::string secret = "") {
  side e{std::move(h), {}};
  e.opt.remote = "127.0.0.1:5555";
  e.opt.secret = std::move(secret);
  e.opt.who = test_who;
  return e;
}

/// A connected loopback pair in one io_context.
struct socket_pair {
  asio::io_context io;
  detail::tcp_socket a{io}, b{io};
  socket_pair() {
    asio::ip::tcp::acceptor acc(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    a.connect(acc.local_endpoint());
    acc.accept(b);
  }
};

/// What one handshake returned, or that it did not finish.
struct outcome {
  bool done = false;
  std::exception_ptr error;
  detail::handshake_result r;
};

/// Runs one end's handshake; as the transport does, a refused connection is told why (its reply)
/// and closed.
void spawn(socket_pair& sp, detail::tcp_socket& s, detail::rx_buffer& rx, const side& e, outcome& out) {
  asio::co_spawn(sp.io, detail::handshake(s, rx, e.hello, e.opt),
                 [&out, &s](std::exception_ptr ex, detail::handshake_result r) {
                   out.done = true;
                   out.error = ex;
                   if (!ex && r.status == handshake_status::rejected) {
                     std::error_code ig;
                     if (r.reply) asio::write(s, asio::buffer(wire::encode_frame(wire::frame_kind::abort, endpoint{0, 0}, 0, *r.reply)), ig);
                     s.close(ig);
                   }
                   out.r = std::move(r);
                 });
}

/// Runs the handshake on both ends of a fresh pair; both must finish (in well under 10 s).
std::pair<outcome, outcome> handshake_both(const side& a, const side& b) {
  socket_pair sp;
  detail::rx_buffer ra, rb;
  outcome x, y;
  spawn(sp, sp.a, ra, a, x);
  spawn(sp, sp.b, rb, b, y);
  sp.io.run_for(10s);
  REQUIRE(x.done);
  REQUIRE(y.done);
  REQUIRE_FALSE(x.error);
  REQUIRE_FALSE(y.error);
  return {std::move(x), std::move(y)};
}

/// Runs the handshake on end `a` of `sp` while its other end is driven by hand: `raw` is written
/// to it first, then it is closed when `close_after` is set.
outcome handshake_against_raw(socket_pair& sp, detail::rx_buffer& rx, const side& a, const std::vector<std::byte>& raw,
                              bool close_after) {
  if (!raw.empty()) asio::write(sp.b, asio::buffer(raw));
  if (close_after) sp.b.close();
  outcome x;
  spawn(sp, sp.a, rx, a, x);
  sp.io.run_for(10s);
  REQUIRE(x.done);
  REQUIRE_FALSE(x.error);
  return x;
}
outcome handshake_against_raw(const side& a, const std::vector<std::byte>& raw, bool close_after) {
  socket_pair sp;
  detail::rx_buffer rx;
  return handshake_against_raw(sp, rx, a, raw, close_after);
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

std::vector<std::byte> concat(std::vector<std::byte> a, const std::vector<std::byte>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("handshake: a matching pair succeeds on both sides and learns the peer's rank") {
  auto [d, a] = handshake_both(dialer(make_hello(1, sig_bsp), 0), acceptor(make_hello(0, sig_bsp)));
  CHECK(d.r.status == handshake_status::ok);
  CHECK(a.r.status == handshake_status::ok);
  CHECK_FALSE(d.r.ec);
  CHECK_FALSE(a.r.ec);
  CHECK(d.r.peer.rank == 0);
  CHECK(a.r.peer.rank == 1);
  CHECK(a.r.peer.signature == sig_bsp);
  CHECK(d.r.what.empty());
}

TEST_CASE("handshake: the same shared secret on both sides succeeds, and the bytes are counted") {
  std::atomic<std::uint64_t> sent_d{0}, sent_a{0};
  auto ed = dialer(make_hello(1, sig_bsp, true), 0, "alpha");
  auto ea = acceptor(make_hello(0, sig_bsp, true), "alpha");
  ed.opt.bytes_sent = &sent_d;
  ea.opt.bytes_sent = &sent_a;
  auto [d, a] = handshake_both(ed, ea);
  CHECK(d.r.status == handshake_status::ok);
  CHECK(a.r.status == handshake_status::ok);
  // a hello and an auth frame each: two headers plus their payloads
  CHECK(sent_d.load() > 2 * wire::frame_header_size + 32);
  CHECK(sent_d.load() == sent_a.load());
  // Both ends derive the same key for each direction, and the two directions differ.
  REQUIRE(d.r.tx_key);
  REQUIRE(a.r.rx_key);
  CHECK(*d.r.tx_key == *a.r.rx_key);
  CHECK(*d.r.rx_key == *a.r.tx_key);
  CHECK(*d.r.tx_key != *d.r.rx_key);
  CHECK(a.r.peer.signature.empty());  // the signature travelled in the auth frame
  // Without a secret there are no keys.
  auto [d2, a2] = handshake_both(dialer(make_hello(1, sig_bsp), 0), acceptor(make_hello(0, sig_bsp)));
  CHECK_FALSE(d2.r.tx_key);
  CHECK_FALSE(a2.r.rx_key);
}

TEST_CASE("handshake: another protocol version is fatal to the dialer, and the acceptor refuses that connection only") {
  auto h = make_hello(1, sig_bsp);
  h.version = wire::protocol_version + 1;
  auto [d, a] = handshake_both(dialer(h, 0), acceptor(make_hello(0, sig_bsp)));
  CHECK(d.r.status == handshake_status::fatal);
  CHECK(a.r.status == handshake_status::rejected);
  REQUIRE(a.r.reply);
  CHECK(contains(a.r.reply->reason, "protocol version differs"));
  CHECK(d.r.ec == errc::protocol_mismatch);
  CHECK(a.r.ec == errc::protocol_mismatch);
  CHECK(contains(d.r.what, "handshake with rank 0 (test:7000): protocol version differs: here " +
                               std::to_string(wire::protocol_version + 1) + ", peer " +
                               std::to_string(wire::protocol_version)));
  CHECK(contains(a.r.what, "handshake with rank 1 (test:7001) connected from 127.0.0.1:5555: protocol version differs"));
}

TEST_CASE("handshake: a frame header of another protocol version is errc::protocol_mismatch") {
  auto frame = wire::encode_frame(wire::frame_kind::hello, endpoint{1, 0}, 0, make_hello(1, sig_bsp));
  wire::detail::put_le(frame.data() + 4, wire::protocol_version + 98, 4);
  const auto x = handshake_against_raw(acceptor(make_hello(0, sig_bsp)), frame, false);
  CHECK(x.r.status == handshake_status::rejected);
  CHECK(x.r.ec == errc::protocol_mismatch);
  const auto y = handshake_against_raw(dialer(make_hello(1, sig_bsp), 0), frame, false);
  CHECK(y.r.status == handshake_status::fatal);
  CHECK(y.r.ec == errc::protocol_mismatch);
  CHECK(contains(x.r.what, "rank 1 at 127.0.0.1:5555: peer speaks protocol version " +
                               std::to_string(wire::protocol_version + 98)));
}

TEST_CASE("handshake: another run signature is errc::config_mismatch, naming the field, and fatal on both sides once the secret is proved") {
  {
    auto [d, a] = handshake_both(dialer(make_hello(1, sig_ssp), 0), acceptor(make_hello(0, sig_bsp)));
    CHECK(d.r.status == handshake_status::fatal);
    CHECK(a.r.status == handshake_status::rejected);  // no secret: the acceptor cannot tell a stranger
    CHECK(d.r.ec == errc::config_mismatch);
    CHECK(a.r.ec == errc::config_mismatch);
    CHECK(contains(d.r.what, "run signature differs: consistency model (here 'ssp s=2', peer 'bsp s=0')"));
    CHECK(contains(a.r.what, "run signature differs: consistency model (here 'bsp s=0', peer 'ssp s=2')"));
  }
  {
    auto [d, a] = handshake_both(dialer(make_hello(1, sig_wide), 0), acceptor(make_hello(0, sig_bsp)));
    CHECK(d.r.ec == errc::config_mismatch);
    CHECK(a.r.ec == errc::config_mismatch);
    CHECK(contains(d.r.what, "run signature differs: table 0 (here 't0:dense/7', peer 't0:dense/4')"));
    CHECK(contains(a.r.what, "run signature differs: table 0 (here 't0:dense/4', peer 't0:dense/7')"));
  }
  {
    auto [d, a] = handshake_both(dialer(make_hello(1, sig_ssp, true), 0, "alpha"), acceptor(make_hello(0, sig_bsp, true), "alpha"));
    CHECK(d.r.status == handshake_status::fatal);
    CHECK(a.r.status == handshake_status::fatal);
    CHECK(a.r.ec == errc::config_mismatch);
    CHECK(contains(a.r.what, "run signature differs: consistency model (here 'bsp s=0', peer 'ssp s=2')"));
  }
}

TEST_CASE("handshake: another world size, or the wrong rank answering, is errc::config_mismatch") {
  {
    auto [d, a] = handshake_both(dialer(make_hello(1, sig_bsp, false, 3), 0), acceptor(make_hello(0, sig_bsp)));
    CHECK(d.r.ec == errc::config_mismatch);
    CHECK(a.r.ec == errc::config_mismatch);
    CHECK(contains(d.r.what, "world size differs: here 3, peer 2"));
    CHECK(contains(a.r.what, "world size differs: here 2, peer 3"));
  }
  {
    // rank 2 dials rank 0 but reaches a process that calls itself rank 1
    auto [d, a] = handshake_both(dialer(make_hello(2, sig_bsp, false, 3), 0), acceptor(make_hello(1, sig_bsp, false, 3)));
    CHECK(d.r.status == handshake_status::fatal);
    CHECK(d.r.ec == errc::config_mismatch);
    CHECK(contains(d.r.what, "handshake: rank 0 (test:7000) answered as rank 1 (check the host list)"));
    CHECK(a.r.status == handshake_status::ok);  // the accepting side's rank checks are the transport's
    CHECK(a.r.peer.rank == 2);
  }
}

TEST_CASE("handshake: a wrong shared secret is errc::auth_failed: fatal to the dialer (told by the acceptor), refused by the acceptor") {
  auto [d, a] = handshake_both(dialer(make_hello(1, sig_bsp, true), 0, "alpha"),
                               acceptor(make_hello(0, sig_bsp, true), "beta"));
  CHECK(d.r.status == handshake_status::fatal);
  CHECK(a.r.status == handshake_status::rejected);
  CHECK(d.r.ec == errc::auth_failed);
  CHECK(a.r.ec == errc::auth_failed);
  CHECK(contains(d.r.what, "rank 0 (test:7000) refused the connection: shared secret mismatch"));
  CHECK(contains(a.r.what, "shared secret mismatch (the peer's proof does not match the secret set here)"));
}

TEST_CASE("handshake: a secret on one side only is errc::auth_failed on both sides (fatal to the dialer only)") {
  auto [d, a] = handshake_both(dialer(make_hello(1, sig_bsp, true), 0, "alpha"), acceptor(make_hello(0, sig_bsp)));
  CHECK(d.r.ec == errc::auth_failed);
  CHECK(a.r.ec == errc::auth_failed);
  CHECK(d.r.status == handshake_status::fatal);
  CHECK(a.r.status == handshake_status::rejected);
  CHECK(contains(d.r.what, "a shared secret is set here but not on the peer"));
  CHECK(contains(a.r.what, "the peer requires a shared secret and none is set here"));
}

TEST_CASE("handshake: garbage is rejected (this connection only), a refusal is fatal, a vanished peer is a retry") {
  {
    const std::string junk = "GET / HTTP/1.1\r\nHost: strata\r\n\r\n0123456789";
    std::vector<std::byte> raw(junk.size());
    for (std::size_t i = 0; i < junk.size(); ++i) raw[i] = static_cast<std::byte>(junk[i]);
    const auto x = handshake_against_raw(acceptor(make_hello(0, sig_bsp)), raw, false);
    CHECK(x.r.status == handshake_status::rejected);
    CHECK(x.r.ec == errc::bad_frame);
    CHECK(contains(x.r.what, "closing a connection from 127.0.0.1:5555: malformed frame: bad magic"));
  }
  {
    const auto ab = wire::encode_frame(wire::frame_kind::abort, endpoint{0, 0}, 0,
                                       wire::abort_notice{static_cast<std::int32_t>(errc::config_mismatch), "go away"});
    const auto x = handshake_against_raw(dialer(make_hello(1, sig_bsp), 0), ab, false);
    CHECK(x.r.status == handshake_status::fatal);
    CHECK(x.r.ec == errc::config_mismatch);
    CHECK(contains(x.r.what, "rank 0 (test:7000) refused the connection: go away"));
    // The same abort frame sent to an accepting side by a connection that has not authenticated
    // changes nothing: that connection is closed.
    const auto y = handshake_against_raw(acceptor(make_hello(0, sig_bsp)), ab, false);
    CHECK(y.r.status == handshake_status::rejected);
    CHECK(contains(y.r.what, "sent an abort frame before its handshake completed (ignored): go away"));
  }
  {
    const auto x = handshake_against_raw(acceptor(make_hello(0, sig_bsp)), {}, true);
    CHECK(x.r.status == handshake_status::retry);
    CHECK(x.r.ec);
    CHECK(contains(x.r.what, "dropping a connection from 127.0.0.1:5555"));
    const auto y = handshake_against_raw(dialer(make_hello(1, sig_bsp), 0), {}, true);
    CHECK(y.r.status == handshake_status::retry);
    CHECK(y.r.what.empty());  // a dialer just dials again
  }
}

TEST_CASE("handshake: bytes after the peer's hello stay in the receive buffer for the reader") {
  const auto hello = wire::encode_frame(wire::frame_kind::hello, endpoint{0, 0}, 0, make_hello(0, sig_bsp));
  wire::flush f;
  f.seq = 42;
  const auto msg = wire::encode_message(endpoint{0, 3}, endpoint{1, 5}, f);
  socket_pair sp;
  detail::rx_buffer rx;
  // The peer's hello and its first message arrive together, most likely in one read.
  const auto x = handshake_against_raw(sp, rx, dialer(make_hello(1, sig_bsp), 0), concat(hello, msg), false);
  REQUIRE(x.r.status == handshake_status::ok);
  wire::frame_header h;
  std::span<const std::byte> body;
  std::error_code ec, bad;
  std::string why;
  bool done = false, ok = false;
  asio::co_spawn(sp.io, detail::read_frame(sp.a, rx, wire::default_max_frame, h, body, ec, bad, why),
                 [&](std::exception_ptr, bool r) {
                   done = true;
                   ok = r;
                 });
  sp.io.restart();
  sp.io.run_for(5s);
  REQUIRE(done);
  REQUIRE(ok);
  CHECK(h.kind == wire::frame_kind::message);
  CHECK(h.src.node == 0);
  CHECK(h.src.slot == 3);
  CHECK(h.dst_slot == 5);
  const auto m = wire::decode_body<wire::message>(body);
  CHECK(std::get<wire::flush>(m).seq == 42);
}

TEST_CASE("handshake: with a secret, a stranger never sees the run signature and its forged auth is refused, not fatal") {
  const std::string secret_sig = "bsp s=0;nodes=2;wpn=1;t0:dense/4;secret-table-name";
  socket_pair sp;
  detail::rx_buffer rx;
  // The stranger sends a well-formed hello claiming rank 1 and a made-up proof.
  wire::hello stranger = make_hello(1, "", true);
  wire::auth forged;
  forged.mac.fill(0x42);
  const auto raw = concat(wire::encode_frame(wire::frame_kind::hello, endpoint{1, 0}, 0, stranger),
                          wire::encode_frame(wire::frame_kind::auth, endpoint{1, 0}, 0, forged));
  const auto x = handshake_against_raw(sp, rx, acceptor(make_hello(0, secret_sig, true), "alpha"), raw, false);
  CHECK(x.r.status == handshake_status::rejected);
  CHECK(x.r.ec == errc::auth_failed);
  REQUIRE(x.r.reply);
  CHECK(x.r.reply->reason == "shared secret mismatch");
  // Everything the acceptor wrote (its hello, then the abort): no signature in it.
  std::vector<char> got(64 << 10);
  std::error_code ec;
  std::size_t n = 0;
  for (;;) {
    const std::size_t k = sp.b.read_some(asio::buffer(got.data() + n, got.size() - n), ec);
    n += k;
    if (ec || n == got.size()) break;
  }
  const std::string seen(got.data(), n);
  CHECK(n > wire::frame_header_size);
  CHECK_FALSE(contains(seen, "secret-table-name"));
  CHECK_FALSE(contains(seen, "dense/4"));
}

}  // namespace test_transport_handshake
