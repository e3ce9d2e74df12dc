// Writes the binary seeds of the frame, handshake and accept fuzz targets (tests/fuzz/corpus/frame,
// tests/fuzz/corpus/handshake, tests/fuzz/corpus/accept): one valid frame of each message kind and
// control body, and the peer's side of a good handshake with and without a shared secret. The
// committed files were made with:
//   g++ -std=c++20 -Iinclude tests/fuzz/make_seeds.cpp -o /tmp/make_seeds -lcrypto && /tmp/make_seeds tests/fuzz/corpus
#include <strata/wire/frame.hpp>
#include <strata/wire/handshake.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {
namespace wire = strata::wire;
void put(const std::filesystem::path& p, const std::vector<std::byte>& b, std::uint8_t prefix_byte = 0, bool prefix = false) {
  std::ofstream out(p, std::ios::binary);
  if (prefix) out.put(static_cast<char>(prefix_byte));
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}
wire::blob blob_of(std::initializer_list<int> v) {
  wire::blob b;
  for (int x : v) b.bytes.push_back(static_cast<std::byte>(x));
  return b;
}
}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path root = argc > 1 ? argv[1] : "tests/fuzz/corpus";
  std::filesystem::create_directories(root / "frame");
  std::filesystem::create_directories(root / "handshake");
  std::filesystem::create_directories(root / "accept");
  const strata::endpoint src{1, 2}, dst{0, 3};
  wire::flush f;
  f.from = 1, f.seq = 1, f.tag = 0, f.new_clock = 1, f.count = 1, f.payload = blob_of({0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 128, 63});
  put(root / "frame/flush", wire::encode_message(src, dst, wire::message{f}));
  put(root / "frame/row_request", wire::encode_message(src, dst, wire::message{wire::row_request{1, 0, {5}, 2, true}}));
  put(root / "frame/row_request_batch", wire::encode_message(src, dst, wire::message{wire::row_request{1, 0, {5, 9, 11}, 2, false}}));
  wire::rows r;
  r.shard = 0, r.reflects = 3, r.acked_seq = 1, r.push = true, r.count = 1, r.payload = blob_of({1, 2, 3, 4});
  put(root / "frame/rows", wire::encode_message(src, dst, wire::message{r}));
  r.writers = {3, 5, 2, strata::finished_clock};  // per-writer clocks, one of a finished writer
  put(root / "frame/rows_writers", wire::encode_message(src, dst, wire::message{r}));
  put(root / "frame/app", wire::encode_message(src, dst, wire::message{wire::app{7, blob_of({'h', 'i'})}}));
  put(root / "frame/gather", wire::encode_message(src, dst, wire::message{wire::gather{1, 2, blob_of({9})}}));
  wire::gathered g;
  g.round = 2, g.parts = {blob_of({1}), blob_of({2, 3})};
  put(root / "frame/gathered", wire::encode_message(src, dst, wire::message{g}));
  put(root / "frame/run_start", wire::encode_message(src, dst, wire::message{wire::run_start{1, 4}}));
  put(root / "frame/abort", wire::encode_frame(wire::frame_kind::abort, src, 0, wire::abort_notice{3, "peer stopped"}));
  put(root / "frame/bye", wire::encode_frame(wire::frame_kind::bye, src, 0, wire::empty_body{}));

  // The handshake target's first byte: bit 0 = a secret is set here, bit 1 = this side dialed rank 1.
  const std::string sig = "bsp s=0;nodes=2;wpn=1;t0:dense/4";
  wire::hello h;
  h.rank = 1, h.world = 2, h.signature = sig, h.signature_hash = wire::signature_hash(sig);
  const auto plain = wire::encode_frame(wire::frame_kind::hello, strata::endpoint{1, 0}, 0, h);
  put(root / "handshake/hello_accepting", plain, 0, true);
  put(root / "handshake/hello_dialing", plain, 2, true);
  h.secret_set = true;  // with a secret the signature travels in the auth frame
  h.signature.clear();
  h.signature_hash = 0;
  auto with_auth = wire::encode_frame(wire::frame_kind::hello, strata::endpoint{1, 0}, 0, h);
  wire::auth au;
  au.signature = sig;
  au.signature_hash = wire::signature_hash(sig);
  const auto a = wire::encode_frame(wire::frame_kind::auth, strata::endpoint{1, 0}, 0, au);
  with_auth.insert(with_auth.end(), a.begin(), a.end());
  put(root / "handshake/hello_auth", with_auth, 3, true);
  // The accept target's first two bytes: bit 0 = a secret is set, then the connection count - 1.
  auto two = [](std::uint8_t flags, std::uint8_t count, std::vector<std::byte> b) {
    b.insert(b.begin(), static_cast<std::byte>(count));
    b.insert(b.begin(), static_cast<std::byte>(flags));
    return b;
  };
  put(root / "accept/one_plain", two(0, 0, plain));
  put(root / "accept/one_secret", two(1, 0, with_auth));
  std::vector<std::byte> many;
  for (int i = 0; i < 12; ++i) many.insert(many.end(), with_auth.begin(), with_auth.end());
  put(root / "accept/many_secret", two(1, 11, many));
  put(root / "handshake/abort", wire::encode_frame(wire::frame_kind::abort, strata::endpoint{1, 0}, 0, wire::abort_notice{5, "refused"}), 2, true);
  return 0;
}
