#pragma once
/// \file inproc: every node lives in this process; messages move through the receivers' queues.
#include <atomic>
#include <cstdint>
#include <map>
#include <utility>

#include <strata/core/error.hpp>
#include <strata/transport/transport.hpp>

namespace strata {

/// The in-process transport: no serialization, a message is handed to the receiver's delivery
/// function (which queues it on the receiver's thread), so per-pair order is the sender's order.
class inproc {
 public:
  struct config {};
  inproc() = default;
  explicit inproc(config) {}

  void bind(endpoint e, deliver_fn d) { routes_[key(e)] = std::move(d); }
  void on_fatal(fatal_fn) {}
  void start(const run_shape& shape) { shape_ = shape; }
  void send(endpoint src, endpoint dst, wire::message&& m) {
    bytes_.fetch_add(detail::payload_size(m), std::memory_order_relaxed);
    auto it = routes_.find(key(dst));
    if (it == routes_.end()) throw error(errc::bad_input, "inproc: no endpoint bound for a message");
    it->second(src, std::move(m));
  }
  void stop() {}
  bool is_local(node_id) const noexcept { return true; }
  std::uint64_t bytes_sent() const noexcept { return bytes_.load(std::memory_order_relaxed); }

 private:
  static std::uint64_t key(endpoint e) noexcept { return (std::uint64_t{e.node} << 32) | e.slot; }
  std::map<std::uint64_t, deliver_fn> routes_;
  run_shape shape_;
  std::atomic<std::uint64_t> bytes_{0};
};

static_assert(transport<inproc>);

}  // namespace strata
