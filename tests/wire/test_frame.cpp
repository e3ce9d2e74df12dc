// Wire framing: round trips, byte compatibility with cereal's binary archive, and the error code of
// every kind of bad input (garbage, truncation, wrong version, oversize, hostile lengths).
#include <doctest/doctest.h>

#include <stdexcept>

#include <strata/wire/frame.hpp>
#include <strata/wire/handshake.hpp>
#include <strata/wire/sha256.hpp>
#include <strata/wire/frame_mac.hpp>

#include <cereal/archives/binary.hpp>

#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_wire_frame {

namespace {

using namespace strata;

wire::flush sample_flush() {
  wire::flush f;
  f.from = 3;
  f.seq = 17;
  f.tag = 4;
  f.new_clock = 5;
  f.done = true;
  f.count = 2;
  for (int i = 0; i < 300; ++i) f.payload.bytes.push_back(static_cast<std::byte>(i * 7));
  return f;
}

std::string hex(const std::array<std::uint8_t, 32>& d) {
  std::string s;
  char b[3];
  for (auto x : d) {
    std::snprintf(b, sizeof b, "%02x", x);
    s += b;
  }
  return s;
}

std::vector<std::byte> with_header(std::vector<std::byte> frame, std::size_t at, std::uint64_t v, int n) {
  // the bounds check also keeps GCC 12's -Warray-bounds from guessing the frame is empty at -O2
  if (frame.size() < at + static_cast<std::size_t>(n)) throw std::out_of_range("with_header past the frame");
  wire::detail::put_le(frame.data() + at, v, n);
  return frame;
}

}  // namespace

TEST_CASE("frame: every message kind round-trips with its header") {
  const endpoint src{2, 1}, dst{0, 0};
  wire::row_request q{5, 1, {1234567890123ull}, 9, true};
  wire::row_request batch{5, 1, {3, 1234567890123ull, 8}, 9, false};
  wire::rows r;
  r.shard = 1;
  r.reflects = 7;
  r.acked_seq = 3;
  r.push = true;
  r.count = 1;
  r.payload.bytes.assign(64, std::byte{0x5a});
  for (const wire::message& m : {wire::message{sample_flush()}, wire::message{q}, wire::message{batch}, wire::message{r}}) {
    auto bytes = wire::encode_message(src, dst, m);
    std::error_code ec;
    auto [h, back] = wire::decode_message(bytes, wire::default_max_frame, ec);
    REQUIRE_FALSE(ec);
    CHECK(h.src == src);
    CHECK(h.dst_slot == dst.slot);
    CHECK(h.kind == wire::frame_kind::message);
    CHECK(h.length == bytes.size() - wire::frame_header_size);
    REQUIRE(back.index() == m.index());
    // Re-encoding the decoded message gives the same bytes.
    CHECK(wire::encode_message(src, dst, back) == bytes);
  }
  auto bytes = wire::encode_message(src, dst, sample_flush());
  std::error_code ec;
  auto back = std::get<wire::flush>(wire::decode_message(bytes, wire::default_max_frame, ec).second);
  const auto f = sample_flush();
  CHECK(back.from == f.from);
  CHECK(back.seq == f.seq);
  CHECK(back.tag == f.tag);
  CHECK(back.new_clock == f.new_clock);
  CHECK(back.done == f.done);
  CHECK(back.count == f.count);
  CHECK(back.payload.bytes == f.payload.bytes);
}

TEST_CASE("frame: the payload is exactly cereal::BinaryOutputArchive's bytes") {
  const wire::message m = sample_flush();
  std::ostringstream os;
  {
    cereal::BinaryOutputArchive ar(os);
    ar(m);
  }
  const std::string ref = os.str();
  auto bytes = wire::encode_message({0, 1}, {1, 0}, m);
  REQUIRE(bytes.size() == wire::frame_header_size + ref.size());
  CHECK(std::memcmp(bytes.data() + wire::frame_header_size, ref.data(), ref.size()) == 0);
  // And cereal's own reader parses our payload.
  std::istringstream is(std::string(reinterpret_cast<const char*>(bytes.data() + wire::frame_header_size),
                                    bytes.size() - wire::frame_header_size));
  wire::message back;
  cereal::BinaryInputArchive in(is);
  in(back);
  CHECK(std::get<wire::flush>(back).payload.bytes == sample_flush().payload.bytes);
}

