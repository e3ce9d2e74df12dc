#pragma once
/// \file task<T>: the coroutine type of strata workers (lazy, single continuation).
///
/// Awaiting a task runs it as a plain call from the awaiter's `await_suspend`. When it finishes before
/// that call returns (the common case: a cache hit, an increment into the oplog) the awaiter simply
/// does not suspend, so a loop of `co_await` on tasks that complete at once uses constant stack at
/// every optimisation level. Symmetric transfer alone relies on the compiler turning the resumption
/// into a tail call, which GCC does not do at -O0/-O1 (a 10^5-iteration loop then overflows the
/// stack under AddressSanitizer). When the task suspends and finishes later, its final suspension
/// resumes the awaiter by symmetric transfer. A two-party atomic decides which case happened.
#include <atomic>
#include <coroutine>
#include <exception>
#include <functional>
#include <optional>
#include <utility>

namespace strata {

template <class T = void>
class task;

namespace detail {
struct task_promise_base {
  std::coroutine_handle<> continuation;
  /// 0: running inside the awaiter's await_suspend; 1: the awaiter has suspended; 2: finished first.
  std::atomic<int> await_state{0};
  std::function<void(std::exception_ptr)> on_done;  ///< set only on a top-level task
  std::exception_ptr error;

  std::suspend_always initial_suspend() noexcept { return {}; }
  struct final_awaiter {
    bool await_ready() noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      auto& p = h.promise();
      if (p.continuation) {
        // Still inside the awaiter's await_suspend: it sees 2 and continues without suspending.
        if (p.await_state.exchange(2, std::memory_order_acq_rel) == 0) return std::noop_coroutine();
        return p.continuation;
      }
      if (p.on_done) p.on_done(p.error);
      return std::noop_coroutine();
    }
    void await_resume() noexcept {}
  };
  final_awaiter final_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept { error = std::current_exception(); }
};

template <class T>
struct task_promise : task_promise_base {
  std::optional<T> value;
  task<T> get_return_object() noexcept;
  template <class U>
  void return_value(U&& v) { value.emplace(std::forward<U>(v)); }
  T take() {
    if (error) std::rethrow_exception(error);
    return std::move(*value);
  }
};

template <>
struct task_promise<void> : task_promise_base {
  task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void take() {
    if (error) std::rethrow_exception(error);
  }
};
}  // namespace detail

/// A lazily started coroutine. `co_await`ing it runs it and resumes the awaiter when it finishes;
/// the runtime starts a worker's top-level task on the worker's thread.
template <class T>
class [[nodiscard]] task {
 public:
  using promise_type = detail::task_promise<T>;
  using handle = std::coroutine_handle<promise_type>;

  explicit task(handle h) noexcept : h_(h) {}
  task(task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  task& operator=(task&& o) noexcept {
    if (this != &o) { destroy(); h_ = std::exchange(o.h_, {}); }
    return *this;
  }
  task(const task&) = delete;
  task& operator=(const task&) = delete;
  ~task() { destroy(); }

  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> awaiting) noexcept {
    auto& p = h_.promise();
    p.continuation = awaiting;
    h_.resume();  // runs until the task finishes or first suspends
    // Finished already (state 2): do not suspend. Otherwise the task resumes us when it finishes.
    return p.await_state.exchange(1, std::memory_order_acq_rel) != 2;
  }
  T await_resume() { return h_.promise().take(); }

  /// Starts a top-level task; `done` runs on the thread that completes it, with its exception if any.
  void start(std::function<void(std::exception_ptr)> done) {
    h_.promise().on_done = std::move(done);
    h_.resume();
  }
  bool done() const noexcept { return h_ && h_.done(); }

 private:
  void destroy() noexcept {
    if (h_) h_.destroy();
  }
  handle h_;
};

namespace detail {
template <class T>
task<T> task_promise<T>::get_return_object() noexcept {
  return task<T>(std::coroutine_handle<task_promise<T>>::from_promise(*this));
}
inline task<void> task_promise<void>::get_return_object() noexcept {
  return task<void>(std::coroutine_handle<task_promise<void>>::from_promise(*this));
}
}  // namespace detail

}  // namespace strata
