// Parameter-server core micro-benchmarks, each against a baseline measured in the same run:
//  - get + inc from the worker's cache vs a plain array loop doing the same additions;
//  - get alone from the cache with 4 workers (each read records its min-clock staleness and, for
//    the 3 other writers, its per-writer staleness) vs a plain array loop doing the same reads;
//  - clock() round (BSP, read + inc + clock) with 1, 2, 4, 8 workers vs a std::barrier round, with
//    the defaults (the worker handles its local shard's messages itself and polls briefly before it
//    sleeps), without the polling (system_config::spin_us = 0) and through the shard's thread
//    (system_config::local_shard_calls = false); 20,000 rounds a run (10,000 with 8 workers);
//  - the 2-worker round again beside one busy thread per core (another program's load, the way CI
//    runs tests side by side): polling (default) vs sleeping at once, whose ratio shows whether
//    the polling backs off when a yield hands the core to a busy program for a time slice;
//  - a cache miss (a read of the server's row, `fetch`) both ways, vs a plain mutex-guarded copy of
//    the row.
// Prints ratios; times are best of several repetitions. Never pass/fail on time.
#include <strata/strata.hpp>

#include "bench_util.hpp"

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

namespace {
using strata_bench::best_of;
using strata_bench::clk;
using strata_bench::secs;

constexpr int rows = 64, width = 16;

double array_loop(long n) {
  std::vector<float> a(rows * width, 0.f);
  volatile float sink = 0;
  auto t0 = clk::now();
  for (long i = 0; i < n; ++i) {
    const int r = static_cast<int>(i % rows), c = static_cast<int>(i % width);
    sink = sink + a[r * width + c];
    a[r * width + c] += 1.f;
  }
  auto t1 = clk::now();
  return secs(t0, t1) / static_cast<double>(n);
}

double ps_cache_loop(long n) {
  strata::system<strata::essp<8>> sys({.nodes = 1, .workers_per_node = 1});
  auto t = sys.add_table<strata::dense_row<float>>(width);
  double per = 0;
  sys.run([&](strata::worker& w) -> strata::task<> {
    for (int r = 0; r < rows; ++r) (void)co_await w.get(t, r);  // warm the cache
    volatile float sink = 0;
    auto t0 = clk::now();
    for (long i = 0; i < n; ++i) {
      const auto r = static_cast<strata::row_id>(i % rows);
      const auto c = static_cast<strata::col_id>(i % width);
      const auto& row = co_await w.get(t, r);
      sink = sink + row.get(c);
      co_await w.inc(t, r, c, 1.f);
    }
    auto t1 = clk::now();
    per = secs(t0, t1) / static_cast<double>(n);
    co_await w.clock();
  });
  return per;
}

double array_read_loop(long n) {
  std::vector<float> a(rows * width, 1.f);
  volatile float sink = 0;
  auto t0 = clk::now();
  for (long i = 0; i < n; ++i) sink = sink + a[static_cast<int>(i % rows) * width + static_cast<int>(i % width)];
  return secs(t0, clk::now()) / static_cast<double>(n);
}

double ps_read_loop(long n) {
  strata::system<strata::essp<8>> sys({.nodes = 1, .workers_per_node = 4});
  auto t = sys.add_table<strata::dense_row<float>>(width);
  double per = 0;
  sys.run([&](strata::worker& w) -> strata::task<> {
    for (int r = 0; r < rows; ++r) co_await w.inc(t, r, w.id(), 1.f);  // every row gets 4 writers
    co_await w.clock();
    co_await w.barrier();
    if (w.id() != 0) co_return;
    for (int r = 0; r < rows; ++r) (void)co_await w.get(t, r);  // warm the cache
    volatile float sink = 0;
    auto t0 = clk::now();
    for (long i = 0; i < n; ++i) {
      const auto& row = co_await w.get(t, static_cast<strata::row_id>(i % rows));
      sink = sink + row.get(static_cast<strata::col_id>(i % width));
    }
    per = secs(t0, clk::now()) / static_cast<double>(n);
    co_await w.clock();
  });
  return per;
}

double barrier_round(int p, int rounds) {
  std::barrier b(p);
  auto t0 = clk::now();
  std::vector<std::thread> ts;
  for (int i = 0; i < p; ++i)
    ts.emplace_back([&] {
      for (int k = 0; k < rounds; ++k) b.arrive_and_wait();
    });
  for (auto& th : ts) th.join();
  return secs(t0, clk::now()) / rounds;
}

double ps_clock_round(int p, int rounds, bool local, int spin_us = 50) {
  strata::system_config cfg{.nodes = 1, .workers_per_node = static_cast<std::uint32_t>(p)};
  cfg.local_shard_calls = local;
  cfg.spin_us = spin_us;
  strata::system<strata::bsp> sys(cfg);
  auto t = sys.add_table<strata::dense_row<float>>(width);
  auto t0 = clk::now();
  sys.run([&](strata::worker& w) -> strata::task<> {
    for (int k = 0; k < rounds; ++k) {
      (void)co_await w.get(t, 0);
      co_await w.inc(t, 0, w.id() % width, 1.f);
      co_await w.clock();
    }
  });
  return secs(t0, clk::now()) / rounds;
}

double ps_miss_loop(long n, bool local) {
  strata::system_config cfg{.nodes = 1, .workers_per_node = 1};
  cfg.local_shard_calls = local;
  strata::system<strata::essp<8>> sys(cfg);
  auto t = sys.add_table<strata::dense_row<float>>(width);
  double per = 0;
  sys.run([&](strata::worker& w) -> strata::task<> {
    volatile float sink = 0;
    auto t0 = clk::now();
    for (long i = 0; i < n; ++i) {
      const auto row = co_await w.fetch(t, static_cast<strata::row_id>(i % rows));
      sink = sink + row.get(0);
    }
    per = secs(t0, clk::now()) / static_cast<double>(n);
    co_await w.clock();
  });
  return per;
}

double mutex_copy_loop(long n) {
  std::mutex m;
  std::vector<std::vector<float>> a(rows, std::vector<float>(width, 1.f));
  volatile float sink = 0;
  auto t0 = clk::now();
  for (long i = 0; i < n; ++i) {
    std::vector<float> copy;
    {
      std::lock_guard lk(m);
      copy = a[static_cast<std::size_t>(i % rows)];
    }
    sink = sink + copy[0];
  }
  return secs(t0, clk::now()) / static_cast<double>(n);
}
}  // namespace

