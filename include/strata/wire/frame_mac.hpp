#pragma once
/// \file Per-frame authentication of an established TCP connection when a shared secret is set.
/// Each direction of a connection has its own 128-bit key, derived in the handshake from the
/// secret and both sides' fresh nonces (so keys never repeat across connections); every frame
/// after the handshake carries a 16-byte AES-128-GMAC tag (GCM with the frame as additional data,
/// OpenSSL's libcrypto) over its header and payload, with the frame's sequence number on that
/// direction as the nonce. A frame that was injected, altered, replayed, dropped or reordered does
/// not verify. Frames are authenticated, not encrypted.
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>

#include <openssl/evp.h>

#include <strata/core/ids.hpp>
#include <strata/wire/sha256.hpp>

namespace strata::wire {

/// Bytes of the tag that follows each authenticated frame.
inline constexpr std::size_t frame_tag_size = 16;

using frame_key = std::array<std::uint8_t, 16>;

/// The key of the frames that rank `sender` sends on one connection:
/// HMAC-SHA256(secret, "strata-frames-v1" | sender's nonce | receiver's nonce | sender (u32 LE)), first 16 bytes.
inline frame_key derive_frame_key(std::string_view secret, const std::array<std::uint8_t, 16>& sender_nonce,
                                  const std::array<std::uint8_t, 16>& receiver_nonce, node_id sender) noexcept {
  static constexpr std::string_view label = "strata-frames-v1";
  std::array<std::uint8_t, label.size() + 16 + 16 + 4> msg{};
  std::memcpy(msg.data(), label.data(), label.size());
  std::memcpy(msg.data() + label.size(), sender_nonce.data(), 16);
  std::memcpy(msg.data() + label.size() + 16, receiver_nonce.data(), 16);
  for (int i = 0; i < 4; ++i)
    msg[label.size() + 32 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(sender >> (8 * i));
  const auto full = detail::hmac_sha256(secret, msg);
  frame_key k{};
  std::memcpy(k.data(), full.data(), k.size());
  return k;
}

/// Tags (sender) or verifies (receiver) the frames of one direction of one connection, in order.
/// Not thread-safe: the sender calls it under the peer's queue lock, the receiver on the io thread.
class frame_mac {
 public:
  explicit frame_mac(const frame_key& key) : ctx_(EVP_CIPHER_CTX_new()) {
    EVP_EncryptInit_ex(ctx_.get(), EVP_aes_128_gcm(), nullptr, key.data(), nullptr);
  }
  /// Appends the tag of the next frame (`frame`: header and payload) to it.
  template <class Bytes>
  void seal(Bytes& frame) {
    const auto t = tag(next_++, std::span<const std::byte>(frame.data(), frame.size()));
    const std::size_t at = frame.size();
    frame.resize(at + frame_tag_size);
    std::memcpy(frame.data() + at, t.data(), t.size());
  }
  /// Whether `tag` is the next frame's tag for `frame`; counts the frame either way.
  bool open(std::span<const std::byte> frame, std::span<const std::byte> tag_bytes) {
    const auto t = tag(next_++, frame);
    if (tag_bytes.size() != frame_tag_size) return false;
    std::uint8_t d = 0;  // compared in time independent of where they differ
    for (std::size_t i = 0; i < frame_tag_size; ++i) d = static_cast<std::uint8_t>(d | (t[i] ^ static_cast<std::uint8_t>(tag_bytes[i])));
    return d == 0;
  }
  std::uint64_t frames() const noexcept { return next_; }

 private:
  std::array<std::uint8_t, frame_tag_size> tag(std::uint64_t seq, std::span<const std::byte> data) {
    std::array<std::uint8_t, 12> iv{};
    for (int i = 0; i < 8; ++i) iv[4 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(seq >> (8 * i));
    EVP_EncryptInit_ex(ctx_.get(), nullptr, nullptr, nullptr, iv.data());
    int outl = 0;
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    for (std::size_t left = data.size(); left > 0;) {  // additional data only: nothing is encrypted
      const int n = static_cast<int>(left < std::size_t{INT_MAX / 2} ? left : std::size_t{INT_MAX / 2});
      EVP_EncryptUpdate(ctx_.get(), nullptr, &outl, p, n);
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    unsigned char none[16];
    EVP_EncryptFinal_ex(ctx_.get(), none, &outl);
    std::array<std::uint8_t, frame_tag_size> t{};
    EVP_CIPHER_CTX_ctrl(ctx_.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(t.size()), t.data());
    return t;
  }
  struct free_ctx {
    void operator()(EVP_CIPHER_CTX* c) const noexcept { EVP_CIPHER_CTX_free(c); }
  };
  std::unique_ptr<EVP_CIPHER_CTX, free_ctx> ctx_;
  std::uint64_t next_ = 0;
};

}  // namespace strata::wire
