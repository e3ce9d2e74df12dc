// Per-writer staleness: what a read's row holds of every other worker's updates, recorded as
// (c - 1) - newest clock of that worker held, which goes negative when the row holds a writer's
// updates from the reader's clock or later (the figure the ESSP paper plots). The invariants under
// every model and random delays are in tests/consistency/test_models.cpp; these are exact cases.
#include <doctest/doctest.h>

#include <strata/strata.hpp>

#include "../support/deadline.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

namespace {

using strata_test::within;
using drow = strata::dense_row<double>;
using hist = std::map<std::int64_t, std::uint64_t>;

/// Worker 1 runs 5 clocks ahead, adding 1 to row 0 at each, then meets worker 0 (still at clock 0)
/// in a barrier; worker 0 then reads row 0 once (then both meet again). Returns worker 0's statistics and the row's
/// writer clocks as worker 0 saw them.
template <class Model>
std::pair<strata::worker_stats, std::vector<strata::clock_type>> ahead_by_five() {
  strata::system<Model> sys({.nodes = 1, .workers_per_node = 2});
  auto t = sys.template add_table<drow>(2);
  std::vector<strata::clock_type> seen;
  double got = -1;
  sys.run([&](strata::worker& w) -> strata::task<> {
    if (w.id() == 1) {
      for (int c = 0; c < 5; ++c) {
        co_await w.inc(t, 0, 1, 1.0);
        co_await w.clock();
      }
      co_await w.barrier();
      co_await w.barrier();  // its last flush (tag 5, "done") would otherwise race worker 0's read
      co_return;
    }
    co_await w.barrier();
    const drow& r = co_await w.get(t, 0);
    got = r.get(1);
    seen = w.writer_clocks(t, 0);
    co_await w.barrier();
  });
  CHECK(got == (Model::exact_snapshots ? 0 : 5));
  return {sys.stats()[0], seen};
}

}  // namespace

TEST_CASE("per-writer staleness: a row holding a writer's later clocks records a negative figure") {
  within(std::chrono::seconds(60), "writer ahead", [] {
    // Worker 1's clocks 0..4 are in the row that worker 0 reads at clock 0: (0 - 1) - 4 = -5. The
    // min-clock figure says 0 (worker 0 itself has completed no clock), and cannot show it.
    auto check = [](const strata::worker_stats& st, const std::vector<strata::clock_type>& seen) {
      CHECK(st.reads == 1);
      CHECK(st.writer_staleness.bins() == hist{{-5, 1}});
      CHECK(st.min_clock_staleness.bins() == hist{{0, 1}});
      CHECK(seen == std::vector<strata::clock_type>{strata::no_clock, 4});
    };
    SUBCASE("ssp") { auto [st, seen] = ahead_by_five<strata::ssp<1>>(); check(st, seen); }
    SUBCASE("essp") { auto [st, seen] = ahead_by_five<strata::essp<1>>(); check(st, seen); }
    SUBCASE("async") { auto [st, seen] = ahead_by_five<strata::async>(); check(st, seen); }
    SUBCASE("bsp: the exact snapshot holds nothing of worker 1 beyond the reader's clock - 1") {
      auto [st, seen] = ahead_by_five<strata::bsp>();
      CHECK(st.writer_staleness.bins() == hist{{0, 1}});
      CHECK(seen == std::vector<strata::clock_type>{strata::no_clock, strata::no_clock});
    }
  });
}

TEST_CASE("per-writer staleness: a single worker records none, the min-clock figure every read") {
  within(std::chrono::seconds(60), "single worker", [] {
    strata::system<strata::essp<2>> sys({.nodes = 2, .workers_per_node = 1});
    auto t = sys.add_table<drow>(1);
    strata::system<strata::essp<2>> one({.nodes = 1, .workers_per_node = 1});
    auto t1 = one.add_table<drow>(1);
    one.run([&](strata::worker& w) -> strata::task<> {
      for (int c = 0; c < 6; ++c) {
        for (strata::row_id r = 0; r < 4; ++r) {
          (void)co_await w.get(t1, r);
          co_await w.inc(t1, r, 0, 1.0);
        }
        co_await w.clock();
      }
    });
    const auto st = one.total_stats();
    CHECK(st.reads == 24);
    CHECK(st.min_clock_staleness.count() == 24);
    CHECK(st.writer_staleness.count() == 0);
    // Two workers (one per node): one figure per read for the other one.
    sys.run([&](strata::worker& w) -> strata::task<> {
      for (int c = 0; c < 6; ++c) {
        for (strata::row_id r = 0; r < 4; ++r) (void)co_await w.get(t, r);
        co_await w.clock();
      }
    });
    const auto two = sys.total_stats();
    CHECK(two.reads == 48);
    CHECK(two.writer_staleness.count() == 48);
    CHECK(two.writer_staleness.stats().max() <= 2);
  });
}

TEST_CASE("per-writer staleness: a long run holds a bounded number of views, and every read's writer clocks stay right") {
  // Nearly every rows message brings new per-writer clocks (a new view); without compaction a
  // worker kept them all, memory growing with the run. BSP makes each read's clocks exact: a read
  // at clock c holds every writer's updates through c - 1, none later.
  within(std::chrono::seconds(120), "long run", [] {
    constexpr int clocks = 3000;
    strata::system<strata::bsp> sys({.nodes = 2, .workers_per_node = 2});
    auto t = sys.add_table<drow>(1);
    std::vector<std::size_t> held(4, 0);
    int wrong = 0;
    sys.run([&](strata::worker& w) -> strata::task<> {
      for (int c = 0; c < clocks; ++c) {
        for (strata::row_id r = 0; r < 6; ++r) {
          (void)co_await w.get(t, (r + static_cast<strata::row_id>(c)) % 9);  // rows of both shards, cached or not
          if (w.writer_clocks(t, (r + static_cast<strata::row_id>(c)) % 9) != std::vector<strata::clock_type>(4, c - 1)) ++wrong;
        }
        co_await w.inc(t, static_cast<strata::row_id>(c % 9), 0, 1.0);
        co_await w.clock();
      }
      held[w.id()] = w.views_held();
    });
    CHECK(wrong == 0);
    for (auto h : held) CHECK(h <= 2 * strata::worker::min_views_to_compact);
    const auto st = sys.total_stats();
    CHECK(st.writer_staleness.bins() == hist{{0, 4ull * clocks * 6 * 3}});
  });
}