int main() {
  const long n = 5'000'000;
  const double base = best_of(5, [&] { return array_loop(n); });
  const double ps = best_of(5, [&] { return ps_cache_loop(n); });
  std::printf("get+inc from cache: %.2f ns/op, plain array loop %.2f ns/op, ratio %.1fx slower\n", ps * 1e9, base * 1e9,
              ps / base);
  const double rbase = best_of(5, [&] { return array_read_loop(n); });
  const double rps = best_of(5, [&] { return ps_read_loop(n); });
  std::printf("get from cache, 4 workers: %.2f ns/op, plain array read loop %.2f ns/op, ratio %.1fx slower\n", rps * 1e9,
              rbase * 1e9, rps / rbase);
  const long misses = 200'000;
  const double mbase = best_of(5, [&] { return mutex_copy_loop(misses); });
  const double mloc = best_of(5, [&] { return ps_miss_loop(misses, true); });
  const double mq = best_of(5, [&] { return ps_miss_loop(misses, false); });
  std::printf("cache miss (fetch): %.2f us local call, %.2f us via shard thread, mutex-guarded copy %.3f us; "
              "ratios %.1fx / %.1fx\n", mloc * 1e6, mq * 1e6, mbase * 1e6, mloc / mbase, mq / mbase);
  std::printf("%-8s %14s %14s %14s %14s %8s %8s %8s\n", "workers", "bsp clock (us)", "no spin (us)", "via shard (us)",
              "barrier (us)", "ratio", "ratio2", "ratio3");
  for (int p : {1, 2, 4, 8}) {
    // Enough rounds that a run's start and finish (threads woken, the start barrier, the final
    // flushes: tens of µs) weigh little against the rounds themselves.
    const int rounds = p <= 4 ? 20000 : 10000;
    const double b = best_of(3, [&] { return barrier_round(p, rounds); });
    const double c = best_of(3, [&] { return ps_clock_round(p, rounds, true); });
    const double ns = best_of(3, [&] { return ps_clock_round(p, rounds, true, 0); });
    const double q = best_of(3, [&] { return ps_clock_round(p, rounds, false); });
    std::printf("%-8d %14.1f %14.1f %14.1f %14.2f %8.1f %8.1f %8.1f\n", p, c * 1e6, ns * 1e6, q * 1e6, b * 1e6, c / b,
                ns / b, q / b);
  }
  {
    std::atomic<bool> stop{false};
    std::vector<std::thread> busy;
    for (unsigned i = 0; i < std::max(1u, std::thread::hardware_concurrency()); ++i)
      busy.emplace_back([&] {
        volatile unsigned long x = 0;
        while (!stop.load(std::memory_order_relaxed)) x = x + 1;
      });
    const int rounds = 2000;
    const double c = best_of(3, [&] { return ps_clock_round(2, rounds, true); });
    const double ns = best_of(3, [&] { return ps_clock_round(2, rounds, true, 0); });
    stop = true;
    for (auto& th : busy) th.join();
    std::printf("2 workers beside %zu busy threads: bsp clock %.1f us, no spin %.1f us, ratio %.2f\n", busy.size(),
                c * 1e6, ns * 1e6, c / ns);
  }
}
