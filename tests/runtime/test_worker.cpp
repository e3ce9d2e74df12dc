// The worker's guarantees under coroutines of its own: exact "nothing un-acknowledged" under VAP,
// no VAP deadlock between spawned coroutines, a read's guarantee holding for the clock at which it
// returns, column checks, increments that are not awaited, and the clock a cached row reflects.
// Each hang this file once reproduced is run under a deadline that fails the test instead of
// stalling the suite.
#include <doctest/doctest.h>

#include <strata/runtime/detail/party_access.hpp>
#include <strata/runtime/server.hpp>
#include <strata/strata.hpp>

#include "../support/deadline.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_runtime_worker {

/// The runtime side of a worker and of a server shard, which these tests drive by hand.
using runtime_side = strata::detail::party_access;

namespace {

using strata_test::within;

using drow = strata::dense_row<double>;

/// Hands `shard` worker `from`'s flush number `seq`, of clock `tag`, with one-column increments to
/// rows of table 0 (a dense_row<float> table of width 1).
void flush_into(strata::server_shard& shard, const strata::worker_map& wm, strata::worker_id from, std::uint64_t seq,
                strata::clock_type tag, const std::vector<std::pair<strata::row_id, float>>& incs) {
  strata::wire::flush f;
  f.from = from;
  f.seq = seq;
  f.tag = tag;
  f.new_clock = tag + 1;
  f.count = static_cast<std::uint32_t>(incs.size());
  strata::byte_writer out(f.payload.bytes);
  for (auto [r, v] : incs) {
    out.put(strata::table_id{0});
    out.put(r);
    strata::dense_row<float> d(1);
    d.inc(0, v);
    d.encode(out);
  }
  runtime_side::on_message(shard, wm.of(from), strata::wire::message{std::move(f)});
}

}  // namespace

TEST_CASE("vap: floating-point residue never blocks an increment larger than V/P (issue: hang after 0.1+0.2+0.3)") {
  within(std::chrono::seconds(60), "vap residue", [] {
    strata::system<strata::vap<2.0>> sys({.nodes = 2, .workers_per_node = 1});
    auto t = sys.add_table<drow>(1);
    REQUIRE(strata::owner_of(t.id, 0, 2) != strata::owner_of(t.id, 1, 2));  // two shards involved
    double mass_when_acked = -1;
    bool big_applied = false;
    sys.run([&](strata::worker& w) -> strata::task<> {
      if (w.id() != 0) co_return;
      co_await w.inc(t, 0, 0, 0.1);
      co_await w.inc(t, 1, 0, 0.2);
      co_await w.inc(t, 0, 0, 0.3);
      co_await w.clock();
      while (w.unacked_increments() > 0) co_await w.yield();
      mass_when_acked = w.unacked_mass();
      co_await w.inc(t, 0, 0, 1.5);  // larger than V/P = 1: must be sent alone, not wait forever
      big_applied = true;
      co_await w.clock();
    });
    CHECK(mass_when_acked == 0.0);  // exact, not 5.55e-17
    CHECK(big_applied);
    CHECK(sys.row(t, 0).get(0) == doctest::Approx(1.9));
    CHECK(sys.row(t, 1).get(0) == doctest::Approx(0.2));
  });
}

TEST_CASE("vap: negative amounts leave no residue either") {
  within(std::chrono::seconds(60), "vap negative residue", [] {
    strata::system<strata::vap<2.0>> sys({.nodes = 2, .workers_per_node = 1});
    auto t = sys.add_table<drow>(1);
    double mass_when_acked = -1;
    sys.run([&](strata::worker& w) -> strata::task<> {
      if (w.id() != 0) co_return;
      for (double v : {-0.1, -0.7, 0.3, -0.2, 0.1}) co_await w.inc(t, static_cast<strata::row_id>(v < 0), 0, v);
      co_await w.clock();
      while (w.unacked_increments() > 0) co_await w.yield();
      mass_when_acked = w.unacked_mass();
      co_await w.inc(t, 0, 0, -1.5);
      co_await w.clock();
    });
    CHECK(mass_when_acked == 0.0);
    CHECK(sys.row(t, 0).get(0) == doctest::Approx(0.3 + 0.1 - 1.5));
    CHECK(sys.row(t, 1).get(0) == doctest::Approx(-1.0));
  });
}

namespace {
strata::task<> two_incs(strata::worker& w, strata::table_handle<drow> t, bool& done) {
  co_await w.inc(t, 0, 0, 1.0);
  co_await w.yield();
  co_await w.inc(t, 0, 0, 1.0);
  done = true;
}
}  // namespace

TEST_CASE("vap: spawned coroutines waiting in inc never deadlock on an increment that sits at the bound") {
  within(std::chrono::seconds(60), "vap spawned coroutines", [] {
    strata::system<strata::vap<1.0>> sys({.nodes = 1, .workers_per_node = 1});
    auto t = sys.add_table<drow>(1);
    bool a = false, b = false;
    double max_mass = 0;
    sys.run([&](strata::worker& w) -> strata::task<> {
      w.spawn(two_incs(w, t, a));
      w.spawn(two_incs(w, t, b));
      co_return;
    });
    max_mass = sys.total_stats().max_unacked_mass;
    CHECK(a);
    CHECK(b);
    CHECK(sys.row(t, 0).get(0) == 4.0);
    CHECK(max_mass <= 1.0);  // every increment fitted V/P = 1 before it was applied
  });
}

