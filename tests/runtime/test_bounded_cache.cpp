// The bounded client row cache (system_config::cache_rows): a run with a cache far smaller than the
// table gives exactly the tables and reads of an unbounded run, loses no update, never evicts a row
// with un-flushed increments, a pending request or a reference handed out in the current turn, and
// keeps rows <= max(capacity, pinned rows) after every admission. The staleness bounds under
// SSP/ESSP with a small cache and random delays are checked in tests/consistency/test_models.cpp.
#include <doctest/doctest.h>

#include <strata/strata.hpp>

#include "../support/deadline.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_runtime_bounded_cache {

namespace {

using strata_test::within;
using counts = strata::dense_row<long>;

constexpr std::size_t rows = 1000, width = 4;
constexpr int clocks = 20;
constexpr std::uint32_t nodes = 2, per_node = 2, P = nodes * per_node;

/// The row, column and amount of one worker's k-th increment at clock c (the same in every run).
struct step {
  strata::row_id read;   // read, then incremented at column `self`
  strata::row_id other;  // incremented without being read
  long by;
};
std::vector<step> steps(std::uint32_t self, int c) {
  std::mt19937_64 rng(1000003u * self + static_cast<std::uint64_t>(c));
  std::uniform_int_distribution<strata::row_id> row(0, rows - 1);
  std::uniform_int_distribution<long> amount(1, 9);
  std::vector<step> out(3);
  for (auto& s : out) s = {row(rng), row(rng), amount(rng)};
  return out;
}

struct outcome {
  std::vector<counts> table;
  std::vector<std::uint64_t> read_sums;  // per worker: a checksum of every value it read (wraps: unsigned)
  strata::worker_stats stats;
  std::size_t admissions_over = 0;  // admissions after which rows > max(capacity, pinned)
};

/// Every worker, at every clock: 3 times read a random row and add to it and to another random row
/// (column = its id), then read its first row again (read-my-writes). BSP, 2 nodes x 2 workers.
outcome run_bsp(std::size_t cache) {
  strata::system<strata::bsp> sys({.nodes = nodes, .workers_per_node = per_node, .cache_rows = cache});
  auto t = sys.add_table<counts>(width);
  outcome out;
  out.read_sums.assign(P, 0);
  std::vector<std::size_t> over(P, 0);
  sys.run([&](strata::worker& w) -> strata::task<> {
    const auto self = w.id();
    std::uint64_t sum = 0;
    auto read = [&](strata::row_id r) -> strata::task<> {
      if (!w.is_cached(t, r)) {
        w.prefetch(t, r);  // admits r now: the bound must hold right after
        if (w.cached_rows(t) > std::max(cache == 0 ? w.cached_rows(t) : cache, w.pinned_rows(t))) ++over[self];
      }
      const counts& row = co_await w.get(t, r);
      for (strata::col_id k = 0; k < width; ++k)
        sum = sum * 31 + static_cast<std::uint64_t>(row.get(k)) * (k + 1) + r;
    };
    for (int c = 0; c < clocks; ++c) {
      const auto plan = steps(self, c);
      for (const auto& s : plan) {
        co_await read(s.read);
        co_await w.inc(t, s.read, self, s.by);
        co_await w.inc(t, s.other, self, s.by);
      }
      co_await read(plan.front().read);
      co_await w.clock();
    }
    out.read_sums[self] = sum;
  });
  for (strata::row_id r = 0; r < rows; ++r) out.table.push_back(sys.row(t, r));
  out.stats = sys.total_stats();
  for (auto n : over) out.admissions_over += n;
  return out;
}

}  // namespace

