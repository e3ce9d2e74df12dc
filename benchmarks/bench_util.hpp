#pragma once
// Timing helpers shared by the benchmarks: seconds between two time points, best of N runs.
#include <algorithm>
#include <chrono>

namespace strata_bench {
using clk = std::chrono::steady_clock;
inline double secs(clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); }

/// The smallest of `reps` results of f() (the run least disturbed by a noisy machine).
template <class F>
double best_of(int reps, F&& f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) best = std::min(best, f());
  return best;
}
}  // namespace strata_bench
