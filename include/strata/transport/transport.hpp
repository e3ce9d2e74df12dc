#pragma once
/// \file The transport concept: how messages travel between endpoints (in process, over TCP, delayed).
#include <concepts>
#include <cstdint>
#include <functional>
#include <string>
#include <system_error>
#include <vector>

#include "../core/ids.hpp"
#include "../wire/messages.hpp"

namespace strata {

/// Called by a transport when a message for a local endpoint arrives (on any thread).
using deliver_fn = std::function<void(endpoint src, wire::message&& msg)>;
/// Called by a transport when the run cannot go on (a lost peer, a refused handshake).
using fatal_fn = std::function<void(std::error_code ec, const std::string& what)>;

/// What every transport is told about the run before it starts.
struct run_shape {
  std::uint32_t nodes = 1;             ///< processes (server shard + clients) in the run
  std::uint32_t workers_per_node = 1;
  std::string signature;               ///< tables, consistency model and shape, compared in handshakes
};

/// A transport moves `wire::message`s from one endpoint to another, preserving order between any
/// pair of endpoints (the runtime's read-my-writes and clock logic rely on FIFO channels).
/// Lifecycle: construct from its `config`, `bind` every local endpoint, `start(shape)`, `send` from any
/// thread, `stop`.
template <class T>
concept transport = requires(T& t, const T& ct, endpoint e, wire::message m, deliver_fn d, fatal_fn f,
                             const run_shape& shape, node_id n) {
  typename T::config;
  { t.bind(e, d) };
  { t.on_fatal(f) };
  { t.start(shape) };
  { t.send(e, e, std::move(m)) };
  { t.stop() };
  { ct.is_local(n) } -> std::convertible_to<bool>;
  { ct.bytes_sent() } -> std::convertible_to<std::uint64_t>;
};

namespace detail {
/// Payload bytes of a message, for the bytes_sent metric of transports that do not serialize.
inline std::uint64_t payload_size(const wire::message& m) {
  return std::visit(
      [](const auto& x) -> std::uint64_t {
        if constexpr (requires { x.payload; }) return x.payload.bytes.size() + 32;
        else return 32;
      },
      m);
}
}  // namespace detail

}  // namespace strata
