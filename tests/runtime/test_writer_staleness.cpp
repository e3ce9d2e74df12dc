// Per-writer staleness: what a read's row holds of every other worker's updates, recorded as
// (c - 1) - newest clock of that worker held, which goes negative when the row holds a writer's
// updates from the reader's clock or later (the figure the ESSP paper plots). The invariants under
// every model and random delays are in tests/consistency/test_models.cpp; these are exact cases.
#include <doctest/doctest.h>

#include <strata/strata.hpp>
#include <strata/transport/tcp.hpp>
#include <strata/wire/frame.hpp>

#include "../support/deadline.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_runtime_writer_staleness {

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
      co_await w.barrier();  // neither finishes before the other's last reads (a finished writer counts no more)
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

// ---- finished writers (issue 36 item 15) --------------------------------------------------------
//
// A worker whose program has returned writes nothing more: once a row holds all its updates, no
// read is stale with respect to it. The shard marks such a writer `finished_clock` in the writer
// clocks it sends, and reads leave it out of the per-writer figure (which otherwise grew by one per
// clock of the workers still running, past BSP's 0 and SSP/ESSP's s).

TEST_CASE("per-writer staleness: a finished writer is left out (bsp, one node, the issue's reproducer)") {
  within(std::chrono::seconds(60), "finished writer", [] {
    strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 2});
    auto t = sys.add_table<drow>(2);
    std::vector<hist> per_clock;  // worker 0's per-writer figures recorded at each clock
    std::vector<std::vector<strata::clock_type>> seen;
    sys.run([&](strata::worker& w) -> strata::task<> {
      if (w.id() == 1) {
        co_await w.inc(t, 0, 1, 1.0);
        co_await w.clock();
        co_return;  // finishes: its last flush carries tag 1
      }
      hist before;
      for (int c = 0; c < 6; ++c) {
        const drow& r = co_await w.get(t, 0);
        CHECK(r.get(1) == (c == 0 ? 0.0 : 1.0));
        seen.push_back(w.writer_clocks(t, 0));
        co_await w.clock();
        hist now = w.stats().writer_staleness.bins(), d;
        for (auto [k, n] : now)
          if (n > before[k]) d[k] = n - before[k];
        per_clock.push_back(d);
        before = now;
      }
    });
    const auto st = sys.stats()[0];
    CHECK(st.reads == 6);
    CHECK(st.min_clock_staleness.bins() == hist{{0, 6}});
    // Was 0, 0, 0, 1, 2, 3: worker 1's newest clock stayed 1 while worker 0 went on.
    REQUIRE(per_clock.size() == 6);
    CHECK(per_clock[0] == hist{{0, 1}});
    CHECK(per_clock[1] == hist{{0, 1}});
    for (int c = 2; c < 6; ++c) {
      INFO("clock " << c);
      CHECK(per_clock[static_cast<std::size_t>(c)] == hist{});  // its done flush folded: complete
      CHECK(seen[static_cast<std::size_t>(c)][1] == strata::finished_clock);
    }
    CHECK(seen[1][1] == 0);  // clock 1: its done flush (tag 1) is not folded yet, its clock 0 is
    CHECK(st.writer_staleness.bins() == hist{{0, 2}});
  });
}