namespace {
struct reader_result {
  strata::clock_type issued = -1, returned = -1;
  double other = -1;
};
strata::task<> read_once(strata::worker& w, strata::table_handle<drow> t, reader_result& out) {
  out.issued = w.current_clock();
  const drow& row = co_await w.get(t, 0);
  out.returned = w.current_clock();
  out.other = row.get(1);
}
}  // namespace

TEST_CASE("a read returns what its model needs at the clock at which it returns, also when a sibling coroutine clocks") {
  within(std::chrono::seconds(60), "read across sibling clocks", [] {
    strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 2});
    auto t = sys.add_table<drow>(2);
    reader_result rr;
    constexpr int other_clocks = 9;
    std::atomic<bool> go{false};
    sys.run([&](strata::worker& w) -> strata::task<> {
      if (w.id() == 1) {
        // The other worker is late for clock 0 (until worker 0 is at clock 6), then adds 1 to
        // column 1 at every clock.
        while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        for (int c = 0; c < other_clocks; ++c) {
          co_await w.inc(t, 0, 1, 1.0);
          co_await w.clock();
        }
        co_return;
      }
      co_await w.clock();              // clock 1: the read needs the other worker's clock 0
      w.spawn(read_once(w, t, rr));    // waits: the other worker has not flushed clock 0 yet
      for (int c = 0; c < 5; ++c) co_await w.clock();  // meanwhile this worker moves on to clock 6
      go = true;
    });
    CHECK(rr.issued == 1);
    CHECK(rr.returned == 6);
    // BSP at clock 6: exactly the other worker's increments of clocks 0..5.
    CHECK(rr.other == static_cast<double>(rr.returned));
    CHECK(sys.stats()[0].min_clock_staleness.stats().max() == 0);
    CHECK(sys.row(t, 0).get(1) == other_clocks);
  });
}

TEST_CASE("ssp: a read that outlives a sibling's clocks still meets the bound at its return clock") {
  within(std::chrono::seconds(60), "ssp read across sibling clocks", [] {
    strata::system<strata::ssp<1>> sys({.nodes = 1, .workers_per_node = 2});
    auto t = sys.add_table<drow>(2);
    reader_result rr;
    std::atomic<bool> go{false};
    sys.run([&](strata::worker& w) -> strata::task<> {
      if (w.id() == 1) {
        while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        for (int c = 0; c < 10; ++c) {
          co_await w.inc(t, 0, 1, 1.0);
          co_await w.clock();
        }
        co_return;
      }
      co_await w.clock();
      co_await w.clock();              // clock 2: needs the other worker's clock 0
      w.spawn(read_once(w, t, rr));
      for (int c = 0; c < 4; ++c) co_await w.clock();  // to clock 6
      go = true;
    });
    REQUIRE(rr.returned == 6);
    CHECK(rr.other >= static_cast<double>(rr.returned - 1));  // holds clocks <= 6 - 1 - 1
    CHECK(sys.stats()[0].min_clock_staleness.stats().max() <= 1);
  });
}

TEST_CASE("columns are checked: rows, worker::inc and inc_row name table, row, column and width") {
  strata::dense_row<float> d(4);
  CHECK_THROWS_WITH_AS(d.inc(4, 1.0f), doctest::Contains("column 4 is outside a row of width 4"), strata::error);
  CHECK_THROWS_AS((void)d.get(9), strata::error);
  strata::sparse_row<int> s(3);
  CHECK_THROWS_AS(s.inc(3, 1), strata::error);
  CHECK_THROWS_AS((void)s.get(3), strata::error);
  s.inc(2, 5);
  CHECK(s.get(2) == 5);

  strata::system<strata::ssp<0>> sys({.nodes = 2, .workers_per_node = 1});
  auto dt = sys.add_table<strata::dense_row<float>>(4);
  auto st = sys.add_table<strata::sparse_row<int>>(3);
  std::vector<std::string> errors;
  sys.run([&](strata::worker& w) -> strata::task<> {
    if (w.id() != 0) co_return;
    co_await w.inc(dt, 5, 1, 1.0f);
    co_await w.inc(st, 5, 2, 1);
    try {
      co_await w.inc(dt, 5, 4, 1.0f);
    } catch (const strata::error& e) {
      errors.push_back(e.what());
    }
    try {
      co_await w.inc(st, 6, 7, 1);
    } catch (const strata::error& e) {
      errors.push_back(e.what());
    }
    try {
      co_await w.inc_row(dt, 5, strata::dense_row<float>(8));
    } catch (const strata::error& e) {
      errors.push_back(e.what());
    }
    co_await w.clock();
  });
  REQUIRE(errors.size() == 3);
  CHECK(errors[0].find("column 4 of row 5 in table 0 is outside its width 4") != std::string::npos);
  CHECK(errors[1].find("column 7 of row 6 in table 1 is outside its width 3") != std::string::npos);
  CHECK(errors[2].find("width 8") != std::string::npos);
  // The good increments went through; the bad ones touched nothing.
  CHECK(sys.row(dt, 5).get(1) == 1.0f);
  CHECK(sys.row(st, 5).get(2) == 1);
  CHECK(sys.row(st, 6).nnz() == 0);
}

