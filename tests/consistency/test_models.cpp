// The parameter-server invariants under every consistency model, checked on every read:
// no lost update, each model's staleness bound (exact snapshots for BSP/SSP/ESSP), read-my-writes,
// VAP's value bound, under seeded random message delays.
#include <doctest/doctest.h>

#include <strata/strata.hpp>

#include "../support/ps_plan.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <barrier>
#include <cstdlib>
#include <limits>
#include <map>
#include <atomic>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_consistency_models {

namespace {

using counts = strata::dense_row<long>;

using strata_test::check_read;
using strata_test::check_writers;
using strata_test::plan;
using strata_test::violations;

template <class Model, class Transport = strata::inproc>
strata::worker_stats run_plan(const plan& pl, violations& bad, typename Transport::config tc = {},
                              std::uint32_t nodes = 2, std::chrono::microseconds compute = {},
                              std::barrier<>* lockstep = nullptr, std::size_t cache = 0, bool local_shard_calls = true,
                              bool huge_page_heap = false) {
  strata::system_config cfg{.nodes = nodes, .workers_per_node = static_cast<std::uint32_t>(pl.P) / nodes,
                            .staleness = 2, .value_bound = 4.0, .cache_rows = cache};
  cfg.local_shard_calls = local_shard_calls;
  cfg.huge_page_heap = huge_page_heap;
  strata::system<Model, Transport> sys(cfg, std::move(tc));
  auto t = sys.template add_table<counts>(static_cast<std::size_t>(pl.P));
  const auto mp = sys.model();
  // Per worker: the per-writer staleness each read should record, computed here from the row's
  // writer clocks (checked against the row's content by check_writers).
  std::vector<std::map<std::int64_t, std::uint64_t>> expect(static_cast<std::size_t>(pl.P));
  sys.run([&](strata::worker& w) -> strata::task<> {
    const int self = static_cast<int>(w.id());
    auto& mine = expect[static_cast<std::size_t>(self)];
    std::vector<long> v(static_cast<std::size_t>(pl.P));
    for (int c = 0; c < pl.clocks; ++c) {
      if (lockstep) lockstep->arrive_and_wait();  // same clock trajectory for every model compared
      if (compute.count()) {
        std::this_thread::sleep_for(compute);  // stands in for an iteration's work before its reads
        co_await w.yield();
      }
      for (int r : pl.reads[self][c]) {
        if (cache > 0 && !w.is_cached(t, static_cast<strata::row_id>(r))) {
          // A bounded cache admits the row here; right after, rows <= max(capacity, pinned rows).
          w.prefetch(t, static_cast<strata::row_id>(r));
          if (w.cached_rows(t) > std::max(cache, w.pinned_rows(t))) bad.add("cache above max(capacity, pinned rows)");
        }
        const counts& row = co_await w.get(t, static_cast<strata::row_id>(r));
        for (int k = 0; k < pl.P; ++k) v[k] = row.get(static_cast<strata::col_id>(k));
        check_read(pl, mp, self, r, c, 0, v, bad);
        check_writers(pl, mp, self, r, w.current_clock(), v, w.writer_clocks(t, static_cast<strata::row_id>(r)), mine, bad);
      }
      for (int r : pl.incs[self][c]) {
        co_await w.inc(t, static_cast<strata::row_id>(r), static_cast<strata::col_id>(self), 1L);
        if (w.unacked_mass() > w.mass_bound()) bad.add("value bound exceeded");
      }
      if (!pl.incs[self][c].empty()) {
        const int r = pl.incs[self][c].front();
        const counts& row = co_await w.get(t, static_cast<strata::row_id>(r));
        long own = 0;
        for (int x : pl.incs[self][c]) own += x == r;
        for (int k = 0; k < pl.P; ++k) v[k] = row.get(static_cast<strata::col_id>(k));
        check_read(pl, mp, self, r, c, own, v, bad);
        check_writers(pl, mp, self, r, w.current_clock(), v, w.writer_clocks(t, static_cast<strata::row_id>(r)), mine, bad);
      }
      co_await w.clock();
    }
  });
  // No lost update: every cell equals the exact number of increments.
  for (int r = 0; r < pl.rows; ++r) {
    const counts row = sys.row(t, static_cast<strata::row_id>(r));
    for (int w = 0; w < pl.P; ++w)
      if (row.get(static_cast<strata::col_id>(w)) != pl.cum(w, r, pl.clocks - 1))
        bad.add("lost update in row " + std::to_string(r) + " column " + std::to_string(w));
  }
  auto st = sys.total_stats();
  if (mp.staleness != strata::unbounded && st.min_clock_staleness.stats().max() > mp.staleness)
    bad.add("observed staleness above the bound");
  // Per-writer staleness: one figure per read and other worker still running, exactly those computed
  // above (so under BSP every one is 0 and under SSP/ESSP(s) none is above s: check_writers checks
  // each). A worker that finishes first leaves the reads of the others' last clocks a figure short.
  std::map<std::int64_t, std::uint64_t> all;
  std::uint64_t figures = 0;
  for (const auto& m : expect)
    for (auto [k, n] : m) all[k] += n, figures += n;
  if (st.writer_staleness.count() != figures || figures > st.reads * static_cast<std::uint64_t>(pl.P - 1))
    bad.add("per-writer staleness recorded " + std::to_string(st.writer_staleness.count()) + " figures (" +
            std::to_string(figures) + " expected) for " + std::to_string(st.reads) + " reads and " +
            std::to_string(pl.P - 1) + " other writers");
  if (st.writer_staleness.bins() != all) bad.add("per-writer staleness histogram differs from the reads' writer clocks");
  if (mp.staleness != strata::unbounded && st.writer_staleness.stats().max() > mp.staleness)
    bad.add("per-writer staleness above the bound");
  if (mp.exact && mp.staleness == 0 && (st.writer_staleness.stats().min() != 0 || st.writer_staleness.stats().max() != 0))
    bad.add("per-writer staleness not exactly 0 under BSP");
  return st;
}

strata::delayed<strata::inproc>::config delays(std::uint64_t seed, bool straggler = true) {
  strata::delayed<strata::inproc>::config c;
  c.delay.latency = std::chrono::microseconds(100);
  c.delay.jitter = std::chrono::microseconds(600);
  if (straggler) c.delay.stragglers = {strata::endpoint{1, 2}};  // worker 3
  c.delay.straggler_factor = 4;
  c.delay.seed = seed;
  return c;
}

template <class Model>
void check_model() {
  for (std::uint64_t seed : {1u, 2u}) {
    plan pl(4, 25, 6, seed);
    for (const bool local : {true, false}) {  // shards' code on the workers' threads, or on their own
      violations bad;
      run_plan<Model>(pl, bad, {}, 2, {}, nullptr, 0, local);
      INFO("local_shard_calls " << local << ": " << bad.first);
      CHECK(bad.count == 0);
    }
    {  // under random delays, threads on huge-page heaps (system_config::huge_page_heap)
      violations bad;
      auto st = run_plan<Model, strata::delayed<strata::inproc>>(pl, bad, delays(seed), 2, {}, nullptr, 0, true, true);
      INFO(bad.first);
      CHECK(bad.count == 0);
      CHECK(st.reads > 0);
    }
  }
}

/// The same invariants with a cache of 3 rows per worker (the plan's table has 40), under random
/// delays: re-reads of evicted rows are misses that must still meet the reader's bound.
template <class Model>
void check_model_small_cache() {
  for (std::uint64_t seed : {1u, 2u}) {
    plan pl(4, 25, 40, seed);
    violations bad;
    auto st = run_plan<Model, strata::delayed<strata::inproc>>(pl, bad, delays(seed), 2, {}, nullptr, 3);
    INFO(bad.first);
    CHECK(bad.count == 0);
    CHECK(st.evictions > 0);
    CHECK(st.reads > 0);
  }
}

}  // namespace