namespace {

/// Ragged finishes: worker w of 4 (2 nodes x 2) runs clocks_of[w] clocks, reading every row of a
/// 6-row table and adding 1 to one of them at each. Checks that nothing is lost; returns the stats.
template <class Model, class Transport = strata::inproc>
strata::worker_stats ragged(const std::vector<int>& clocks_of, typename Transport::config tc = {}) {
  constexpr int rows = 6;
  strata::system<Model, Transport> sys({.nodes = 2, .workers_per_node = 2}, std::move(tc));
  auto t = sys.template add_table<strata::dense_row<long>>(4);
  sys.run([&](strata::worker& w) -> strata::task<> {
    const int self = static_cast<int>(w.id());
    for (int c = 0; c < clocks_of[static_cast<std::size_t>(self)]; ++c) {
      for (strata::row_id r = 0; r < rows; ++r) (void)co_await w.get(t, r);
      co_await w.inc(t, static_cast<strata::row_id>((c + self) % rows), static_cast<strata::col_id>(self), 1L);
      co_await w.clock();
    }
  });
  for (int r = 0; r < rows; ++r) {
    const auto row = sys.row(t, static_cast<strata::row_id>(r));
    for (int q = 0; q < 4; ++q) {
      long want = 0;
      for (int c = 0; c < clocks_of[static_cast<std::size_t>(q)]; ++c) want += (c + q) % rows == r;
      CHECK(row.get(static_cast<strata::col_id>(q)) == want);
    }
  }
  return sys.total_stats();
}

template <class Model>
void check_ragged_bounded(int s) {
  for (const auto& clocks_of : {std::vector<int>{2, 6, 11, 16}, std::vector<int>{16, 1, 9, 4}}) {
    const auto st = ragged<Model>(clocks_of);
    INFO("clocks " << clocks_of[0] << " " << clocks_of[1] << " " << clocks_of[2] << " " << clocks_of[3]);
    CHECK(st.reads == 6u * static_cast<std::uint64_t>(clocks_of[0] + clocks_of[1] + clocks_of[2] + clocks_of[3]));
    REQUIRE(st.writer_staleness.count() > 0);
    CHECK(st.writer_staleness.stats().max() <= s);
    CHECK(st.min_clock_staleness.stats().max() <= s);
    if (s == 0 && Model::exact_snapshots) CHECK(st.writer_staleness.stats().min() == 0);
    // The reads after a writer finished record no figure for it.
    CHECK(st.writer_staleness.count() < st.reads * 3);
  }
  // The same with random message delays (a straggling worker, delivery order shuffled across pairs).
  for (std::uint64_t seed : {1u, 2u}) {
    strata::delayed<strata::inproc>::config dc;
    dc.delay.latency = std::chrono::microseconds(100);
    dc.delay.jitter = std::chrono::microseconds(400);
    dc.delay.stragglers = {strata::endpoint{1, 2}};  // worker 3
    dc.delay.straggler_factor = 4;
    dc.delay.seed = seed;
    const auto st = ragged<Model, strata::delayed<strata::inproc>>({3, 12, 7, 10}, dc);
    INFO("delayed, seed " << seed);
    CHECK(st.writer_staleness.stats().max() <= s);
    if (s == 0 && Model::exact_snapshots) CHECK(st.writer_staleness.stats().min() == 0);
  }
}

}  // namespace

TEST_CASE("per-writer staleness: ragged finishes keep every bounded model's bound (bsp 0, ssp and essp s)") {
  within(std::chrono::seconds(120), "ragged finishes", [] {
    SUBCASE("bsp") { check_ragged_bounded<strata::bsp>(0); }
    SUBCASE("ssp<0>") { check_ragged_bounded<strata::ssp<0>>(0); }
    SUBCASE("ssp<1>") { check_ragged_bounded<strata::ssp<1>>(1); }
    SUBCASE("ssp<3>") { check_ragged_bounded<strata::ssp<3>>(3); }
    SUBCASE("essp<1>") { check_ragged_bounded<strata::essp<1>>(1); }
    SUBCASE("essp<3>") { check_ragged_bounded<strata::essp<3>>(3); }
  });
}

TEST_CASE("per-writer staleness: ragged finishes under vap and async lose nothing, one figure per read and running writer at most") {
  within(std::chrono::seconds(120), "ragged unbounded", [] {
    auto check = [](const strata::worker_stats& st) {
      CHECK(st.reads == 6u * (2 + 6 + 11 + 16));
      CHECK(st.writer_staleness.count() <= st.reads * 3);
      CHECK(st.writer_staleness.count() > 0);
    };
    SUBCASE("async") { check(ragged<strata::async>({2, 6, 11, 16})); }
    SUBCASE("vap") { check(ragged<strata::vap<4.0>>({2, 6, 11, 16})); }
  });
}

