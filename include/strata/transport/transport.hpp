#pragma once
/// \file The transport concept: how messages travel between endpoints (in process, over TCP, delayed).
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <strata/core/config.hpp>
#include <strata/core/ids.hpp>
#include <strata/wire/messages.hpp>

namespace asio {
class io_context;
}

namespace strata {

/// How a run's parties (shards, workers, the coordinator) are run. By default each runs its
/// io_context on a thread of its own; a transport that simulates a cluster (sim/simulated.hpp) runs
/// them itself instead, as actors of its simulation in simulated time, and hands the runtime one
/// of these (`any_transport::runner`). The runtime then calls the parties' code only from inside
/// `run_until`, or from its own thread while `run_until` is not running.
class party_runner {
 public:
  virtual ~party_runner() = default;
  /// The party reached at `at` runs the handlers posted to `ctx` (its messages, its coroutines'
  /// resumptions); registered once, before the first `run_until`.
  virtual void add(endpoint at, asio::io_context& ctx) = 0;
  /// Runs the parties until `done()` holds; `done` is asked after a handler that called `poke`.
  /// Throws strata::error when the parties can no longer make progress before `done()` holds
  /// (every one of them waits for a message that none will send).
  virtual void run_until(const std::function<bool()>& done) = 0;
  /// What `done` reads may have changed (called from a party's handler).
  virtual void poke() noexcept = 0;
};

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

/// A transport behind a virtual interface, so that the runtime (system_base) is one piece of code
/// for every transport, compiled once in the compiled mode. A message costs one virtual call more
/// than a direct call, beside a delivery that already goes through a std::function.
class any_transport {
 public:
  virtual ~any_transport() = default;
  virtual void bind(endpoint e, deliver_fn d) = 0;
  virtual void on_fatal(fatal_fn f) = 0;
  virtual void start(const run_shape& shape) = 0;
  virtual void send(endpoint src, endpoint dst, wire::message&& m) = 0;
  virtual void stop() = 0;
  /// Tells the other processes that this one's run failed, when the transport can (`tcp::abort`);
  /// false when it cannot (then it does nothing).
  virtual bool abort(const std::string& reason) = 0;
  virtual bool is_local(node_id n) const = 0;
  virtual std::uint64_t bytes_sent() const = 0;
  /// The transport's party_runner when it runs the parties itself (sim); nullptr: each party gets a thread.
  virtual party_runner* runner() noexcept = 0;
};

/// Transport T as an any_transport. Its members are defined outside the class, so that an
/// `extern template class transport_model<T>;` (the compiled mode's, for strata's own transports)
/// keeps them out of the user's files.
template <class T>
class transport_model final : public any_transport {
  static_assert(transport<T>, "strata::transport_model<T>: T must model strata::transport");

 public:
  explicit transport_model(typename T::config c) : t_(std::move(c)) {}
  ~transport_model() override;
  T& get() noexcept { return t_; }
  const T& get() const noexcept { return t_; }
  void bind(endpoint e, deliver_fn d) override;
  void on_fatal(fatal_fn f) override;
  void start(const run_shape& shape) override;
  void send(endpoint src, endpoint dst, wire::message&& m) override;
  void stop() override;
  bool abort(const std::string& reason) override;
  bool is_local(node_id n) const override;
  std::uint64_t bytes_sent() const override;
  party_runner* runner() noexcept override;

 private:
  T t_;
};

template <class T>
transport_model<T>::~transport_model() = default;
template <class T>
void transport_model<T>::bind(endpoint e, deliver_fn d) {
  t_.bind(e, std::move(d));
}
template <class T>
void transport_model<T>::on_fatal(fatal_fn f) {
  t_.on_fatal(std::move(f));
}
template <class T>
void transport_model<T>::start(const run_shape& shape) {
  t_.start(shape);
}
template <class T>
void transport_model<T>::send(endpoint src, endpoint dst, wire::message&& m) {
  t_.send(src, dst, std::move(m));
}
template <class T>
void transport_model<T>::stop() {
  t_.stop();
}
template <class T>
bool transport_model<T>::abort(const std::string& reason) {
  if constexpr (requires { t_.abort(reason); }) {
    t_.abort(reason);
    return true;
  } else {
    return false;
  }
}
template <class T>
bool transport_model<T>::is_local(node_id n) const {
  return t_.is_local(n);
}
template <class T>
std::uint64_t transport_model<T>::bytes_sent() const {
  return t_.bytes_sent();
}

template <class T>
party_runner* transport_model<T>::runner() noexcept {
  if constexpr (requires { { t_.runner() } -> std::convertible_to<party_runner*>; }) return t_.runner();
  else return nullptr;
}

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
