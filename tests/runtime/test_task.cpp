// task<T> on its own: values and exceptions through both completion paths (finished before the
// awaiter suspends, finished later on another thread), and constant stack over a long loop of
// awaits on tasks that finish at once. The last one overflowed the stack under the -O1 sanitizer
// build when resumption relied on symmetric transfer being compiled as a tail call.
#include <doctest/doctest.h>

#include <strata/runtime/task.hpp>

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <future>
#include <stdexcept>
#include <thread>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_runtime_task {

namespace {

using strata::task;

task<int> immediate(int v) { co_return v; }

task<int> immediate_throw() {
  throw std::runtime_error("from a task");
  co_return 0;
}

// Suspends and is resumed from another thread (as a shard reply resumes a worker).
struct resume_elsewhere {
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) const {
    std::thread([h] { h.resume(); }).detach();
  }
  void await_resume() const noexcept {}
};

task<int> later(int v) {
  co_await resume_elsewhere{};
  co_return v;
}

task<int> later_throw() {
  co_await resume_elsewhere{};
  throw std::runtime_error("from a resumed task");
  co_return 0;
}

// Runs a top-level task to completion and waits for it.
template <class F>
void run_top(F&& body) {
  std::promise<std::exception_ptr> done;
  auto t = body();
  t.start([&done](std::exception_ptr e) { done.set_value(e); });
  const auto err = done.get_future().get();
  if (err) std::rethrow_exception(err);
}

std::uintptr_t here() {
  volatile char marker = 0;
  return reinterpret_cast<std::uintptr_t>(&marker);
}

task<std::uintptr_t> stack_probe() { co_return here(); }

}  // namespace

TEST_CASE("task: a value and an exception reach the awaiter when the task finishes at once") {
  int got = 0;
  bool caught = false;
  run_top([&]() -> task<> {
    got = co_await immediate(41) + 1;
    try {
      (void)co_await immediate_throw();
    } catch (const std::runtime_error& e) {
      caught = std::string(e.what()) == "from a task";
    }
  });
  CHECK(got == 42);
  CHECK(caught);
}

TEST_CASE("task: a value and an exception reach the awaiter when the task finishes on another thread") {
  int sum = 0;
  bool caught = false;
  run_top([&]() -> task<> {
    for (int i = 1; i <= 200; ++i) sum += co_await later(i);  // each one races the awaiter's suspension
    try {
      (void)co_await later_throw();
    } catch (const std::runtime_error& e) {
      caught = std::string(e.what()) == "from a resumed task";
    }
  });
  CHECK(sum == 200 * 201 / 2);
  CHECK(caught);
}

TEST_CASE("task: a long loop of awaits on tasks that finish at once uses constant stack") {
  constexpr int n = 200000;
  std::uintptr_t first = 0, last = 0;
  std::int64_t sum = 0;
  run_top([&]() -> task<> {
    first = co_await stack_probe();
    for (int i = 0; i < n; ++i) sum += co_await immediate(i);
    last = co_await stack_probe();
  });
  CHECK(sum == std::int64_t{n} * (n - 1) / 2);
  // Same depth before and after the loop; nested resumptions would have moved it by n frames.
  CHECK(first == last);
}

}  // namespace test_runtime_task
