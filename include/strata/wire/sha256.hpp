#pragma once
/// \file SHA-256 and HMAC-SHA256, from OpenSSL's libcrypto (Debian libssl-dev): the run
/// signature's hash, the shared-secret proof of the TCP handshake, the keys of the per-frame macs
/// (wire/frame_mac.hpp) and checkpoint checksums. libcrypto uses the CPU's SHA extensions where
/// it has them.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace strata::wire::detail {

/// SHA-256, incremental.
class sha256 {
 public:
  sha256() : ctx_(EVP_MD_CTX_new()) { reset(); }
  void reset() noexcept { EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr); }
  void update(const void* data, std::size_t n) noexcept { EVP_DigestUpdate(ctx_.get(), data, n); }
  void update(std::string_view s) noexcept { update(s.data(), s.size()); }
  /// The digest of everything updated since the last reset; resets.
  std::array<std::uint8_t, 32> finish() noexcept {
    std::array<std::uint8_t, 32> out{};
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_.get(), out.data(), &n);
    reset();
    return out;
  }
  static std::array<std::uint8_t, 32> of(std::string_view s) {
    sha256 h;
    h.update(s);
    return h.finish();
  }

 private:
  struct free_ctx {
    void operator()(EVP_MD_CTX* c) const noexcept { EVP_MD_CTX_free(c); }
  };
  std::unique_ptr<EVP_MD_CTX, free_ctx> ctx_;
};

/// HMAC-SHA256 (RFC 2104) of `msg` under `key`.
inline std::array<std::uint8_t, 32> hmac_sha256(std::string_view key, std::span<const std::uint8_t> msg) noexcept {
  std::array<std::uint8_t, 32> out{};
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), msg.data(), msg.size(), out.data(), &n);
  return out;
}

}  // namespace strata::wire::detail