TEST_CASE("per-writer staleness: a finished writer's clock crosses the wire, in one byte") {
  namespace wire = strata::wire;
  const strata::endpoint src{0, 0}, dst{1, 1};
  wire::rows r;
  r.reflects = 7;
  const auto base = wire::encode_message(src, dst, r).size();
  r.writers = {7, strata::finished_clock, 7 + 63, 7 - 63, strata::no_clock, strata::finished_clock};
  const auto bytes = wire::encode_message(src, dst, r);
  CHECK(bytes.size() == base + 6);
  std::error_code ec;
  const auto back = std::get<wire::rows>(wire::decode_message(bytes, wire::default_max_frame, ec).second);
  REQUIRE_FALSE(ec);
  CHECK(back.writers == r.writers);
  r.writers = {7 - 64, 7 + 64, std::int64_t{1} << 50, -(std::int64_t{1} << 50)};  // longer varints still round-trip
  const auto again = std::get<wire::rows>(wire::decode_message(wire::encode_message(src, dst, r), wire::default_max_frame, ec).second);
  REQUIRE_FALSE(ec);
  CHECK(again.writers == r.writers);
}

namespace {

std::vector<std::uint16_t> loopback_ports(int n) {
  std::vector<int> fds;
  std::vector<std::uint16_t> ports;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ports.push_back(ntohs(a.sin_port));
    fds.push_back(fd);
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

/// Two processes' systems over TCP on loopback (one thread each, one worker each): worker 1 adds
/// once, clocks, waits for worker 0's clock-0 reads and returns; worker 0 reads 5 rows (both
/// shards') at each of 8 clocks. Returns
/// worker 0's statistics and the writer clocks of a row of the other node's shard at its last clock.
template <class Model>
std::pair<strata::worker_stats, std::vector<strata::clock_type>> over_tcp() {
  const auto ports = loopback_ports(2);
  strata::worker_stats st0;
  std::vector<strata::clock_type> remote;
  strata::row_id far = 0;
  while (strata::owner_of(0, far, 2) != 1) ++far;  // a row of node 1's shard (table 0)
  auto node = [&](strata::node_id rank) {
    strata::tcp::config c;
    c.rank = rank;
    c.peers = {{"127.0.0.1", ports[0]}, {"127.0.0.1", ports[1]}};
    c.connect_timeout = std::chrono::milliseconds(10000);
    c.peer_timeout = std::chrono::milliseconds(10000);
    strata::system<Model, strata::tcp> sys({.nodes = 2, .workers_per_node = 1}, c);
    auto t = sys.template add_table<drow>(2);
    sys.run([&](strata::worker& w) -> strata::task<> {
      if (w.id() == 1) {
        co_await w.inc(t, far, 1, 1.0);
        co_await w.clock();
        co_await w.barrier();  // worker 0's clock-0 reads come first: they count worker 1
        co_return;
      }
      for (int c = 0; c < 8; ++c) {
        for (strata::row_id r = 0; r < 4; ++r) (void)co_await w.get(t, r);
        const drow& f = co_await w.get(t, far);
        if (c >= 2) CHECK(f.get(1) == 1.0);
        remote = w.writer_clocks(t, far);
        if (c == 0) co_await w.barrier();
        co_await w.clock();
      }
    });
    if (rank == 0) st0 = sys.stats()[0];
  };
  std::thread one([&] { node(1); });
  node(0);
  one.join();
  return {st0, remote};
}

}  // namespace

TEST_CASE("per-writer staleness: a finished writer is left out across processes over TCP") {
  within(std::chrono::seconds(120), "finished writer over tcp", [] {
    auto check = [](int s, const strata::worker_stats& st, const std::vector<strata::clock_type>& remote) {
      CHECK(st.reads == 8u * 5);
      REQUIRE(st.writer_staleness.count() > 0);
      CHECK(st.writer_staleness.count() < st.reads);  // the late clocks' reads record nothing for worker 1
      CHECK(st.writer_staleness.stats().max() <= s);
      REQUIRE(remote.size() == 2);
      CHECK(remote[1] == strata::finished_clock);  // from node 1's shard, over the socket
    };
    SUBCASE("bsp") {
      auto [st, remote] = over_tcp<strata::bsp>();
      check(0, st, remote);
      CHECK(st.writer_staleness.stats().min() == 0);
    }
    SUBCASE("ssp<1>") { auto [st, remote] = over_tcp<strata::ssp<1>>(); check(1, st, remote); }
    SUBCASE("essp<1>") { auto [st, remote] = over_tcp<strata::essp<1>>(); check(1, st, remote); }
  });
}

}  // namespace test_runtime_writer_staleness