TEST_CASE("frame: control bodies round-trip (hello, auth, abort)") {
  wire::hello h;
  h.rank = 3;
  h.world = 4;
  h.signature = "bsp s=0;nodes=4;wpn=2";
  h.signature_hash = wire::signature_hash(h.signature);
  h.nonce[0] = 9;
  h.secret_set = true;
  auto bytes = wire::encode_frame(wire::frame_kind::hello, {3, 0}, 0, h);
  std::error_code ec;
  auto v = wire::split_frame(bytes, wire::default_max_frame, ec);
  REQUIRE_FALSE(ec);
  CHECK(v.header.kind == wire::frame_kind::hello);
  auto back = wire::decode_body<wire::hello>(v.payload, ec);
  REQUIRE_FALSE(ec);
  CHECK(back.rank == 3);
  CHECK(back.world == 4);
  CHECK(back.signature == h.signature);
  CHECK(back.signature_hash == h.signature_hash);
  CHECK(back.nonce == h.nonce);
  CHECK(back.secret_set);

  wire::abort_notice a{static_cast<int>(errc::peer_lost), "lost rank 2"};
  auto ab = wire::encode_frame(wire::frame_kind::abort, {0, 0}, 0, a);
  auto av = wire::split_frame(ab, wire::default_max_frame, ec);
  auto aback = wire::decode_body<wire::abort_notice>(av.payload, ec);
  CHECK(aback.code == a.code);
  CHECK(aback.reason == a.reason);

  auto hb = wire::encode_frame(wire::frame_kind::heartbeat, {0, 0}, 0, wire::empty_body{});
  CHECK(hb.size() == wire::frame_header_size);
}