TEST_CASE("bounded cache, bsp: a cache of 8 rows (table of 1000) gives exactly the unbounded run's tables and reads") {
  within(std::chrono::seconds(120), "bounded cache bsp", [] {
    const outcome full = run_bsp(0), small = run_bsp(8);
    // No lost update: each cell is exactly the sum of its writer's increments.
    std::vector<long> expect(rows * width, 0);
    for (std::uint32_t p = 0; p < P; ++p)
      for (int c = 0; c < clocks; ++c)
        for (const auto& s : steps(p, c)) expect[s.read * width + p] += s.by, expect[s.other * width + p] += s.by;
    std::size_t wrong = 0;
    for (strata::row_id r = 0; r < rows; ++r)
      for (strata::col_id k = 0; k < width; ++k) {
        wrong += small.table[r].get(k) != expect[r * width + k];
        wrong += full.table[r].get(k) != expect[r * width + k];
      }
    CHECK(wrong == 0);
    // BSP reads are exact snapshots: every value read is the same with and without the bound.
    CHECK(small.read_sums == full.read_sums);
    CHECK(small.stats.reads == full.stats.reads);
    CHECK(small.stats.min_clock_staleness.bins() == full.stats.min_clock_staleness.bins());
    CHECK(small.stats.writer_staleness.bins() == full.stats.writer_staleness.bins());
    // The bound did work: rows were evicted, and the cache filled to exactly its capacity and no
    // further. At an admission at most 7 rows are pinned here (3 read rows and 3 other rows with
    // increments, and the new row; the previous clock's are flushed and its turn is over), so the
    // general bound max(capacity, pinned) is the capacity itself.
    CHECK(small.stats.evictions > 0);
    CHECK(small.stats.cache_peak_rows == 8);
    CHECK(small.admissions_over == 0);
    CHECK(full.stats.evictions == 0);
    CHECK(full.stats.cache_peak_rows > 8);
  });
}

TEST_CASE("bounded cache: pinned rows stay (increments, requests, references of the turn), the rest go") {
  within(std::chrono::seconds(60), "bounded cache pins", [] {
    strata::system<strata::bsp> sys({.nodes = 2, .workers_per_node = 1, .cache_rows = 4});
    auto t = sys.add_table<counts>(2);
    sys.run([&](strata::worker& w) -> strata::task<> {
      const strata::col_id me = w.id();
      // Clock 0: row 0 read and incremented, row 50 incremented without a read; then 20 other rows
      // read one by one (each a miss: the worker suspends, so only the increments pin).
      (void)co_await w.get(t, 0);
      co_await w.inc(t, 0, me, 5L);
      co_await w.inc(t, 50, me, 7L);
      for (strata::row_id r = 10; r < 30; ++r) {
        (void)co_await w.get(t, r);
        CHECK(w.is_cached(t, 0));  // un-flushed increments: never evicted
        CHECK(w.cached_rows(t) <= 4);
      }
      CHECK(!w.is_cached(t, 50));  // an increment does not bring a row into the cache
      CHECK((co_await w.get(t, 50)).get(me) == 7);  // read-my-writes through the oplog
      CHECK((co_await w.get(t, 0)).get(me) == 5);
      co_await w.clock();
      // Clock 1: flushed, row 0 may go; a re-read of it is a miss that sees both workers' clock-0 updates.
      for (strata::row_id r = 30; r < 50; ++r) (void)co_await w.get(t, r);
      CHECK(!w.is_cached(t, 0));
      const counts& zero = co_await w.get(t, 0);
      CHECK(zero.get(0) == 5);
      CHECK(zero.get(1) == 5);
      co_await w.clock();
      // Clock 2: 20 prefetched rows are all pinned by their requests: the cache holds all of them.
      for (strata::row_id r = 100; r < 120; ++r) w.prefetch(t, r);
      CHECK(w.cached_rows(t) == 20);
      CHECK(w.pinned_rows(t) == 20);
      for (strata::row_id r = 100; r < 120; ++r) (void)co_await w.get(t, r);
      co_await w.yield();
      (void)co_await w.get(t, 200);  // the next admission evicts back down to the capacity
      CHECK(w.cached_rows(t) == 4);
      co_await w.clock();
      // Clock 3: four rows read in one turn (all hits) stay while a fifth is admitted; their
      // references stay valid.
      const std::vector<strata::row_id> four{300, 301, 302, 303};
      for (auto r : four) w.prefetch(t, r);  // admitted in one turn, pinned by their requests: all four stay
      for (auto r : four) (void)co_await w.get(t, r);
      co_await w.yield();
      std::vector<const counts*> held;
      for (auto r : four) {
        const bool hit = w.is_cached(t, r);
        held.push_back(&co_await w.get(t, r));
        CHECK(hit);
      }
      w.prefetch(t, 400);
      CHECK(w.cached_rows(t) == 5);
      for (auto r : four) CHECK(w.is_cached(t, r));
      for (const counts* p : held) CHECK(p->get(me) == 0);
      co_await w.yield();
      w.prefetch(t, 401);  // a new turn: rows 300..303 are evictable again
      CHECK(w.cached_rows(t) == 4);
      co_await w.clock();
      // Clock 4: a batched prefetch of 20 rows, then one more row admitted in the same turn. The
      // replies may come back inline (both shards are in this process) before the admission; the
      // 20 rows stay all the same, for the reads of this turn.
      std::vector<strata::row_id> batch;
      for (strata::row_id r = 500; r < 520; ++r) batch.push_back(r);
      w.prefetch(t, batch);
      w.prefetch(t, 600);
      CHECK(w.cached_rows(t) == 21);
      for (auto r : batch) CHECK(w.is_cached(t, r));
      // Rows of the other node's shard may wait there for the other worker's clock (BSP): read
      // them all, so that no request is outstanding when the turn ends.
      for (auto r : batch) (void)co_await w.get(t, r);
      (void)co_await w.get(t, 600);
      co_await w.yield();
      w.prefetch(t, 601);  // a new turn: back down to the capacity (only 601's request pins)
      CHECK(w.cached_rows(t) == 4);
      co_await w.clock();
    });
    const auto st = sys.total_stats();
    CHECK(st.evictions > 0);
    CHECK(sys.row(t, 0).get(0) == 5);
    CHECK(sys.row(t, 0).get(1) == 5);
    CHECK(sys.row(t, 50).get(0) == 7);
    CHECK(sys.row(t, 50).get(1) == 7);
  });
}