TEST_CASE("a flush carrying an out-of-range column is rejected whole by the shard: nothing applied") {
  using srow = strata::sparse_row<int>;
  std::vector<std::unique_ptr<strata::server_table_base>> tabs;
  tabs.push_back(std::make_unique<strata::server_table<srow>>(3));
  strata::worker_map wm{1, 1};
  std::vector<strata::wire::message> sent;
  strata::server_shard shard(0, wm, strata::model_params::of<strata::ssp<0>>({}), std::move(tabs),
                             [&](strata::endpoint, strata::wire::message&& m) { sent.push_back(std::move(m)); });
  strata::wire::flush f;
  f.from = 0;
  f.seq = 1;
  f.tag = 0;
  f.new_clock = 1;
  f.count = 2;
  strata::byte_writer out(f.payload.bytes);
  // Row 1: a good delta (column 1 += 4).
  out.put(strata::table_id{0});
  out.put(strata::row_id{1});
  srow good(3);
  good.inc(1, 4);
  good.encode(out);
  // Row 2: one entry at column 5 of a width-3 row, hand-encoded as a faulty peer would.
  out.put(strata::table_id{0});
  out.put(strata::row_id{2});
  out.put(std::uint32_t{1});
  out.put(strata::col_id{5});
  out.put(int{1});
  CHECK_THROWS_WITH_AS(runtime_side::on_message(shard, {0, 1}, strata::wire::message{std::move(f)}),
                       doctest::Contains("table 0, row 2 rejected, nothing applied"), strata::error);
  auto& t = static_cast<strata::server_table<srow>&>(shard.table(0));
  CHECK(t.row(1).nnz() == 0);  // the good row of the same flush was not applied either
  CHECK(sent.empty());         // and nothing was acknowledged
}

TEST_CASE("a NaN or inf increment rejects its whole flush at the shard, naming table and row: nothing poisoned") {
  auto shard_with = [](auto row_tag, std::vector<strata::wire::message>& sent) {
    using R = decltype(row_tag);
    std::vector<std::unique_ptr<strata::server_table_base>> tabs;
    tabs.push_back(std::make_unique<strata::server_table<R>>(3));
    tabs.push_back(std::make_unique<strata::server_table<R>>(3));
    return strata::server_shard(0, strata::worker_map{1, 1}, strata::model_params::of<strata::ssp<0>>({}), std::move(tabs),
                                [&sent](strata::endpoint, strata::wire::message&& m) { sent.push_back(std::move(m)); });
  };
  auto flush_of = [](auto good, auto bad) {
    strata::wire::flush f;
    f.from = 0;
    f.seq = 1;
    f.tag = 0;
    f.new_clock = 1;
    f.count = 2;
    strata::byte_writer out(f.payload.bytes);
    out.put(strata::table_id{0});
    out.put(strata::row_id{1});
    good.encode(out);
    out.put(strata::table_id{1});
    out.put(strata::row_id{7});
    bad.encode(out);
    return strata::wire::message{std::move(f)};
  };
  {
    using drow = strata::dense_row<float>;
    std::vector<strata::wire::message> sent;
    auto shard = shard_with(drow{}, sent);
    drow good(3), bad(3);
    good.inc(0, 2.0f);
    bad.inc(2, std::numeric_limits<float>::quiet_NaN());
    CHECK_THROWS_WITH_AS(runtime_side::on_message(shard, {0, 1}, flush_of(good, bad)),
                         doctest::Contains("table 1, row 7 rejected, nothing applied: non-finite value nan in column 2"), strata::error);
    CHECK(static_cast<strata::server_table<drow>&>(shard.table(0)).row(1).get(0) == 0.0f);  // the good row waits too
    CHECK(sent.empty());
  }
  {
    using srow = strata::sparse_row<double>;
    std::vector<strata::wire::message> sent;
    auto shard = shard_with(srow{}, sent);
    srow good(3), bad(3);
    good.inc(1, 1.0);
    bad.inc(1, -std::numeric_limits<double>::infinity());
    CHECK_THROWS_WITH_AS(runtime_side::on_message(shard, {0, 1}, flush_of(good, bad)),
                         doctest::Contains("table 1, row 7 rejected, nothing applied: non-finite value -inf in column 1"), strata::error);
    CHECK(static_cast<strata::server_table<srow>&>(shard.table(0)).row(1).nnz() == 0);
  }
  {  // integer rows have no NaN: checked as before, applied
    using irow = strata::dense_row<int>;
    std::vector<strata::wire::message> sent;
    auto shard = shard_with(irow{}, sent);
    irow a(3), b(3);
    a.inc(0, 1);
    b.inc(2, -5);
    runtime_side::on_message(shard, {0, 1}, flush_of(a, b));
    CHECK(static_cast<strata::server_table<irow>&>(shard.table(1)).row(7).get(2) == -5);
  }
}