TEST_CASE("bsp with a cache of 3 rows: exact snapshots, nothing lost") { check_model_small_cache<strata::bsp>(); }
TEST_CASE("ssp<2> with a cache of 3 rows: reads within staleness 2, nothing lost") { check_model_small_cache<strata::ssp<2>>(); }
TEST_CASE("essp<2> with a cache of 3 rows: reads within staleness 2, pushes of evicted rows dropped, nothing lost") {
  check_model_small_cache<strata::essp<2>>();
}
TEST_CASE("vap<8.0> with a cache of 3 rows: value bound holds, nothing lost") { check_model_small_cache<strata::vap<8.0>>(); }

TEST_CASE("bsp: every read is exactly the previous clock's state, nothing lost") { check_model<strata::bsp>(); }
TEST_CASE("ssp<2>: reads within staleness 2, nothing lost") { check_model<strata::ssp<2>>(); }
TEST_CASE("ssp<dynamic_bound> takes s from the config") { check_model<strata::ssp<strata::dynamic_bound>>(); }
TEST_CASE("essp<2>: reads within staleness 2 with pushes, nothing lost") { check_model<strata::essp<2>>(); }
TEST_CASE("vap<8.0>: per-worker un-propagated mass stays within V/P, nothing lost") { check_model<strata::vap<8.0>>(); }
TEST_CASE("vap with a run-time bound") { check_model<strata::vap<-1.0>>(); }
TEST_CASE("async: nothing lost, own writes visible") { check_model<strata::async>(); }

