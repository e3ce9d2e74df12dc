#pragma once
/// \file delayed<T>: a transport decorator that adds seeded latency, jitter and straggler slowdown.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <strata/core/config.hpp>
#include <strata/transport/inproc.hpp>
#include <strata/transport/transport.hpp>

namespace strata {

/// The delays an experiment injects. Order between each pair of endpoints is kept (FIFO), as on TCP.
struct delay_config {
  std::chrono::microseconds latency{0};  ///< added to every message
  std::chrono::microseconds jitter{0};   ///< plus a uniform draw in [0, jitter]
  std::vector<endpoint> stragglers;      ///< endpoints whose messages (both ways) are slowed
  double straggler_factor = 1.0;         ///< delay multiplier for a straggler's messages
  std::uint64_t seed = 1;
};

/// Wraps transport T: each message is held for its drawn delay, then sent through T.
template <class T>
class delayed {
  static_assert(transport<T>, "strata::delayed<T>: T must model strata::transport");

 public:
  struct config {
    typename T::config inner{};
    delay_config delay{};
  };
  explicit delayed(config c = {}) : inner_(std::move(c.inner)), cfg_(std::move(c.delay)), rng_(cfg_.seed) {}
  ~delayed() { stop(); }

  void bind(endpoint e, deliver_fn d) { inner_.bind(e, std::move(d)); }
  void on_fatal(fatal_fn f) { inner_.on_fatal(std::move(f)); }
  void start(const run_shape& shape) {
    inner_.start(shape);
    running_ = true;
    thread_ = std::thread([this] { pump(); });
  }
  void send(endpoint src, endpoint dst, wire::message&& m) {
    std::unique_lock lk(mu_);
    if (!running_) {
      lk.unlock();
      return inner_.send(src, dst, std::move(m));
    }
    auto d = cfg_.latency;
    if (cfg_.jitter.count() > 0)
      d += std::chrono::microseconds(std::uniform_int_distribution<std::int64_t>(0, cfg_.jitter.count())(rng_));
    if (is_straggler(src) || is_straggler(dst))
      d = std::chrono::microseconds(static_cast<std::int64_t>(static_cast<double>(d.count()) * cfg_.straggler_factor));
    auto due = clock::now() + d;
    auto& last = last_[{key(src), key(dst)}];
    if (due < last) due = last;  // keep per-pair FIFO order
    last = due;
    q_.push(item{due, seq_++, src, dst, std::move(m)});
    cv_.notify_one();
  }
  void stop() {
    {
      std::lock_guard lk(mu_);
      if (!running_) return;
      running_ = false;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
    inner_.stop();
  }
  /// Forwards a failed run to a transport that can tell its peers (tcp), without delay.
  void abort(const std::string& why)
    requires requires(T& t) { t.abort(why); }
  {
    inner_.abort(why);
  }
  bool is_local(node_id n) const noexcept { return inner_.is_local(n); }
  std::uint64_t bytes_sent() const noexcept { return inner_.bytes_sent(); }
  T& inner() noexcept { return inner_; }

 private:
  using clock = std::chrono::steady_clock;
  struct item {
    clock::time_point due;
    std::uint64_t seq;
    endpoint src, dst;
    mutable wire::message msg;
    bool operator>(const item& o) const noexcept { return due != o.due ? due > o.due : seq > o.seq; }
  };
  static std::uint64_t key(endpoint e) noexcept { return (std::uint64_t{e.node} << 32) | e.slot; }
  bool is_straggler(endpoint e) const noexcept {
    for (auto s : cfg_.stragglers)
      if (s == e) return true;
    return false;
  }
  void pump() {
    std::unique_lock lk(mu_);
    for (;;) {
      // On stop, deliver what is queued at once: pending updates must not be lost.
      if (q_.empty()) {
        if (!running_) return;
        cv_.wait(lk);
        continue;
      }
      if (running_ && q_.top().due > clock::now()) {
        // A copy: wait_until keeps reading its deadline while send() may grow (move) the queue.
        const clock::time_point due = q_.top().due;
        cv_.wait_until(lk, due);
        continue;
      }
      item it = std::move(const_cast<item&>(q_.top()));
      q_.pop();
      lk.unlock();
      inner_.send(it.src, it.dst, std::move(it.msg));
      lk.lock();
    }
  }

  T inner_;
  delay_config cfg_;
  std::mt19937_64 rng_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<item, std::vector<item>, std::greater<>> q_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, clock::time_point> last_;
  std::uint64_t seq_ = 0;
  bool running_ = false;
  std::thread thread_;
};

#if !STRATA_HEADER_ONLY
extern template class delayed<inproc>;
extern template class transport_model<delayed<inproc>>;
#endif

}  // namespace strata