TEST_CASE("essp: a push leaves out, per subscriber, the rows only that subscriber wrote since their last push") {
  // One shard, two workers, both subscribed to rows 0..2 of a width-1 table.
  using frow = strata::dense_row<float>;
  std::vector<std::unique_ptr<strata::server_table_base>> tabs;
  tabs.push_back(std::make_unique<strata::server_table<frow>>(1));
  const strata::worker_map wm{1, 2};
  std::vector<std::pair<strata::endpoint, strata::wire::rows>> pushes;
  strata::server_shard shard(0, wm, strata::model_params::of<strata::essp<1>>({}), std::move(tabs),
                             [&](strata::endpoint to, strata::wire::message&& m) {
                               if (auto* r = std::get_if<strata::wire::rows>(&m); r && r->push) pushes.emplace_back(to, std::move(*r));
                             });
  for (strata::worker_id w = 0; w < 2; ++w)
    for (strata::row_id r = 0; r < 3; ++r)
      runtime_side::on_message(shard, wm.of(w), strata::wire::message{strata::wire::row_request{w, 0, {r}, strata::no_clock, true}});
  std::uint64_t seq[2] = {0, 0};
  auto flush = [&](strata::worker_id from, strata::clock_type tag, std::vector<std::pair<strata::row_id, float>> incs) {
    flush_into(shard, wm, from, ++seq[from], tag, incs);
  };
  // The rows (and values) each worker was pushed at the last advance.
  auto pushed_to = [&](strata::worker_id w) {
    std::map<strata::row_id, float> got;
    int messages = 0;
    for (auto& [to, m] : pushes) {
      if (!(to == wm.of(w))) continue;
      ++messages;
      strata::byte_reader in(m.payload.bytes);
      for (std::uint32_t i = 0; i < m.count; ++i) {
        CHECK(in.get<strata::table_id>() == 0);
        const auto r = in.get<strata::row_id>();
        got[r] = frow::decode(in, 1).get(0);
      }
    }
    CHECK(messages == 1);  // every subscriber still gets the push, and with it the new clock
    return got;
  };
  // Clock 0: worker 0 writes rows 0 and 2, worker 1 rows 1 and 2.
  flush(0, 0, {{0, 1.0f}, {2, 10.0f}});
  CHECK(pushes.empty());  // ESSP pushes when the minimum clock moves, not before
  flush(1, 0, {{1, 2.0f}, {2, 20.0f}});
  CHECK(pushed_to(0) == std::map<strata::row_id, float>{{1, 2.0f}, {2, 30.0f}});
  CHECK(pushed_to(1) == std::map<strata::row_id, float>{{0, 1.0f}, {2, 30.0f}});
  // Clock 1: worker 0 alone writes row 1 (worker 1's row until now) and row 0 again.
  pushes.clear();
  flush(0, 1, {{0, 4.0f}, {1, 8.0f}});
  flush(1, 1, {});
  CHECK(pushed_to(0).empty());
  CHECK(pushed_to(1) == std::map<strata::row_id, float>{{0, 5.0f}, {1, 10.0f}});
}

TEST_CASE("bsp: a batched row request gets one reply, and the reads parked at a barrier one reply per worker") {
  using frow = strata::dense_row<float>;
  std::vector<std::unique_ptr<strata::server_table_base>> tabs;
  tabs.push_back(std::make_unique<strata::server_table<frow>>(1));
  const strata::worker_map wm{1, 2};
  std::vector<std::pair<strata::endpoint, strata::wire::rows>> replies;
  strata::server_shard shard(0, wm, strata::model_params::of<strata::bsp>({}), std::move(tabs),
                             [&](strata::endpoint to, strata::wire::message&& m) {
                               if (auto* r = std::get_if<strata::wire::rows>(&m); r && r->count > 0) replies.emplace_back(to, std::move(*r));
                             });
  auto request = [&](strata::worker_id w, std::vector<strata::row_id> rows, strata::clock_type need) {
    runtime_side::on_message(shard, wm.of(w), strata::wire::message{strata::wire::row_request{w, 0, std::move(rows), need, false}});
  };
  std::uint64_t seq[2] = {0, 0};
  auto flush = [&](strata::worker_id from, strata::clock_type tag, std::vector<std::pair<strata::row_id, float>> incs) {
    flush_into(shard, wm, from, ++seq[from], tag, incs);
  };
  // Each reply as (row, value) in the order carried, with the clock it reflects.
  auto rows_of = [](const strata::wire::rows& m) {
    std::vector<std::pair<strata::row_id, float>> got;
    strata::byte_reader in(m.payload.bytes);
    for (std::uint32_t i = 0; i < m.count; ++i) {
      CHECK(in.get<strata::table_id>() == 0);
      const auto r = in.get<strata::row_id>();
      got.emplace_back(r, frow::decode(in, 1).get(0));
    }
    CHECK(in.done());
    return got;
  };
  using got_t = std::vector<std::pair<strata::row_id, float>>;
  // Served at once: three rows, one reply, in the order asked.
  request(0, {2, 0, 7}, strata::no_clock);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].first == wm.of(0));
  CHECK(rows_of(replies[0].second) == got_t{{2, 0.0f}, {0, 0.0f}, {7, 0.0f}});
  replies.clear();
  // Clock 0: worker 0 clocks and asks, in two requests, for rows that need clock 0 complete:
  // parked until worker 1 clocks too. Then one reply carries all of them, with both workers' updates.
  flush(0, 0, {{0, 1.0f}, {2, 10.0f}});
  request(0, {0, 2}, 0);
  request(0, {5}, 0);
  CHECK(replies.empty());
  flush(1, 0, {{2, 20.0f}, {5, 3.0f}});
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].first == wm.of(0));
  CHECK(replies[0].second.reflects == 0);
  CHECK(rows_of(replies[0].second) == got_t{{0, 1.0f}, {2, 30.0f}, {5, 3.0f}});
  replies.clear();
  // A request that names no row is a bad frame, and loses nothing: the shard goes on serving.
  CHECK_THROWS_WITH_AS(request(1, {}, 0), doctest::Contains("names 0 rows"), strata::error);
  request(1, {5}, 0);
  REQUIRE(replies.size() == 1);
  CHECK(rows_of(replies[0].second) == got_t{{5, 3.0f}});
}

