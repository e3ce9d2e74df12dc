#pragma once
/// \file What every coroutine-running party of a run (a worker, the coordinator) shares: its
/// address, suspending and waking its coroutines on its own thread, and typed app messages
/// (`send(to, msg)`, `co_await receive<T>()`) over the run's transport.
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <strata/core/clock.hpp>
#include <strata/core/error.hpp>
#include <strata/core/ids.hpp>
#include <strata/wire/app.hpp>
#include <strata/wire/messages.hpp>
#include <strata/runtime/params.hpp>

namespace strata {
namespace detail {
struct party_access;
}

/// A message of type T received from `from`.
template <class T>
struct received {
  peer from;
  T value;
};

/// The base of `worker` and `coordinator`: one per party, used on the party's own thread only.
class actor {
 public:
  actor(endpoint self, worker_map wm, send_fn send, std::size_t max_message)
      : self_(self), wm_(wm), send_(std::move(send)), max_message_(max_message) {}
  actor(const actor&) = delete;
  actor& operator=(const actor&) = delete;
  virtual ~actor() = default;

  /// This party's address and role.
  peer self() const noexcept { return wm_.who(self_); }
  /// Number of workers in the run (all processes).
  std::uint32_t num_workers() const noexcept { return wm_.workers(); }

  // ---- app messages ------------------------------------------------------------------------

  /// Sends `msg` (any cereal-serialisable type) to a worker or the coordinator. Messages from one
  /// party to another arrive in the order sent. Throws `strata::error(frame_too_large)` when its
  /// encoding exceeds the run's message size limit (`system_config::max_message`): nothing is sent,
  /// the run goes on.
  template <class T>
  void send(peer to, const T& msg) {
    wire::app a;
    a.type = wire::type_key<T>();
    wire::encode_value(msg, a.payload.bytes);
    if (a.payload.bytes.size() > max_message_)
      throw error(errc::frame_too_large, "message " + std::string(wire::type_name<T>()) + " of " +
                                             std::to_string(a.payload.bytes.size()) + " bytes to " + to.describe() +
                                             " exceeds the limit of " + std::to_string(max_message_) + " bytes; not sent");
    send_(wm_.address(to), std::move(a));
  }

  template <class T>
  class [[nodiscard]] receive_awaiter {
   public:
    explicit receive_awaiter(actor& a) : a_(a) {}
    bool await_ready() const noexcept { return a_.has_message(key()); }
    void await_suspend(std::coroutine_handle<> h) {
      a_.suspend(h, [this] { return a_.has_message(key()); });
    }
    /// Decodes the oldest message of type T. A payload that does not decode throws
    /// `strata::error(bad_frame)` naming type and sender; that message is dropped, the rest kept.
    received<T> await_resume() {
      auto [from, bytes] = a_.pop_message(key());
      received<T> r{a_.wm_.who(from), T{}};
      try {
        wire::decode_value(bytes, r.value);
      } catch (const std::exception& e) {
        throw error(errc::bad_frame, "message " + std::string(wire::type_name<T>()) + " from " + r.from.describe() +
                                         " does not decode: " + e.what());
      }
      return r;
    }

   private:
    static std::uint64_t key() noexcept { return wire::type_key<T>(); }
    actor& a_;
  };
  /// Waits for the next message of type T (messages of other types stay queued for their own
  /// `receive`). Requires T to be default-constructible.
  template <class T>
  receive_awaiter<T> receive() {
    return receive_awaiter<T>(*this);
  }
  /// How many messages of type T are queued.
  template <class T>
  std::size_t pending() const {
    auto it = inbox_.find(wire::type_key<T>());
    return it == inbox_.end() ? 0 : it->second.size();
  }

  // ---- scheduling ---------------------------------------------------------------------------

  struct [[nodiscard]] yield_awaiter {
    actor& a;
    bool only_if_queued = false;
    bool await_ready() const noexcept {
      if (!a.reschedule_) return true;
      if (only_if_queued && a.queued_ && a.queued_->load(std::memory_order_relaxed) == 0) {
        ++a.turn_;  // nothing to take in: the turn ends here all the same
        return true;
      }
      return false;
    }
    void await_suspend(std::coroutine_handle<> h) const {
      ++a.turn_;
      a.reschedule_(h);
    }
    void await_resume() const noexcept {}
  };
  /// Lets this party's thread take in messages that arrived meanwhile, then resumes.
  yield_awaiter yield() { return {*this}; }
  /// Seconds this party's coroutines spent suspended waiting (reads, value bounds, receives, collectives).
  double wait_seconds() const noexcept { return wait_s_; }

