#pragma once
/// \file The TCP handshake's bodies and checks: the hello both sides send first (protocol
/// version, rank, world size, run signature, nonce), the auth frame that proves the shared secret,
/// the signature hash and the auth mac they carry, and signature_diff, which names the field where
/// two run signatures differ. The exchange itself is transport/detail/tcp_handshake.hpp.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <cereal/types/array.hpp>
#include <cereal/types/string.hpp>

#include <strata/core/ids.hpp>
#include <strata/wire/messages.hpp>
#include <strata/wire/sha256.hpp>

namespace strata::wire {

/// Handshake, first frame on every connection, sent by both sides. Everything here is compared:
/// protocol version, world size and the run signature (tables, consistency model and shape).
/// When a shared secret is set, the signature is left empty here and travels in the auth frame,
/// so a process that has not proved the secret never learns it.
struct hello {
  std::uint32_t version = protocol_version;
  node_id rank = 0;
  std::uint32_t world = 0;
  std::uint64_t signature_hash = 0;  ///< first 8 bytes of SHA-256(signature)
  std::string signature;             ///< the text, so a mismatch can name the differing field
  std::array<std::uint8_t, 16> nonce{};  ///< fresh random challenge for the peer's auth frame
  bool secret_set = false;           ///< this side requires the shared-secret exchange
  template <class Ar>
  void serialize(Ar& ar) {
    ar(version, rank, world, signature_hash, signature, nonce);
    detail::flag(ar, secret_set);  // one byte, 0 or 1: anything else is a malformed frame, not UB
  }
};

/// Handshake, second frame when a shared secret is set:
/// mac = HMAC-SHA256(secret, "strata-auth-v1" | peer's nonce | my nonce | my rank (u32 LE)).
/// It proves knowledge of the secret without sending it, and the peer's fresh nonce stops a
/// recorded mac from being replayed. The dialing side sends it first; the accepting side answers
/// with its own only once the dialer's has verified. It carries the run signature (see hello).
/// Every later frame on the connection carries a tag keyed from the secret and both nonces
/// (wire/frame_mac.hpp).
struct auth {
  std::array<std::uint8_t, 32> mac{};
  std::uint64_t signature_hash = 0;
  std::string signature;
  template <class Ar>
  void serialize(Ar& ar) { ar(mac, signature_hash, signature); }
};

/// The first 8 bytes of SHA-256 of a run signature, as compared in the handshake.
inline std::uint64_t signature_hash(std::string_view signature) noexcept {
  const auto d = detail::sha256::of(signature);
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | d[static_cast<std::size_t>(i)];
  return v;
}

/// The auth mac a process of rank `rank` sends, answering the peer's `peer_nonce` (see wire::auth).
inline std::array<std::uint8_t, 32> auth_mac(std::string_view secret, const std::array<std::uint8_t, 16>& peer_nonce,
                                             const std::array<std::uint8_t, 16>& own_nonce, node_id rank) noexcept {
  static constexpr std::string_view label = "strata-auth-v1";
  std::array<std::uint8_t, label.size() + 16 + 16 + 4> msg{};
  std::memcpy(msg.data(), label.data(), label.size());
  std::memcpy(msg.data() + label.size(), peer_nonce.data(), 16);
  std::memcpy(msg.data() + label.size() + 16, own_nonce.data(), 16);
  for (int i = 0; i < 4; ++i) msg[label.size() + 32 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(rank >> (8 * i));
  return detail::hmac_sha256(secret, msg);
}

/// Compares two macs in time independent of where they differ.
inline bool equal_macs(const std::array<std::uint8_t, 32>& a, const std::array<std::uint8_t, 32>& b) noexcept {
  std::uint8_t d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = static_cast<std::uint8_t>(d | (a[i] ^ b[i]));
  return d == 0;
}

/// Names the first ';'-separated field where two run signatures differ, with both values:
/// "consistency model (here 'bsp s=0', peer 'ssp s=2')", "table 0 (here '...', peer '...')".
inline std::string signature_diff(const std::string& a, const std::string& b) {
  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    std::size_t at = 0;
    for (;;) {
      const auto k = s.find(';', at);
      out.push_back(s.substr(at, k == std::string::npos ? std::string::npos : k - at));
      if (k == std::string::npos) return out;
      at = k + 1;
    }
  };
  const auto x = split(a), y = split(b);
  for (std::size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
    const std::string u = i < x.size() ? x[i] : "(none)", v = i < y.size() ? y[i] : "(none)";
    if (u == v) continue;
    const auto eq = u.find('=');
    std::string field = i == 0 ? "consistency model" : eq != std::string::npos ? u.substr(0, eq) : "field " + std::to_string(i);
    if (u.size() > 1 && u[0] == 't' && u.find(':') != std::string::npos) field = "table " + u.substr(1, u.find(':') - 1);
    return field + " (here '" + u + "', peer '" + v + "')";
  }
  return "signature hash only";
}

}  // namespace strata::wire