TEST_CASE("bsp: at a barrier a worker with a parked read gets one message, the reply carrying its acknowledgement") {
  using frow = strata::dense_row<float>;
  std::vector<std::unique_ptr<strata::server_table_base>> tabs;
  tabs.push_back(std::make_unique<strata::server_table<frow>>(1));
  const strata::worker_map wm{1, 3};
  std::vector<std::pair<strata::endpoint, strata::wire::rows>> sent;
  strata::server_shard shard(0, wm, strata::model_params::of<strata::bsp>({}), std::move(tabs),
                             [&](strata::endpoint to, strata::wire::message&& m) {
                               REQUIRE(std::holds_alternative<strata::wire::rows>(m));
                               sent.emplace_back(to, std::get<strata::wire::rows>(std::move(m)));
                             });
  std::uint64_t seq[3] = {0, 0, 0};
  auto flush = [&](strata::worker_id from, strata::clock_type tag, std::vector<std::pair<strata::row_id, float>> incs) {
    flush_into(shard, wm, from, ++seq[from], tag, incs);
  };
  auto request = [&](strata::worker_id w, strata::row_id r, strata::clock_type need) {
    runtime_side::on_message(shard, wm.of(w), strata::wire::message{strata::wire::row_request{w, 0, {r}, need, false}});
  };
  // What worker w was sent: (rows carried, acked_seq, reflects) per message.
  auto to = [&](strata::worker_id w) {
    std::vector<std::tuple<std::uint32_t, std::uint64_t, strata::clock_type>> got;
    for (auto& [e, m] : sent)
      if (e == wm.of(w)) got.emplace_back(m.count, m.acked_seq, m.reflects);
    return got;
  };
  using msgs = std::vector<std::tuple<std::uint32_t, std::uint64_t, strata::clock_type>>;
  // Clock 0: workers 0 and 1 clock and park a read; worker 2 clocks without reading.
  flush(0, 0, {{0, 1.0f}});
  request(0, 0, 0);
  flush(1, 0, {{1, 2.0f}});
  request(1, 1, 0);
  CHECK(sent.empty());
  flush(2, 0, {{0, 4.0f}});
  CHECK(to(0) == msgs{{1, 1, 0}});  // the row, and with it the acknowledgement of flush 1
  CHECK(to(1) == msgs{{1, 1, 0}});
  CHECK(to(2) == msgs{{0, 1, 0}});  // a bare acknowledgement
  CHECK(sent.size() == 3);
  sent.clear();
  // Clock 1: worker 2's read asks for a clock not complete yet: it stays parked, and worker 2 gets
  // its acknowledgement alone; worker 0's read is served with its acknowledgement.
  flush(0, 1, {{0, 1.0f}});
  request(0, 0, 1);
  flush(1, 1, {});
  request(2, 0, 2);
  flush(2, 1, {});
  CHECK(to(0) == msgs{{1, 2, 1}});
  CHECK(to(1) == msgs{{0, 2, 1}});
  CHECK(to(2) == msgs{{0, 2, 1}});
  CHECK(sent.size() == 3);
  auto served = std::find_if(sent.begin(), sent.end(), [&](const auto& e) { return e.first == wm.of(0); });
  REQUIRE(served != sent.end());
  strata::byte_reader in(served->second.payload.bytes);
  CHECK(in.get<strata::table_id>() == 0);
  CHECK(in.get<strata::row_id>() == 0);
  CHECK(frow::decode(in, 1).get(0) == 6.0f);  // both clocks of both writers of row 0
  sent.clear();
  flush(0, 2, {});
  flush(1, 2, {});
  flush(2, 2, {});
  CHECK(to(2) == msgs{{1, 3, 2}});  // the parked read, served once clock 2 is complete
}

