#pragma once
/// \file What a worker measured during a run (`worker::stats()`), and `strata::sum`, the reduction
/// for `worker::all_reduce`.
#include <algorithm>
#include <cstdint>
#include <cstddef>

#include <strata/core/stats.hpp>

namespace strata {

/// What a worker measured during a run.
struct worker_stats {
  /// Every read's (c - 1) - t: c the reader's clock, t the clock through which the row holds every
  /// update of every worker (the minimum over writers, so a bound on how stale the row is).
  int_histogram min_clock_staleness;
  /// For every read and every *other* worker q that can still write: (c - 1) - (newest clock tag
  /// of q's updates the row holds). Negative when the row already holds q's updates from the
  /// reader's clock or later. A writer that has finished, with all its updates in the row (its
  /// clock `finished_clock` in the row's writer clocks), is left out. Nothing is recorded with a
  /// single worker.
  int_histogram writer_staleness;
  double wait_s = 0;              ///< time spent suspended in get / inc / finish
  std::uint64_t reads = 0;        ///< get() calls
  std::uint64_t waited_reads = 0; ///< get() calls that asked their shard (suspended, or answered at once by a shard in this process)
  std::uint64_t flushes = 0;      ///< flush messages sent
  double max_unacked_mass = 0;    ///< largest un-propagated update mass seen after an inc
  /// Rows evicted from the worker's bounded cache (system_config::cache_rows), every table; not
  /// paused by pause_stats.
  std::uint64_t evictions = 0;
  /// The most rows one table's cache held at once (bounded or not); not paused by pause_stats.
  std::uint64_t cache_peak_rows = 0;
  void merge(const worker_stats& o) {
    min_clock_staleness.merge(o.min_clock_staleness);
    writer_staleness.merge(o.writer_staleness);
    wait_s += o.wait_s;
    reads += o.reads;
    waited_reads += o.waited_reads;
    flushes += o.flushes;
    max_unacked_mass = std::max(max_unacked_mass, o.max_unacked_mass);
    evictions += o.evictions;
    cache_peak_rows = std::max(cache_peak_rows, o.cache_peak_rows);
  }
};

/// A reduction for `worker::all_reduce`: adds numbers, and vectors element-wise (the shorter one is
/// taken as padded with zeros).
struct sum {
  template <class T>
  T operator()(T a, const T& b) const {
    if constexpr (requires { a.size(); a.resize(0); a[0] += b[0]; }) {
      if (a.size() < b.size()) a.resize(b.size());
      for (std::size_t i = 0; i < b.size(); ++i) a[i] += b[i];
      return a;
    } else {
      return a + b;
    }
  }
};

}  // namespace strata
