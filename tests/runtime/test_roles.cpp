// Roles, app messages, collectives and repeated runs, on inproc and on delayed<inproc> with random
// delays (the TCP process versions live in tests/transport/test_tcp.cpp and ps_node --scenario runtime).
#include <doctest/doctest.h>

#include <strata/strata.hpp>

#include "../support/deadline.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <numeric>
#include <string>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_runtime_roles {

namespace {

using strata_test::within;

struct work_item {
  std::uint32_t round = 0;
  std::vector<int> vars;
  template <class Ar>
  void serialize(Ar& ar) { ar(round, vars); }
};
struct partial {
  std::uint32_t round = 0;
  double value = 0;
  template <class Ar>
  void serialize(Ar& ar) { ar(round, value); }
};
struct note {
  std::string text;
  template <class Ar>
  void serialize(Ar& ar) { ar(text); }
};

strata::delayed<strata::inproc>::config jitter(std::uint64_t seed) {
  strata::delayed<strata::inproc>::config c;
  c.delay.latency = std::chrono::microseconds(50);
  c.delay.jitter = std::chrono::microseconds(400);
  c.delay.seed = seed;
  return c;
}

/// A STRADS-shaped exchange: the coordinator sends each worker a round's work, the workers answer
/// with partials, the coordinator sums them; messages of two types interleave.
template <class Transport>
void coordinator_rounds(typename Transport::config tc) {
  strata::system<strata::bsp, Transport> sys({.nodes = 2, .workers_per_node = 2}, std::move(tc));
  constexpr std::uint32_t rounds = 20;
  std::vector<double> totals;
  std::vector<std::string> notes;
  sys.run(
      [&](strata::worker& w) -> strata::task<> {
        for (std::uint32_t r = 0; r < rounds; ++r) {
          auto msg = co_await w.receive<work_item>();
          CHECK(msg.from.is_coordinator());
          CHECK(msg.value.round == r);  // per-pair order
          double s = 0;
          for (int v : msg.value.vars) s += v * (w.id() + 1);
          w.send(strata::peer::coordinator(), partial{r, s});
        }
        w.send(strata::peer::coordinator(), note{"worker " + std::to_string(w.id()) + " done"});
      },
      [&](strata::coordinator& c) -> strata::task<> {
        CHECK(c.self().is_coordinator());
        for (std::uint32_t r = 0; r < rounds; ++r) {
          c.broadcast(work_item{r, {static_cast<int>(r), 1, 2}});
          double total = 0;
          for (std::uint32_t k = 0; k < c.num_workers(); ++k) {
            auto p = co_await c.receive<partial>();
            CHECK(p.from.is_worker());
            CHECK(p.value.round == r);
            total += p.value.value;
          }
          totals.push_back(total);
        }
        for (std::uint32_t k = 0; k < c.num_workers(); ++k) {
          auto n = co_await c.receive<note>();
          notes.push_back(n.value.text);
        }
      });
  REQUIRE(totals.size() == rounds);
  for (std::uint32_t r = 0; r < rounds; ++r) CHECK(totals[r] == doctest::Approx((r + 3.0) * (1 + 2 + 3 + 4)));
  CHECK(notes.size() == 4);
}

}  // namespace

TEST_CASE("coordinator and workers exchange typed app messages in order (inproc)") {
  within(std::chrono::seconds(60), "coordinator rounds inproc", [] { coordinator_rounds<strata::inproc>({}); });
}
TEST_CASE("coordinator and workers exchange typed app messages in order (delayed, random latency)") {
  within(std::chrono::seconds(60), "coordinator rounds delayed", [] { coordinator_rounds<strata::delayed<strata::inproc>>(jitter(3)); });
}

TEST_CASE("workers message each other, messages of another type wait for their own receive") {
  within(std::chrono::seconds(60), "worker to worker", [] {
    strata::system<strata::async> sys({.nodes = 2, .workers_per_node = 2});
    std::vector<int> got(4, -1);
    sys.run([&](strata::worker& w) -> strata::task<> {
      const auto next = strata::peer::worker((w.id() + 1) % 4);
      w.send(next, note{"hello"});
      w.send(next, partial{w.id(), 1.0 * w.id()});
      auto p = co_await w.receive<partial>();  // the note, sent first, stays queued
      CHECK(w.pending<note>() <= 1);
      auto n = co_await w.receive<note>();
      CHECK(n.value.text == "hello");
      CHECK(p.from == strata::peer::worker((w.id() + 3) % 4));
      got[w.id()] = static_cast<int>(p.value.round);
    });
    CHECK(got == std::vector<int>{3, 0, 1, 2});
  });
}