TEST_CASE("a batched reply is split into messages of about 4 MiB, every row once, in the order asked") {
  using frow = strata::dense_row<float>;
  constexpr std::size_t width = 300'000;  // 1.2 MB a row: a message closes at its 4th row (4.8 MB), so 8 make two
  std::vector<std::unique_ptr<strata::server_table_base>> tabs;
  tabs.push_back(std::make_unique<strata::server_table<frow>>(width));
  const strata::worker_map wm{1, 1};
  std::vector<strata::wire::rows> replies;
  strata::server_shard shard(0, wm, strata::model_params::of<strata::ssp<1>>({}), std::move(tabs),
                             [&](strata::endpoint, strata::wire::message&& m) {
                               if (auto* r = std::get_if<strata::wire::rows>(&m)) replies.push_back(std::move(*r));
                             });
  std::vector<strata::row_id> rows;
  for (strata::row_id r = 0; r < 8; ++r) rows.push_back(7 - r);
  runtime_side::on_message(shard, wm.of(0), strata::wire::message{strata::wire::row_request{0, 0, rows, strata::no_clock, false}});
  REQUIRE(replies.size() == 2);
  std::vector<strata::row_id> got;
  for (const auto& m : replies) {
    CHECK(m.payload.bytes.size() <= (std::size_t{4} << 20) + width * sizeof(float) + 12);
    strata::byte_reader in(m.payload.bytes);
    for (std::uint32_t i = 0; i < m.count; ++i) {
      CHECK(in.get<strata::table_id>() == 0);
      got.push_back(in.get<strata::row_id>());
      CHECK(frow::decode(in, width).width() == width);
    }
    CHECK(in.done());
  }
  CHECK(got == rows);
}

TEST_CASE("a batched prefetch sends one request per shard for the rows not fresh enough, and gets read what they would") {
  std::vector<std::pair<strata::endpoint, strata::wire::row_request>> sent;
  const strata::worker_map wm{2, 1};
  strata::worker w(0, wm, strata::model_params::of<strata::bsp>({}), [&](strata::endpoint to, strata::wire::message&& m) {
    if (auto* q = std::get_if<strata::wire::row_request>(&m)) sent.emplace_back(to, std::move(*q));
  });
  runtime_side::add_table<drow>(w, 0, 2);
  const strata::table_handle<drow> h{0, 2};
  const std::vector<strata::row_id> rows{0, 1, 2, 3, 4, 2};
  w.prefetch(h, rows);
  REQUIRE(sent.size() == 2);  // one per shard; the repeated row 2 asked once
  std::map<strata::node_id, std::vector<strata::row_id>> by_shard;
  for (auto& [to, q] : sent) {
    CHECK(q.from == 0);
    CHECK(q.table == 0);
    CHECK(to.slot == 0);
    by_shard[to.node] = q.rows;
  }
  CHECK(by_shard[0] == std::vector<strata::row_id>{0, 2, 4});
  CHECK(by_shard[1] == std::vector<strata::row_id>{1, 3});
  // Asked rows are not asked again, by a batch or by a single prefetch.
  sent.clear();
  w.prefetch(h, rows);
  w.prefetch(h, strata::row_id{3});
  CHECK(sent.empty());
  w.prefetch(h, strata::row_id{5});
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].second.rows == std::vector<strata::row_id>{5});
}

TEST_CASE("a NaN increment in a run ends it with an error naming table and row, not a poisoned table") {
  strata::system<strata::bsp> sys({.nodes = 2, .workers_per_node = 1});
  auto ok = sys.add_table<strata::dense_row<float>>(4);
  auto t = sys.add_table<strata::dense_row<float>>(4);
  std::string what;
  try {
    sys.run([&](strata::worker& w) -> strata::task<> {
      co_await w.inc(ok, 0, 1, 1.0f);
      co_await w.inc(t, 3, 2, w.id() == 1 ? std::numeric_limits<float>::quiet_NaN() : 1.0f);
      co_await w.clock();
      co_await w.clock();
    });
  } catch (const strata::error& e) {
    what = e.what();
  }
  CHECK(what.find("table 1, row 3 rejected, nothing applied: non-finite value nan in column 2") != std::string::npos);
}

TEST_CASE("an inc that is never awaited still lands (no lost update), under every model") {
  auto check = [](auto model_tag) {
    using M = decltype(model_tag);
    strata::system<M> sys({.nodes = 2, .workers_per_node = 2, .value_bound = 2.0});
    auto t = sys.template add_table<strata::dense_row<long>>(4);
    sys.run([&](strata::worker& w) -> strata::task<> {
      for (int c = 0; c < 5; ++c) {
        (void)w.inc(t, static_cast<strata::row_id>(c % 3), w.id(), 1L);  // the mistake: no co_await
        co_await w.clock();
      }
    });
    long total = 0;
    for (strata::row_id r = 0; r < 3; ++r)
      for (strata::col_id c = 0; c < 4; ++c) total += sys.row(t, r).get(c);
    CHECK(total == 4 * 5);
  };
  check(strata::bsp{});
  check(strata::ssp<1>{});
  check(strata::essp<1>{});
  check(strata::vap<-1.0>{});
  check(strata::async{});
}

TEST_CASE("worker::reflects tells the clock a cached row holds every update through") {
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 2});
  auto t = sys.add_table<drow>(2);
  std::vector<std::pair<strata::clock_type, strata::clock_type>> seen[2];  // (clock, reflects)
  sys.run([&](strata::worker& w) -> strata::task<> {
    CHECK(w.reflects(t, 0) == strata::no_clock);
    for (int c = 0; c < 4; ++c) {
      (void)co_await w.get(t, 0);
      seen[w.id()].emplace_back(w.current_clock(), w.reflects(t, 0));
      co_await w.inc(t, 0, w.id(), 1.0);
      co_await w.clock();
    }
  });
  for (auto& v : seen)
    for (auto [c, r] : v) CHECK(r == c - 1);  // BSP: exactly the previous clock
}

