#pragma once
/// \file The settings of the TCP transport (`tcp::config`, an alias of `tcp_settings`): this
/// process's rank, every rank's address, the shared secret, the frame size limit and the timeouts.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <strata/core/ids.hpp>
#include <strata/wire/frame.hpp>

namespace strata {

/// What a tcp transport is constructed from (spelled `tcp::config` by its users).
struct tcp_settings {
  node_id rank = 0;
  /// host and port of every rank, indexed by rank (this rank's entry gives the port to listen on)
  std::vector<std::pair<std::string, std::uint16_t>> peers;
  /// address to listen on; loopback unless told otherwise
  std::string listen_address = "127.0.0.1";
  /// when set, every peer must prove it knows the same secret in the handshake, and every later
  /// frame carries a tag keyed from it (docs/security.md)
  std::string secret;
  /// listening on an address that is not loopback without a secret is refused unless this is set
  /// (anyone who reaches the port could join the run as a rank)
  bool insecure = false;
  /// a connection that has not completed its handshake within this is closed
  std::chrono::milliseconds handshake_timeout{10000};
  /// at most this many accepted connections may be in their handshake at once; a new one beyond
  /// it closes the oldest (a flood of strangers cannot hold a real peer out for long)
  std::size_t max_pending_handshakes = 64;
  /// frames (header + payload) over this many bytes are refused, sending and receiving
  std::size_t max_frame = wire::default_max_frame;
  /// how long start() waits for every peer's handshake (peers may start at different times)
  std::chrono::milliseconds connect_timeout{30000};
  /// a peer silent this long is lost; also bounds each wait of the shutdown barrier
  std::chrono::milliseconds peer_timeout{10000};
  /// where diagnostics go, one line each; empty: stderr
  std::function<void(const std::string&)> log;
};

}  // namespace strata
