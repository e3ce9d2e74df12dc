// libFuzzer target: the frame decoder (wire/frame.hpp, wire/archive.hpp) on arbitrary bytes.
// Every input must decode or fail with an error code and a reason: no crash, no undefined
// behaviour, no allocation beyond the frame limit. A decoded message must re-encode and decode
// to the same bytes.
#include <strata/wire/frame.hpp>
#include <strata/wire/handshake.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace wire = strata::wire;
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  constexpr std::size_t max_frame = std::size_t{1} << 20;
  std::error_code ec;
  std::string why;
  (void)wire::decode_header(in, max_frame, ec, &why);
  if (ec && why.empty()) __builtin_trap();  // every failure says why
  auto [h, m] = wire::decode_message(in, max_frame, ec, &why);
  if (!ec) {
    const auto again = wire::encode_message(h.src, strata::endpoint{0, h.dst_slot}, m, max_frame);
    auto [h2, m2] = wire::decode_message(again, max_frame, ec, &why);
    if (ec) __builtin_trap();  // what decoded must encode to something that decodes
    const auto third = wire::encode_message(h2.src, strata::endpoint{0, h2.dst_slot}, m2, max_frame);
    if (third != again) __builtin_trap();
  }
  // The other bodies a peer can send, from the payload of whatever frame this is.
  const auto v = wire::split_frame(in, max_frame, ec, &why);
  if (!ec) {
    (void)wire::decode_body<wire::hello>(v.payload, ec, &why);
    (void)wire::decode_body<wire::auth>(v.payload, ec, &why);
    (void)wire::decode_body<wire::abort_notice>(v.payload, ec, &why);
  }
  return 0;
}