TEST_CASE("delta_row: a zeroed row of the table's width, reused once its flush is acknowledged, no update lost") {
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 1});
  auto t = sys.add_table<strata::dense_row<float>>(8);
  bool reused = false, zeroed = true;
  std::size_t spare_after_ack = 0, spare_after_take = 1;
  sys.run([&](strata::worker& w) -> strata::task<> {
    auto d = w.delta_row(t);
    REQUIRE(d.width() == 8);
    for (float x : d.span()) zeroed = zeroed && x == 0.0f;
    for (strata::col_id c = 0; c < 8; ++c) d.mutable_span()[c] = static_cast<float>(c + 1);
    const float* first = d.span().data();
    co_await w.inc_row(t, 3, std::move(d));
    co_await w.clock();
    (void)co_await w.get(t, 3);  // its reply acknowledges the flush
    spare_after_ack = w.spare_rows(t);
    auto e = w.delta_row(t);
    spare_after_take = w.spare_rows(t);
    reused = e.span().data() == first;
    for (float x : e.span()) zeroed = zeroed && x == 0.0f;  // the old delta's values are gone
    e.mutable_span()[0] = 10.0f;
    co_await w.inc_row(t, 3, std::move(e));
    co_await w.clock();
  });
  CHECK(zeroed);
  CHECK(spare_after_ack == 1);
  CHECK(reused);
  CHECK(spare_after_take == 0);
  const auto& row = sys.row(t, 3);
  CHECK(row.get(0) == 11.0f);
  for (strata::col_id c = 1; c < 8; ++c) CHECK(row.get(c) == static_cast<float>(c + 1));
}

TEST_CASE("delta_row of a sparse table: a recycled row keeps its entries' storage and none of its entries, no update lost") {
  using srow = strata::sparse_row<std::int32_t>;
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 1});
  auto t = sys.add_table<srow>(40);
  bool reused = false, emptied = false;
  std::size_t capacity = 0, spare_after_ack = 0;
  sys.run([&](strata::worker& w) -> strata::task<> {
    auto d = w.delta_row(t);
    REQUIRE(d.width() == 40);
    for (strata::col_id c = 0; c < 40; c += 4) d.inc(c, static_cast<std::int32_t>(c + 1));  // 10 entries
    const auto* first = d.entries().data();
    co_await w.inc_row(t, 5, std::move(d));
    co_await w.clock();
    (void)co_await w.get(t, 5);  // its reply acknowledges the flush
    spare_after_ack = w.spare_rows(t);
    auto e = w.delta_row(t);
    reused = e.entries().data() == first;
    capacity = e.entries().capacity();
    emptied = e.nnz() == 0 && e.width() == 40;
    e.inc(1, 7);
    e.inc(4, -5);  // cancels row 5's column 4
    co_await w.inc_row(t, 5, std::move(e));
    co_await w.clock();
    (void)co_await w.get(t, 5);
    // Per-column incs of a row new to the oplog: its entry is a kept node, zeroed.
    co_await w.inc(t, 6, 3, 2);
    co_await w.inc(t, 6, 3, 2);
    co_await w.clock();
  });
  CHECK(spare_after_ack == 1);
  CHECK(reused);
  CHECK(capacity >= 10);
  CHECK(emptied);
  const auto& row = sys.row(t, 5);
  for (strata::col_id c = 0; c < 40; ++c) {
    const std::int32_t want = (c % 4 == 0 && c != 4 ? static_cast<std::int32_t>(c + 1) : 0) + (c == 1 ? 7 : 0);
    CHECK(row.get(c) == want);
  }
  CHECK(row.nnz() == 10);
  CHECK(sys.row(t, 6).get(3) == 4);
  CHECK(sys.row(t, 6).nnz() == 1);
}

TEST_CASE("messages taken in inline resume no coroutine in the middle of a turn: a waiting read gets a wake instead") {
  // A shard in the worker's process hands the replies to the worker's own calls over inline
  // (begin_inline .. end_inline), in the middle of whatever coroutine made the call. A coroutine
  // that waits for such a message must not be resumed there, and must not be forgotten either.
  const strata::worker_map wm{1, 1};
  std::vector<strata::wire::row_request> sent;
  strata::worker w(0, wm, strata::model_params::of<strata::bsp>({}), [&](strata::endpoint, strata::wire::message&& m) {
    if (auto* q = std::get_if<strata::wire::row_request>(&m)) sent.push_back(std::move(*q));
  });
  std::vector<std::coroutine_handle<>> queued;
  runtime_side::set_reschedule(w, [&](std::coroutine_handle<> h) { queued.push_back(h); });
  runtime_side::add_table<drow>(w, 0, 2);
  const strata::table_handle<drow> h{0, 2};
  auto reply = [&](strata::row_id r, double v) {
    strata::wire::rows m;
    m.shard = 0;
    m.reflects = -1;
    m.count = 1;
    strata::byte_writer out(m.payload.bytes);
    out.put(strata::table_id{0});
    out.put(r);
    drow d(2);
    d.inc(1, v);
    d.encode(out);
    return strata::wire::message{std::move(m)};
  };
  double got = -1;
  auto reader = [&]() -> strata::task<> { got = (co_await w.get(h, 7)).get(1); };
  auto t = reader();
  bool done = false;
  t.start([&](std::exception_ptr e) { done = !e; });
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].rows == std::vector<strata::row_id>{7});
  CHECK_FALSE(done);

  runtime_side::begin_inline(w);
  runtime_side::on_message(w, wm.shard(0), reply(7, 3.5));
  CHECK_FALSE(done);        // not resumed inside the turn that took the reply in
  CHECK(runtime_side::end_inline(w));    // but someone may wait for it: the runtime schedules wake_now
  CHECK_FALSE(runtime_side::end_inline(w));
  runtime_side::wake_now(w);
  CHECK(done);
  CHECK(got == 3.5);
  CHECK(queued.empty());

  // With no coroutine waiting, an inline message asks for no wake.
  runtime_side::begin_inline(w);
  runtime_side::on_message(w, wm.shard(0), reply(9, 1.0));
  CHECK_FALSE(runtime_side::end_inline(w));
}

