#pragma once
// Runs a test body under a deadline: a run whose workers wait forever cannot be torn down from
// outside, so a hang is reported and ends the test process instead of stalling the whole suite.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <utility>

namespace strata_test {

template <class F>
void within(std::chrono::seconds limit, const char* what, F&& f) {
  auto fut = std::async(std::launch::async, std::forward<F>(f));
  if (fut.wait_for(limit) == std::future_status::timeout) {
    std::fprintf(stderr, "HANG: %s did not finish within %lld s\n", what, static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(3);
  }
  fut.get();  // rethrows a failure
}

}  // namespace strata_test