TEST_CASE("bounded cache: essp pushes of rows not cached are dropped, not cached") {
  within(std::chrono::seconds(60), "bounded cache essp pushes", [] {
    strata::system<strata::essp<1>> sys({.nodes = 1, .workers_per_node = 2, .cache_rows = 2});
    auto t = sys.add_table<counts>(2);
    std::vector<std::size_t> most(2, 0);  // per worker
    sys.run([&](strata::worker& w) -> strata::task<> {
      const strata::col_id me = w.id();
      // Both workers subscribe to rows 0..9 (reads under ESSP subscribe), then keep adding to them
      // for several clocks: each advance pushes the changed rows to both.
      for (strata::row_id r = 0; r < 10; ++r) (void)co_await w.get(t, r);
      for (int c = 0; c < 6; ++c) {
        for (strata::row_id r = 0; r < 10; ++r) co_await w.inc(t, r, me, 1L);
        co_await w.clock();
        most[w.id()] = std::max(most[w.id()], w.cached_rows(t));
      }
      // Shard 0 sends the barrier's result after the pushes of every advance before it (one shard,
      // messages in order): by then every push has been taken in, or dropped.
      co_await w.barrier();
      most[w.id()] = std::max(most[w.id()], w.cached_rows(t));
      for (strata::row_id r = 0; r < 10; ++r) CHECK((co_await w.get(t, r)).get(me) == 6);
    });
    CHECK(std::max(most[0], most[1]) <= 2);  // the pushes of the 8 or more rows not cached went nowhere
    for (strata::row_id r = 0; r < 10; ++r) {
      CHECK(sys.row(t, r).get(0) == 6);
      CHECK(sys.row(t, r).get(1) == 6);
    }
  });
}

}  // namespace test_runtime_bounded_cache