TEST_CASE("bsp: reads a shard of the same process answers inline see and count exactly what queued replies do") {
  // local_shard_calls on: a miss on a shard of this process is answered inside the worker's call
  // (no suspension). Off: every reply goes through the worker's queue. BSP reads are exact
  // snapshots, so values read, read counts, misses and staleness must be the same, bit for bit.
  struct outcome {
    std::vector<double> read_sums, rows;
    strata::worker_stats stats;
  };
  auto go = [](bool local, std::uint64_t seed) {
    strata::system_config cfg{.nodes = 2, .workers_per_node = 2};
    cfg.local_shard_calls = local;
    strata::system<strata::bsp> sys(cfg);
    auto t = sys.add_table<drow>(4);
    outcome o;
    o.read_sums.assign(4, 0.0);
    sys.run([&](strata::worker& w) -> strata::task<> {
      std::uint64_t x = seed * 1000003u + w.id() + 1;
      auto next = [&] { return x = x * 6364136223846793005ull + 1442695040888963407ull, x >> 33; };
      for (int c = 0; c < 30; ++c) {
        for (int k = 0; k < 5; ++k) {
          const auto r = static_cast<strata::row_id>(next() % 16);
          const auto& row = co_await w.get(t, r);
          for (strata::col_id j = 0; j < 4; ++j) o.read_sums[w.id()] += row.get(j) * (j + 1);
          co_await w.inc(t, r, static_cast<strata::col_id>(next() % 4), static_cast<double>(next() % 7) - 3.0);
        }
        co_await w.clock();
      }
    });
    for (strata::row_id r = 0; r < 16; ++r)
      for (strata::col_id j = 0; j < 4; ++j) o.rows.push_back(sys.row(t, r).get(j));
    o.stats = sys.total_stats();
    return o;
  };
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    CAPTURE(seed);
    outcome a, b;
    within(std::chrono::seconds(120), "inline and queued replies", [&] { a = go(true, seed), b = go(false, seed); });
    CHECK(a.rows == b.rows);
    CHECK(a.read_sums == b.read_sums);
    CHECK(a.stats.reads == b.stats.reads);
    CHECK(a.stats.reads == 4u * 30 * 5);
    CHECK(a.stats.waited_reads == b.stats.waited_reads);
    CHECK(a.stats.waited_reads > 0);
    CHECK(a.stats.min_clock_staleness.bins() == b.stats.min_clock_staleness.bins());
    CHECK(a.stats.writer_staleness.bins() == b.stats.writer_staleness.bins());
  }
}

TEST_CASE("bsp: a clock's float increments from several writers sum in writer order, whatever order they arrive in") {
  // 1e8f + 1 == 1e8f, so the three workers' increments (1e8, 1, -1e8) to one cell sum to 0 in
  // writer order and to 1 in some arrival orders (-1e8 first, or 1e8 then -1e8). Random sleeps
  // before each flush shuffle the arrival order; every BSP read must see 0, as a run with any other
  // interleaving would: the same bits run after run (issue 36 item 17). Shards on two nodes, so
  // flushes also cross the transport's queues.
  within(std::chrono::seconds(60), "writer-order sums", [] {
    for (const std::uint32_t nodes : {1u, 3u}) {
      strata::system<strata::bsp> sys({.nodes = nodes, .workers_per_node = 3 / nodes});
      auto t = sys.add_table<strata::dense_row<float>>(1);
      constexpr int clocks = 30;
      const float delta[3] = {1e8f, 1.0f, -1e8f};
      std::atomic<int> nonzero{0};
      sys.run([&](strata::worker& w) -> strata::task<> {
        std::mt19937 rng(17 + w.id());
        for (int c = 0; c < clocks; ++c) {
          const auto& row = co_await w.get(t, 5);
          if (row.get(0) != 0.0f) ++nonzero;
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % 400));
          co_await w.inc(t, 5, 0, delta[w.id()]);
          co_await w.clock();
        }
      });
      CAPTURE(nodes);
      CHECK(nonzero.load() == 0);
      CHECK(sys.row(t, 5).get(0) == 0.0f);
    }
  });
}

}  // namespace test_runtime_worker