TEST_CASE("one node, many workers, many nodes, one worker each") {
  plan pl(4, 15, 5, 9);
  violations bad;
  run_plan<strata::essp<1>>(pl, bad, {}, 1);
  run_plan<strata::ssp<1>>(pl, bad, {}, 4);
  INFO(bad.first);
  CHECK(bad.count == 0);
}

TEST_CASE("essp observes lower mean staleness than ssp with the same s and the same delays") {
  plan pl(4, 40, 6, 5);
  violations bad;
  // Workers that compute for longer than a message takes (the paper's setting), held in lockstep so
  // both models see the same clock trajectory on a loaded machine: under SSP a cached row ages until
  // it is s clocks old; under ESSP pushes keep it fresh.
  const auto work = std::chrono::microseconds(2000);
  std::barrier<> b1(4), b2(4);
  auto ssp = run_plan<strata::ssp<6>, strata::delayed<strata::inproc>>(pl, bad, delays(11, false), 2, work, &b1);
  auto essp = run_plan<strata::essp<6>, strata::delayed<strata::inproc>>(pl, bad, delays(11, false), 2, work, &b2);
  INFO(bad.first);
  CHECK(bad.count == 0);
  MESSAGE("mean staleness ssp<6> " << ssp.min_clock_staleness.stats().mean() << " essp<6> " << essp.min_clock_staleness.stats().mean()
          << "; per writer ssp<6> " << ssp.writer_staleness.stats().mean() << " essp<6> " << essp.writer_staleness.stats().mean());
  CHECK(essp.min_clock_staleness.stats().mean() < ssp.min_clock_staleness.stats().mean());
  CHECK(essp.writer_staleness.stats().mean() < ssp.writer_staleness.stats().mean());
  CHECK(essp.waited_reads <= ssp.waited_reads);
}

// ---- user-written policy and row type ----------------------------------------------------------

namespace {
/// A user's policy: SSP(1) with eager pushes, written against the concept only.
struct my_eager_ssp1 {
  using consistency_tag = void;
  static constexpr int staleness = 1;
  static constexpr strata::push_mode push = strata::push_mode::on_min_clock;
  static constexpr bool exact_snapshots = true;
  static constexpr double value_bound = std::numeric_limits<double>::infinity();
  static constexpr const char* name() noexcept { return "my_eager_ssp1"; }
};

/// A user's row type: a fixed pair of counters on std::array.
struct pair_row {
  using value_type = long;
  std::array<long, 2> v{};
  std::size_t w = 0;
  pair_row() = default;
  explicit pair_row(std::size_t width) : w(width) {}
  void inc(strata::col_id c, long d) { v.at(c) += d; }
  void add(const pair_row& o) {
    if (w == 0) w = o.w;
    v[0] += o.v[0];
    v[1] += o.v[1];
  }
  long get(strata::col_id c) const { return v.at(c); }
  std::size_t width() const noexcept { return w; }
  bool empty() const noexcept { return w == 0; }
  double magnitude() const noexcept { return static_cast<double>(std::abs(v[0]) + std::abs(v[1])); }
  void encode(strata::byte_writer& out) const { out.put(v); }
  static pair_row decode(strata::byte_reader& in, std::size_t width) {
    pair_row r(width);
    r.v = in.get<std::array<long, 2>>();
    return r;
  }
};
static_assert(strata::consistency_model<my_eager_ssp1>);
static_assert(strata::row_type<pair_row>);
static_assert(!strata::row_type<int>);
static_assert(!strata::consistency_model<int>);
}  // namespace