TEST_CASE("a message over the size limit is refused at send with a clear error, nothing else is lost") {
  within(std::chrono::seconds(60), "oversize", [] {
    strata::system<strata::ssp<1>> sys({.nodes = 1, .workers_per_node = 2, .max_message = 1024});
    std::string err;
    int received = 0;
    sys.run(
        [&](strata::worker& w) -> strata::task<> {
          if (w.id() == 0) {
            try {
              w.send(strata::peer::coordinator(), note{std::string(5000, 'x')});
            } catch (const strata::error& e) {
              err = e.what();
              CHECK(e.code() == strata::errc::frame_too_large);
            }
          }
          w.send(strata::peer::coordinator(), note{"small"});
          co_return;
        },
        [&](strata::coordinator& c) -> strata::task<> {
          for (int k = 0; k < 2; ++k) {
            auto n = co_await c.receive<note>();
            received += n.value.text == "small";
          }
        });
    CHECK(err.find("exceeds the limit of 1024 bytes; not sent") != std::string::npos);
    CHECK(err.find("to the coordinator") != std::string::npos);
    CHECK(received == 2);
  });
}

namespace {
struct as_int {  // the same wire name as `as_text`, another layout: a malformed message for it
  static constexpr const char* message_name = "test.payload";
  std::int64_t v = 0;
  template <class Ar>
  void serialize(Ar& ar) { ar(v); }
};
struct as_text {
  static constexpr const char* message_name = "test.payload";
  std::string s;
  template <class Ar>
  void serialize(Ar& ar) { ar(s); }
};
}  // namespace

TEST_CASE("a message that does not decode is a clear error at receive, naming type and sender, the next one is kept") {
  within(std::chrono::seconds(60), "malformed", [] {
    strata::system<strata::ssp<0>> sys({.nodes = 1, .workers_per_node = 1});
    std::string err;
    std::int64_t good = 0;
    sys.run(
        [&](strata::worker& w) -> strata::task<> {
          w.send(strata::peer::coordinator(), as_text{"not an int at all"});
          w.send(strata::peer::coordinator(), as_int{42});
          co_return;
        },
        [&](strata::coordinator& c) -> strata::task<> {
          try {
            (void)co_await c.receive<as_int>();
          } catch (const strata::error& e) {
            err = e.what();
          }
          auto g = co_await c.receive<as_int>();
          good = g.value.v;
        });
    CHECK(err.find("message test.payload from worker 0 does not decode") != std::string::npos);
    CHECK(good == 42);
  });
}

TEST_CASE("sending to a party that is not in the run names it") {
  strata::system<strata::ssp<0>> sys({.nodes = 1, .workers_per_node = 2});
  CHECK_THROWS_WITH(sys.run([&](strata::worker& w) -> strata::task<> {
    if (w.id() == 0) w.send(strata::peer::worker(7), note{"?"});
    co_return;
  }),
                    doctest::Contains("worker 7 is not part of this run (2 workers, 1 nodes)"));
}

