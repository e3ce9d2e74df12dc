#pragma once
/// \file The run's clock: what strata and its trainers time iterations, waits and runs with. It is
/// std::chrono::steady_clock, except in a process that simulates a cluster (sim/simulated.hpp),
/// where it reads the simulation's clock, so that the same program reports simulated seconds.
#include <atomic>
#include <chrono>

namespace strata {

/// A std::chrono clock (steady) whose `now()` is steady_clock's, or the source installed with
/// `set_run_clock_source` (seconds since the simulation began).
struct run_clock {
  using duration = std::chrono::steady_clock::duration;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<run_clock>;
  static constexpr bool is_steady = true;

  /// The installed source of seconds (null: steady_clock). One per program: an inline function's
  /// static is one object across every file of the program.
  static std::atomic<double (*)()>& source() noexcept {
    static std::atomic<double (*)()> s{nullptr};
    return s;
  }
  static time_point now() noexcept {
    if (auto* s = source().load(std::memory_order_acquire))
      return time_point(std::chrono::duration_cast<duration>(std::chrono::duration<double>(s())));
    return time_point(std::chrono::steady_clock::now().time_since_epoch());
  }
  /// now() in seconds, as a double.
  static double seconds() noexcept { return std::chrono::duration<double>(now().time_since_epoch()).count(); }
};

/// Makes `run_clock` read `seconds` (a simulation's clock) from now on; nullptr restores steady_clock.
inline void set_run_clock_source(double (*seconds)()) noexcept { run_clock::source().store(seconds, std::memory_order_release); }

}  // namespace strata
