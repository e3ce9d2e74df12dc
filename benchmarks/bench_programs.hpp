#pragma once
// The strata side of the transport benchmarks, one copy for strata_bench_tcp (both ends in one
// process) and strata_bench_mpi (two processes): the pipelined flush stream and its echo, the
// lock-step BSP round and the cache-missing get. Each benchmark supplies how a transport pair or a
// two-node system is set up; what is timed is the same code, so their figures compare.
#include <strata/strata.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <semaphore>
#include <utility>
#include <vector>

#include "bench_util.hpp"

namespace strata_bench {

/// At most this many batches in flight in a stream.
using stream_slots = std::counting_semaphore<1 << 20>;

/// The far side's answer to a flush: rows of shard 1 carrying the same payload.
inline strata::wire::rows echo_of(strata::wire::flush&& f) {
  strata::wire::rows r;
  r.shard = 1;
  r.count = f.count;
  r.payload = std::move(f.payload);
  return r;
}

/// Sends `count` flushes of `bytes` from endpoint {0, 1} to {1, 0} over `t`, at most `window`
/// unanswered (each answer releases `slots`, which starts at `window`); seconds until every
/// answer is in. `slots` is back at `window` after.
template <class T>
double stream_flushes(T& t, stream_slots& slots, std::size_t bytes, int count, int window) {
  std::vector<std::byte> payload(bytes, std::byte{7});
  const auto t0 = clk::now();
  for (int i = 0; i < count; ++i) {
    slots.acquire();
    strata::wire::flush f;
    f.seq = static_cast<std::uint64_t>(i);
    f.count = 1;
    f.payload.bytes = payload;  // the worker's encoded oplog: one copy, as in a real flush
    t.send({0, 1}, {1, 0}, std::move(f));
  }
  for (int i = 0; i < window; ++i) slots.acquire();  // every reply is in
  const auto t1 = clk::now();
  for (int i = 0; i < window; ++i) slots.release();
  return secs(t0, t1);
}

using float_table = strata::table_handle<strata::dense_row<float>>;

/// Lock-step row sync through the runtime: per round each of the two workers adds a B-byte row
/// held by the other node, clocks and reads it back. `run(width, program)` runs `program` on a
/// two-node system<bsp, ...> (one worker per node) with a table of `width` floats. Seconds per
/// round, worker 0's view, after 5 rounds of warm-up.
template <class Run>
double lockstep_seconds(std::size_t bytes, int rounds, Run&& run) {
  const std::size_t width = bytes / sizeof(float);
  double per_round = 0;
  run(width, [&](strata::worker& w, float_table t) -> strata::task<> {
    const strata::row_id theirs = w.id() == 0 ? 1 : 0;  // row r is held by node r (2 rows, 2 shards)
    strata::dense_row<float> delta(width);
    for (std::size_t c = 0; c < width; ++c) delta.inc(static_cast<strata::col_id>(c), 1.f);
    clk::time_point t0{};
    for (int i = 0; i < rounds + 5; ++i) {
      if (i == 5) t0 = clk::now();  // after warm-up
      co_await w.inc_row(t, theirs, delta);
      co_await w.clock();
      (void)co_await w.get(t, theirs);
    }
    if (w.id() == 0) per_round = secs(t0, clk::now()) / rounds;
  });
  return per_round;
}

/// get() missing the cache: median seconds per get of a 64-byte row held by the other node, one
/// get per clock of worker 0 (`run` as for lockstep_seconds).
template <class Run>
double get_miss_median(int rounds, Run&& run) {
  std::vector<double> rtt;
  run(std::size_t{16}, [&](strata::worker& w, float_table t) -> strata::task<> {
    if (w.id() != 0) co_return;  // worker 1 finishes at once: only worker 0's clock gates reads
    for (int i = 0; i < rounds + 10; ++i) {
      co_await w.clock();  // the cached row is now one clock too old: the get must go out
      const auto t0 = clk::now();
      (void)co_await w.get(t, 1);
      if (i >= 10) rtt.push_back(secs(t0, clk::now()));
    }
  });
  std::sort(rtt.begin(), rtt.end());
  return rtt.empty() ? 0 : rtt[rtt.size() / 2];
}

}  // namespace strata_bench