 protected:
  static double clock_now() { return run_clock::seconds(); }
  /// Parks coroutine `h` until `ready()` holds; checked at every `wake`.
  [[gnu::noinline]] void suspend(std::coroutine_handle<> h, std::function<bool()> ready) {
    ++turn_;
    // What a coroutine waits for may have arrived inline (end_inline) after its awaiter last
    // looked and before it parked: then it is resumed on the next turn instead of waiting for a
    // wake that nothing would send.
    if (reschedule_ && ready()) return reschedule_(h);
    waiters_.push_back({h, std::move(ready), clock_now()});
  }
  /// Counts the times a coroutine of this party gave its thread back (suspended or yielded): what
  /// happens between two counts is one turn, which no other coroutine interleaves with.
  const std::uint64_t* turn_counter() const noexcept { return &turn_; }
  /// Ends the current turn without giving the thread back (a read answered inline).
  void end_turn() noexcept { ++turn_; }
  /// Resumes every parked coroutine whose condition now holds, then calls `after_wake`.
  void wake() {
    if (inline_) {
      wake_owed_ = true;
      return;
    }
    for (bool again = true; again;) {
      again = false;
      for (std::size_t i = 0; i < waiters_.size(); ++i) {
        if (!waiters_[i].ready()) continue;
        auto h = waiters_[i].h;
        wait_s_ += clock_now() - waiters_[i].since;
        waiters_.erase(waiters_.begin() + static_cast<std::ptrdiff_t>(i));
        h.resume();  // may add waiters or send: rescan from the start
        again = true;
        break;
      }
    }
    after_wake();
  }
  virtual void after_wake() {}
  /// True between begin_inline and end_inline: the message being handled arrived mid-turn.
  bool taking_inline() const noexcept { return inline_; }
  /// Whether `after_wake` has something to do even when no coroutine waits.
  virtual bool wake_has_work() const noexcept { return false; }

  /// Queues an app message for `receive` and wakes waiting coroutines.
  void deliver_app(endpoint from, wire::app&& a) {
    inbox_[a.type].emplace_back(from, std::move(a.payload.bytes));
    wake();
  }
  void clear_inbox() { inbox_.clear(); }

  void send_raw(endpoint dst, wire::message&& m) { send_(dst, std::move(m)); }
  std::size_t max_message() const noexcept { return max_message_; }
  const worker_map& layout() const noexcept { return wm_; }
  endpoint address() const noexcept { return self_; }
  void add_wait(double s) noexcept { wait_s_ += s; }
  void reset_wait() noexcept { wait_s_ = 0; }

 private:
  friend struct detail::party_access;  // the runtime's calls below (runtime/detail/party_access.hpp)

  // ---- runtime side (reached through detail::party_access) ---------------------------------

  /// How the runtime resumes a coroutine later on this party's thread (after queued messages), and
  /// (optional) how many messages and resumptions wait in that thread's queue now.
  void set_reschedule(std::function<void(std::coroutine_handle<>)> f, const std::atomic<std::uint32_t>* queued = nullptr) {
    reschedule_ = std::move(f);
    queued_ = queued;
  }

  /// Runtime side: the messages handed to `on_message` until `end_inline()` arrive in the middle of
  /// one of this party's turns (a reply to its own call of a shard in the same process, handled on
  /// its thread): they are taken in at once, but no coroutine is resumed from inside that turn.
  void begin_inline() noexcept { inline_ = true; }
  /// Ends it; true when a coroutine may be waiting for what arrived (the runtime then schedules a
  /// `wake_now()` on the party's thread).
  bool end_inline() noexcept {
    inline_ = false;
    return std::exchange(wake_owed_, false) && (!waiters_.empty() || wake_has_work());
  }
  /// Resumes every parked coroutine whose condition holds (see `end_inline`).
  void wake_now() { wake(); }

  bool has_message(std::uint64_t key) const {
    auto it = inbox_.find(key);
    return it != inbox_.end() && !it->second.empty();
  }
  std::pair<endpoint, std::vector<std::byte>> pop_message(std::uint64_t key) {
    auto& q = inbox_.at(key);
    auto m = std::move(q.front());
    q.pop_front();
    return m;
  }

  struct waiter {
    std::coroutine_handle<> h;
    std::function<bool()> ready;
    double since;
  };
  endpoint self_;
  worker_map wm_;
  send_fn send_;
  std::size_t max_message_;
  std::function<void(std::coroutine_handle<>)> reschedule_;
  const std::atomic<std::uint32_t>* queued_ = nullptr;  // the party's thread's queue length (set_reschedule)
  bool inline_ = false, wake_owed_ = false;             // begin_inline .. end_inline
  std::vector<waiter> waiters_;
  std::unordered_map<std::uint64_t, std::deque<std::pair<endpoint, std::vector<std::byte>>>> inbox_;
  double wait_s_ = 0;
  std::uint64_t turn_ = 1;
};

}  // namespace strata