TEST_CASE("a user-written policy and row type compile and keep the invariants") {
  plan pl(4, 20, 5, 3);
  violations bad;
  run_plan<my_eager_ssp1>(pl, bad);
  INFO(bad.first);
  CHECK(bad.count == 0);

  strata::system<my_eager_ssp1> sys({.nodes = 2, .workers_per_node = 2});
  auto t = sys.add_table<pair_row>(2);
  sys.run([&](strata::worker& w) -> strata::task<> {
    for (int c = 0; c < 10; ++c) {
      const pair_row& r = co_await w.get(t, 0);
      CHECK(r.get(0) >= 4 * (c - 2 + 1));  // staleness 1: clocks <= c - 2 are in
      co_await w.inc(t, 0, 0, 1L);
      co_await w.inc(t, 0, 1, 2L);
      co_await w.clock();
    }
  });
  CHECK(sys.row(t, 0).get(0) == 40);
  CHECK(sys.row(t, 0).get(1) == 80);
}

TEST_CASE("sparse rows: increments that cancel leave no entry, batch inc_row") {
  strata::system<strata::essp<1>> sys({.nodes = 2, .workers_per_node = 2});
  auto t = sys.add_table<strata::sparse_row<int>>(1000);
  sys.run([&](strata::worker& w) -> strata::task<> {
    for (int c = 0; c < 6; ++c) {
      strata::sparse_row<int> d(1000);
      d.inc(static_cast<strata::col_id>(w.id() * 100 + c), 1);
      d.inc(999, 1);
      co_await w.inc_row(t, 7, std::move(d));
      co_await w.inc(t, 7, 500, c % 2 == 0 ? 1 : -1);  // +1 then -1: cancels every two clocks
      co_await w.clock();
    }
  });
  auto r = sys.row(t, 7);
  CHECK(r.get(999) == 24);
  CHECK(r.get(500) == 0);
  CHECK(r.nnz() == 1 + 4 * 6);
  CHECK(r.get(300 + 5) == 1);
}

namespace {
/// Three spawned coroutines per worker read and add to their own row 50 times each while the
/// program clocks 5 times: read-my-writes across the coroutines of one worker, nothing lost, the
/// model's staleness and value bounds, with or without random message delays.
template <class Model, class Transport = strata::inproc>
void check_spawned(typename Transport::config tc = {}) {
  strata::system<Model, Transport> sys({.nodes = 2, .workers_per_node = 2}, std::move(tc));
  auto t = sys.template add_table<counts>(4);
  const auto mp = sys.model();
  std::atomic<int> bad{0}, over_bound{0};
  sys.run([&](strata::worker& w) -> strata::task<> {
    auto helper = [&](strata::worker& wk, int k) -> strata::task<> {
      for (int i = 0; i < 50; ++i) {
        const counts& r = co_await wk.get(t, static_cast<strata::row_id>(k));
        if (r.get(wk.id()) < i) bad++;  // read-my-writes across coroutines of one worker
        co_await wk.inc(t, static_cast<strata::row_id>(k), wk.id(), 1L);
        if (wk.unacked_mass() > wk.mass_bound()) over_bound++;
      }
    };
    for (int k = 0; k < 3; ++k) w.spawn(helper(w, k));
    for (int c = 0; c < 5; ++c) {
      co_await w.inc(t, 3, w.id(), 2L);
      co_await w.clock();
    }
  });
  CHECK(bad == 0);
  CHECK(over_bound == 0);
  for (strata::row_id k = 0; k < 3; ++k)
    for (strata::col_id w = 0; w < 4; ++w) CHECK(sys.row(t, k).get(w) == 50);
  for (strata::col_id w = 0; w < 4; ++w) CHECK(sys.row(t, 3).get(w) == 10);
  const auto st = sys.total_stats();
  CHECK(st.reads == 4u * 3u * 50u);
  if (mp.staleness != strata::unbounded) {
    CHECK(st.min_clock_staleness.stats().max() <= mp.staleness);
    CHECK(st.writer_staleness.stats().max() <= mp.staleness);
  }
}
template <class Model>
void check_spawned_all() {
  check_spawned<Model>();
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    INFO("delayed transport, seed " << seed);
    check_spawned<Model, strata::delayed<strata::inproc>>(delays(seed));
  }
}
}  // namespace