TEST_CASE("frame: SHA-256 and HMAC-SHA256 match the published test vectors") {
  CHECK(hex(wire::detail::sha256::of("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex(wire::detail::sha256::of("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex(wire::detail::sha256::of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string data = "what do ya want for nothing?";  // RFC 4231 test case 2
  const auto mac = wire::detail::hmac_sha256(
      "Jefe", std::span(reinterpret_cast<const std::uint8_t*>(data.data()), data.size()));
  CHECK(hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  std::array<std::uint8_t, 16> n1{}, n2{};
  n1[0] = 1;
  CHECK(wire::auth_mac("s", n1, n2, 0) != wire::auth_mac("t", n1, n2, 0));
  CHECK(wire::auth_mac("s", n1, n2, 0) != wire::auth_mac("s", n2, n1, 0));
  CHECK(wire::auth_mac("s", n1, n2, 0) != wire::auth_mac("s", n1, n2, 1));
  CHECK(wire::equal_macs(wire::auth_mac("s", n1, n2, 0), wire::auth_mac("s", n1, n2, 0)));
}

TEST_CASE("frame: garbage is errc::bad_frame") {
  std::mt19937_64 rng(7);
  std::vector<std::byte> junk(100);
  for (auto& b : junk) b = static_cast<std::byte>(rng());
  std::error_code ec;
  std::string why;
  wire::decode_header(junk, wire::default_max_frame, ec, &why);
  CHECK(ec == errc::bad_frame);
  CHECK(why.find("bad magic") != std::string::npos);
  CHECK_THROWS_AS(wire::decode_header(junk), strata::error);
  // HTTP on the wrong port.
  const std::string get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  wire::decode_header(std::span(reinterpret_cast<const std::byte*>(get.data()), get.size()), wire::default_max_frame, ec);
  CHECK(ec == errc::bad_frame);
  // Unknown frame kind.
  auto bytes = wire::encode_message({0, 1}, {1, 0}, sample_flush());
  bytes[8] = std::byte{42};
  wire::decode_header(bytes, wire::default_max_frame, ec, &why);
  CHECK(ec == errc::bad_frame);
  CHECK(why.find("unknown frame kind") != std::string::npos);
}

TEST_CASE("frame: every truncation is errc::bad_frame, never a crash") {
  const auto bytes = wire::encode_message({0, 1}, {1, 0}, sample_flush());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    std::error_code ec;
    wire::decode_message(std::span(bytes.data(), n), wire::default_max_frame, ec);
    CHECK(ec == errc::bad_frame);
  }
  // A header that is fine but a payload cut short (as the transport sees it: length says more).
  const auto payload = std::span(bytes).subspan(wire::frame_header_size);
  for (std::size_t n = 0; n < payload.size(); n += 7) {
    std::error_code ec;
    wire::decode_body<wire::message>(payload.first(n), ec);
    CHECK(ec == errc::bad_frame);
  }
  // Trailing bytes after a complete payload.
  std::vector<std::byte> longer(payload.begin(), payload.end());
  longer.push_back(std::byte{0});
  std::error_code ec;
  std::string why;
  wire::decode_body<wire::message>(longer, ec, &why);
  CHECK(ec == errc::bad_frame);
  CHECK(why.find("trailing") != std::string::npos);
}

TEST_CASE("frame: another protocol version is errc::protocol_mismatch, naming the sender") {
  auto bytes = with_header(wire::encode_message({2, 1}, {1, 0}, sample_flush()), 4, wire::protocol_version + 1, 4);
  std::error_code ec;
  std::string why;
  auto h = wire::decode_header(bytes, wire::default_max_frame, ec, &why);
  CHECK(ec == errc::protocol_mismatch);
  CHECK(h.src.node == 2);
  CHECK(h.version == wire::protocol_version + 1);
  CHECK(why.find("protocol version") != std::string::npos);
}

TEST_CASE("frame: over the size limit is errc::frame_too_large, on both ends") {
  // Encoding refuses it.
  std::vector<std::byte> out;
  std::error_code ec;
  wire::encode_frame(out, wire::frame_kind::message, {0, 1}, 0, wire::message{sample_flush()}, 100, ec);
  CHECK(ec == errc::frame_too_large);
  CHECK(out.empty());
  CHECK_THROWS_AS(wire::encode_message({0, 1}, {1, 0}, sample_flush(), 100), strata::error);
  // Decoding refuses a header announcing more, before any payload is read.
  auto bytes = with_header(wire::encode_message({0, 1}, {1, 0}, sample_flush()), 16, std::uint64_t{1} << 40, 8);
  wire::decode_header(bytes, wire::default_max_frame, ec);
  CHECK(ec == errc::frame_too_large);
  bytes = with_header(bytes, 16, ~std::uint64_t{0}, 8);  // no overflow in length + header
  wire::decode_header(bytes, wire::default_max_frame, ec);
  CHECK(ec == errc::frame_too_large);
  // Exactly at the limit is fine.
  const auto ok = wire::encode_message({0, 1}, {1, 0}, sample_flush());
  wire::decode_header(ok, ok.size(), ec);
  CHECK_FALSE(ec);
  wire::decode_header(ok, ok.size() - 1, ec);
  CHECK(ec == errc::frame_too_large);
}

TEST_CASE("frame: hostile lengths inside a payload are errc::bad_frame without allocating them") {
  auto bytes = wire::encode_message({0, 1}, {1, 0}, sample_flush());
  // flush payload layout: variant index i32, from u32, seq u64, tag i64, new_clock i64, done bool,
  // count u32, blob length u64 at offset 4+4+8+8+8+1+4 = 37 into the payload.
  const std::size_t blob_len_at = wire::frame_header_size + 37;
  REQUIRE(wire::detail::get_le(bytes.data() + blob_len_at, 8) == 300);
  for (std::uint64_t hostile : {std::uint64_t{301}, std::uint64_t{1} << 40, ~std::uint64_t{0}}) {
    auto b = with_header(bytes, blob_len_at, hostile, 8);
    std::error_code ec;
    std::string why;
    wire::decode_message(b, wire::default_max_frame, ec, &why);
    CHECK(ec == errc::bad_frame);
    CHECK(why.find("exceeds the payload") != std::string::npos);
  }
  // A string length in a hello.
  wire::hello h;
  h.signature = "abc";
  auto hb = wire::encode_frame(wire::frame_kind::hello, {0, 0}, 0, h);
  const std::size_t str_len_at = wire::frame_header_size + 4 + 4 + 4 + 8;
  REQUIRE(wire::detail::get_le(hb.data() + str_len_at, 8) == 3);
  hb = with_header(hb, str_len_at, std::uint64_t{1} << 50, 8);
  std::error_code ec;
  wire::decode_body<wire::hello>(std::span(hb).subspan(wire::frame_header_size), ec);
  CHECK(ec == errc::bad_frame);
  // A variant index out of range.
  auto vb = with_header(bytes, wire::frame_header_size, 7, 4);
  wire::decode_message(vb, wire::default_max_frame, ec);
  CHECK(ec == errc::bad_frame);
}

TEST_CASE("frame: random corruption of a valid frame never crashes") {
  const auto bytes = wire::encode_message({0, 1}, {1, 0}, sample_flush());
  std::mt19937_64 rng(11);
  int errors = 0;
  for (int i = 0; i < 3000; ++i) {
    auto b = bytes;
    for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k)
      b[rng() % b.size()] = static_cast<std::byte>(rng());
    std::error_code ec;
    wire::decode_message(b, wire::default_max_frame, ec);
    errors += static_cast<bool>(ec);
  }
  CHECK(errors > 0);
}

TEST_CASE("frame: rows carry per-writer clocks compactly, as differences from reflects") {
  const endpoint src{0, 0}, dst{1, 1};
  wire::rows r;
  r.shard = 0;
  r.reflects = 1000;
  r.count = 0;
  auto size_of = [&](const wire::rows& m) { return wire::encode_message(src, dst, m).size(); };
  const auto base = size_of(r);  // no writer clocks: every writer at `reflects`
  r.writers = {1000, 1003, 1000 - 1, 1000 + 63};
  CHECK(size_of(r) == base + 4);  // one byte per writer within +-63
  r.writers = {1000, 1000 + 64, no_clock, 1000 + (std::int64_t{1} << 40)};
  std::error_code ec;
  auto back = std::get<wire::rows>(wire::decode_message(wire::encode_message(src, dst, r), wire::default_max_frame, ec).second);
  REQUIRE_FALSE(ec);
  CHECK(back.writers == r.writers);
  CHECK(back.reflects == r.reflects);
  // A varint cut short (its last byte has the continuation bit) is a bad frame, not a crash.
  r.writers = {1000, 1001};
  auto bytes = wire::encode_message(src, dst, r);
  // layout after the header: variant index (u32), shard u32, reflects i64, acked u64, push u8, count u32, u16 n, bytes
  const std::size_t at = wire::frame_header_size + 4 + 4 + 8 + 8 + 1 + 4;
  REQUIRE(static_cast<std::uint8_t>(bytes[at]) == 2);  // two bytes of writer clocks
  bytes[at + 3] = std::byte{0x80};
  wire::decode_message(bytes, wire::default_max_frame, ec);
  CHECK(ec == make_error_code(errc::bad_frame));
}

TEST_CASE("frame_mac: a sealed frame opens in order, and an altered, replayed, reordered or foreign-keyed one does not") {
  std::array<std::uint8_t, 16> n1{}, n2{};
  n1.fill(1);
  n2.fill(2);
  const auto k = wire::derive_frame_key("alpha", n1, n2, 1);
  CHECK(k != wire::derive_frame_key("alpha", n2, n1, 1));  // direction matters
  CHECK(k != wire::derive_frame_key("beta", n1, n2, 1));   // so does the secret
  CHECK(k != wire::derive_frame_key("alpha", n1, n2, 2));  // and the sender
  auto frame_of = [](std::uint64_t seq) {
    wire::flush f;
    f.seq = seq;
    f.payload.bytes.assign(100 + seq, std::byte{3});
    return wire::encode_message(endpoint{1, 0}, endpoint{0, 2}, f);
  };
  wire::frame_mac tx(k);
  std::vector<std::vector<std::byte>> sent;
  for (std::uint64_t i = 0; i < 4; ++i) {
    auto f = frame_of(i);
    const auto plain = f.size();
    tx.seal(f);
    REQUIRE(f.size() == plain + wire::frame_tag_size);
    sent.push_back(std::move(f));
  }
  auto open = [](wire::frame_mac& rx, const std::vector<std::byte>& f) {
    const auto n = f.size() - wire::frame_tag_size;
    return rx.open(std::span(f.data(), n), std::span(f.data() + n, wire::frame_tag_size));
  };
  {
    wire::frame_mac rx(k);
    for (const auto& f : sent) CHECK(open(rx, f));
  }
  {
    wire::frame_mac rx(k);
    auto bad = sent[0];
    bad[40] ^= std::byte{1};  // one payload bit
    CHECK_FALSE(open(rx, bad));
  }
  {
    wire::frame_mac rx(k);
    CHECK(open(rx, sent[0]));
    CHECK_FALSE(open(rx, sent[0]));  // replayed
  }
  {
    wire::frame_mac rx(k);
    CHECK_FALSE(open(rx, sent[1]));  // reordered (or frame 0 dropped)
  }
  {
    wire::frame_mac rx(wire::derive_frame_key("beta", n1, n2, 1));
    CHECK_FALSE(open(rx, sent[0]));  // someone without the secret
  }
}

}  // namespace test_wire_frame