namespace {
template <class Model, class Transport>
void collectives(typename Transport::config tc) {
  strata::system<Model, Transport> sys({.nodes = 3, .workers_per_node = 2, .value_bound = 8.0}, std::move(tc));
  auto t = sys.template add_table<strata::dense_row<long>>(6);
  std::vector<std::vector<long>> after_barrier(6);
  std::vector<double> reduced(6, 0);
  std::vector<std::vector<double>> vec(6);
  std::vector<std::vector<std::string>> gathered(6);
  // (GCC 12 rejects braced lists inside a coroutine: built out here.)
  const std::vector<strata::row_id> rows{0, 1, 2, 9};
  sys.run([&](strata::worker& w) -> strata::task<> {
    const auto me = w.id();
    for (int c = 0; c < 3; ++c) {
      co_await w.inc(t, static_cast<strata::row_id>(c), me, static_cast<long>(me + 1));
      co_await w.clock();
    }
    co_await w.inc(t, 9, me, 1L);  // not in a complete clock yet
    co_await w.clock();
    co_await w.barrier();
    // After the barrier every worker's increments before it are in every read.
    for (strata::row_id r : rows) {
      const auto& row = co_await w.get(t, r);
      long s = 0;
      for (strata::col_id k = 0; k < 6; ++k) s += row.get(k);
      after_barrier[me].push_back(s);
    }
    reduced[me] = co_await w.all_reduce(0.5 * me, strata::sum{});
    std::vector<double> mine(2, 1.0);
    mine[1] = me;
    vec[me] = co_await w.all_reduce(std::move(mine), strata::sum{});
    gathered[me] = co_await w.all_gather(std::string("w") + std::to_string(me));
  });
  for (std::uint32_t w = 0; w < 6; ++w) {
    CHECK(after_barrier[w] == std::vector<long>{21, 21, 21, 6});
    CHECK(reduced[w] == 7.5);
    CHECK(vec[w] == std::vector<double>{6.0, 15.0});
    CHECK(gathered[w] == std::vector<std::string>{"w0", "w1", "w2", "w3", "w4", "w5"});
  }
}
}  // namespace

TEST_CASE("barrier, all_reduce and all_gather across 3 nodes under every model (inproc)") {
  within(std::chrono::seconds(120), "collectives inproc", [] {
    collectives<strata::bsp, strata::inproc>({});
    collectives<strata::ssp<1>, strata::inproc>({});
    collectives<strata::essp<1>, strata::inproc>({});
    collectives<strata::vap<-1.0>, strata::inproc>({});
    collectives<strata::async, strata::inproc>({});
  });
}
TEST_CASE("barrier, all_reduce and all_gather under random message delays") {
  within(std::chrono::seconds(120), "collectives delayed", [] {
    collectives<strata::bsp, strata::delayed<strata::inproc>>(jitter(5));
    collectives<strata::essp<2>, strata::delayed<strata::inproc>>(jitter(6));
    collectives<strata::async, strata::delayed<strata::inproc>>(jitter(7));
  });
}

TEST_CASE("a worker that finishes while others wait in a collective is an error, not a hang") {
  within(std::chrono::seconds(60), "collective mismatch", [] {
    strata::system<strata::ssp<0>> sys({.nodes = 2, .workers_per_node = 1});
    CHECK_THROWS_WITH(sys.run([&](strata::worker& w) -> strata::task<> {
      if (w.id() == 1) co_return;
      co_await w.barrier();
    }),
                      doctest::Contains("every worker must call the same collectives"));
  });
}

TEST_CASE("repeated runs keep the tables (or clear them), restart clocks, and count statistics per run") {
  within(std::chrono::seconds(60), "repeated runs", [] {
    strata::system<strata::essp<1>, strata::delayed<strata::inproc>> sys({.nodes = 2, .workers_per_node = 2}, jitter(9));
    auto t = sys.add_table<strata::dense_row<long>>(4);
    auto program = [&](int clocks) {
      return [&, clocks](strata::worker& w) -> strata::task<> {
        CHECK(w.current_clock() == 0);
        for (int c = 0; c < clocks; ++c) {
          (void)co_await w.get(t, 0);
          co_await w.inc(t, 0, w.id(), 1L);
          co_await w.inc(t, 5, w.id(), 2L);
          co_await w.clock();
        }
      };
    };
    sys.run(program(5));
    const auto reads1 = sys.total_stats().reads;
    sys.run(program(3));
    CHECK(sys.total_stats().reads == 3 * 4);
    CHECK(reads1 == 5 * 4);
    for (strata::col_id k = 0; k < 4; ++k) {
      CHECK(sys.row(t, 0).get(k) == 8);
      CHECK(sys.row(t, 5).get(k) == 16);
    }
    sys.clear_tables();
    sys.run(program(2));
    for (strata::col_id k = 0; k < 4; ++k) CHECK(sys.row(t, 0).get(k) == 2);
    // Collectives and messages work in every run (their rounds restart).
    std::atomic<int> sum{0};
    for (int run = 0; run < 2; ++run)
      sys.run([&](strata::worker& w) -> strata::task<> {
        const int all = co_await w.all_reduce(1, strata::sum{});
        sum += all;
      });
    CHECK(sum == 2 * 4 * 4);
  });
}

}  // namespace test_runtime_roles