TEST_CASE("several coroutines per worker thread share its cache and clock, nothing lost, under every model and random delays") {
  SUBCASE("bsp") { check_spawned_all<strata::bsp>(); }
  SUBCASE("ssp<1>") { check_spawned_all<strata::ssp<1>>(); }
  SUBCASE("essp<1>") { check_spawned_all<strata::essp<1>>(); }
  SUBCASE("vap<8.0>") { check_spawned_all<strata::vap<8.0>>(); }
  SUBCASE("async") { check_spawned_all<strata::async>(); }
}

// ---- policies beyond the five: the hooks of consistency_model ------------------------------------

namespace {
/// SSP(S) reads; the server pushes changed rows only when the minimum clock reaches a multiple of K.
template <int K, int S>
struct push_every {
  using consistency_tag = void;
  static constexpr int staleness = S;
  static constexpr strata::push_mode push = strata::push_mode::on_min_clock;
  static constexpr bool push_at(strata::clock_type m) { return m % K == 0; }
  static constexpr bool exact_snapshots = false;
  static constexpr double value_bound = std::numeric_limits<double>::infinity();
  static constexpr const char* name() noexcept { return "push_every"; }
};
/// A staleness bound per table: table 0 is read BSP-fresh (s = 0), the others with s = 3.
struct per_table {
  using consistency_tag = void;
  static constexpr int staleness = 3;  // the largest bound over tables
  static constexpr int staleness_of(strata::table_id t) { return t == 0 ? 0 : 3; }
  static constexpr strata::push_mode push = strata::push_mode::none;
  static constexpr bool exact_snapshots = false;
  static constexpr double value_bound = std::numeric_limits<double>::infinity();
  static constexpr const char* name() noexcept { return "per_table"; }
};
static_assert(strata::consistency_model<push_every<3, 2>> && strata::consistency_model<per_table>);
static_assert(strata::push_at<push_every<3, 2>>(6) && !strata::push_at<push_every<3, 2>>(7));
static_assert(strata::push_at<strata::essp<2>>(7) && !strata::push_at<strata::ssp<2>>(6));
static_assert(strata::staleness_of<per_table>(0) == 0 && strata::staleness_of<per_table>(1) == 3);

// Named options fold onto defaults, in any order.
using opt1 = strata::system<strata::options::transport<strata::delayed<strata::inproc>>, strata::options::consistency<strata::essp<2>>>;
static_assert(std::is_same_v<opt1::consistency, strata::essp<2>> && std::is_same_v<opt1::transport_type, strata::delayed<strata::inproc>>);
static_assert(std::is_same_v<strata::system<>::consistency, strata::bsp> && std::is_same_v<strata::system<>::transport_type, strata::inproc>);
static_assert(std::is_same_v<strata::system<strata::delayed<strata::inproc>, strata::async>::consistency, strata::async>);
static_assert(std::is_base_of_v<strata::basic_system<strata::inproc>, strata::system<strata::essp<1>>>);
}  // namespace

TEST_CASE("a push-every-k-clocks policy keeps SSP's bound, and its pushes come only at multiples of k") {
  for (std::uint64_t seed : {4u, 8u}) {
    plan pl(4, 25, 6, seed);
    violations bad;
    run_plan<push_every<3, 2>, strata::delayed<strata::inproc>>(pl, bad, delays(seed));
    run_plan<push_every<3, 2>>(pl, bad);
    INFO(bad.first);
    CHECK(bad.count == 0);
  }
  // A reader with a loose bound (s = 10) never asks again after its first read: whatever its cached
  // row reflects later came by push, so it is k*3 - 1 for some k.
  strata::system<push_every<3, 10>> sys({.nodes = 2, .workers_per_node = 2});
  auto t = sys.add_table<counts>(4);
  std::barrier<> lockstep(4);
  std::vector<strata::clock_type> seen;
  strata::clock_type first = -2;
  sys.run([&](strata::worker& w) -> strata::task<> {
    for (int c = 0; c < 30; ++c) {
      lockstep.arrive_and_wait();
      co_await w.inc(t, 0, w.id(), 1L);
      co_await w.clock();
      if (w.id() != 0) continue;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      co_await w.yield();  // take in pushes
      (void)co_await w.get(t, 0);
      const auto r = w.reflects(t, 0);
      if (first == -2) first = r;
      else seen.push_back(r);
    }
  });
  bool moved = false;
  for (auto r : seen) {
    CHECK(((r + 1) % 3 == 0 || r == first));
    moved = moved || r > first;
  }
  CHECK(moved);  // pushes did come
}

TEST_CASE("a per-table staleness policy bounds each table's reads by its own bound, nothing lost") {
  strata::system<per_table, strata::delayed<strata::inproc>> sys({.nodes = 2, .workers_per_node = 2}, delays(21));
  auto fresh = sys.add_table<counts>(4);
  auto loose = sys.add_table<counts>(4);
  std::atomic<int> bad_fresh{0}, bad_loose{0};
  std::atomic<long> loose_lag{0};
  sys.run([&](strata::worker& w) -> strata::task<> {
    for (int c = 0; c < 30; ++c) {
      const auto& a = co_await w.get(fresh, 0);
      for (strata::col_id k = 0; k < 4; ++k)
        if (k != w.id() && a.get(k) < c) bad_fresh++;  // every other worker's clocks < c are in
      const auto& b = co_await w.get(loose, 0);
      for (strata::col_id k = 0; k < 4; ++k) {
        if (k != w.id() && b.get(k) < c - 3) bad_loose++;  // clocks <= c - 4 are in
        if (k != w.id()) loose_lag = std::max<long>(loose_lag, c - b.get(k));
      }
      co_await w.inc(fresh, 0, w.id(), 1L);
      co_await w.inc(loose, 0, w.id(), 1L);
      co_await w.clock();
    }
  });
  CHECK(bad_fresh == 0);
  CHECK(bad_loose == 0);
  MESSAGE("largest lag seen on the loose table: " << loose_lag.load() << " clocks (bound 3)");
  for (strata::col_id k = 0; k < 4; ++k) {
    CHECK(sys.row(fresh, 0).get(k) == 30);
    CHECK(sys.row(loose, 0).get(k) == 30);
  }
}

TEST_CASE("model names with their staleness: essp2 is essp with s = 2, a malformed or unknown one is refused by name") {
  const auto a = strata::model_name::parse("essp2");
  CHECK(a.name == "essp");
  CHECK(a.staleness == 2);
  const auto b = strata::model_name::parse("bsp");
  CHECK(b.name == "bsp");
  CHECK(b.staleness == 0);
  CHECK(strata::model_name::parse("ssp12").staleness == 12);
  CHECK(strata::model_params::named(strata::model_name::parse("ssp3").name, {.staleness = 3}).staleness == 3);
  for (const char* bad : {"essp2x", "ssp99999999999", "s2sp"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(strata::model_name::parse(bad), doctest::Contains(bad), strata::error);
  }
  // An unknown name part is refused by that name, as model_params::named refuses it.
  CHECK_THROWS_WITH_AS(strata::model_name::parse("foo3"), doctest::Contains("unknown consistency model 'foo'"), strata::error);
}

TEST_CASE("model_params refuse a negative staleness bound and a value bound that is not > 0, with a sentence") {
  for (const char* m : {"ssp", "essp"}) {
    CAPTURE(m);
    CHECK_THROWS_WITH_AS(strata::model_params::named(m, {.staleness = -1}), doctest::Contains("staleness -1 (want >= 0)"), strata::error);
    CHECK(strata::model_params::named(m, {.staleness = 0}).staleness == 0);
  }
  CHECK_NOTHROW(strata::model_params::named("bsp", {.staleness = -1}));  // not used by bsp
  for (double v : {-1.0, 0.0, std::numeric_limits<double>::quiet_NaN()}) {
    CAPTURE(v);
    CHECK_THROWS_WITH_AS(strata::model_params::named("vap", {.value_bound = v}), doctest::Contains("(want > 0)"), strata::error);
  }
  CHECK(strata::model_params::named("vap", {.value_bound = 2.5}).value_bound == 2.5);
}

}  // namespace test_consistency_models
