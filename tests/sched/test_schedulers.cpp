// The STRADS schedulers (include/strata/sched/schedulers.hpp) and the round engine
// (sched/engine.hpp): what each scheduler promises, a user-written scheduler, and rounds on
// inproc and on delayed<inproc> with random delays: every round's result reaches every worker
// before its next push (depth 1), at most depth - 1 rounds late with pipelining.
#include <doctest/doctest.h>

#include <strata/sched/engine.hpp>
#include <strata/sched/schedulers.hpp>
#include <strata/strata.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_sched_schedulers {

namespace sc = strata::sched;

namespace {

template <class S>
std::vector<sc::plan> plans(S& s, std::uint32_t vars, std::uint32_t batch, std::uint32_t rounds, std::uint32_t workers = 1) {
  std::vector<sc::plan> out;
  sc::context cx;
  cx.vars = vars;
  cx.batch = batch;
  cx.workers = workers;
  for (std::uint32_t r = 0; r < rounds; ++r) {
    cx.round = r;
    sc::plan p;
    p.round = r;
    s.schedule(cx, p);
    out.push_back(std::move(p));
  }
  return out;
}

bool distinct_in_range(const sc::plan& p, std::uint32_t vars) {
  std::set<sc::var_id> s(p.vars.begin(), p.vars.end());
  return s.size() == p.vars.size() && (s.empty() || *s.rbegin() < vars);
}

/// A user-written scheduler: the even variables, then the odd ones.
struct evens_then_odds {
  using scheduler_tag = void;
  static constexpr const char* name() { return "evens_then_odds"; }
  sc::var_id next = 0;
  void schedule(const sc::context& cx, sc::plan& out) {
    for (std::uint32_t k = 0; k < cx.batch; ++k) {
      const std::uint32_t half = (cx.vars + 1) / 2;
      const std::uint32_t i = next++ % cx.vars;
      out.vars.push_back(i < half ? 2 * i : 2 * (i - half) + 1);
    }
  }
  void observe(std::span<const sc::var_delta>) {}
};
static_assert(sc::scheduler<evens_then_odds>);
struct not_a_scheduler {
  void schedule(const sc::context&, sc::plan&) {}
};
static_assert(!sc::scheduler<not_a_scheduler>);

}  // namespace

TEST_CASE("round_robin visits every variable once per ceil(vars/batch) rounds") {
  sc::round_robin s;
  const auto ps = plans(s, 10, 3, 8);
  std::vector<int> seen(10, 0);
  for (std::size_t r = 0; r < 4; ++r) {
    CHECK(distinct_in_range(ps[r], 10));
    for (auto v : ps[r].vars) ++seen[v];
  }
  CHECK(std::count(seen.begin(), seen.end(), 0) == 0);
  CHECK(ps[0].vars == std::vector<sc::var_id>{0, 1, 2});
  CHECK(ps[3].vars == std::vector<sc::var_id>{9, 0, 1});
  CHECK(ps[0].owner.empty());
}

TEST_CASE("uniform_random draws distinct variables, each about equally often") {
  sc::uniform_random s(7);
  const auto ps = plans(s, 20, 5, 4000);
  std::vector<int> seen(20, 0);
  for (const auto& p : ps) {
    REQUIRE(p.vars.size() == 5);
    REQUIRE(distinct_in_range(p, 20));
    for (auto v : p.vars) ++seen[v];
  }
  // 20000 draws, 1000 expected per variable: a fair draw stays within ±15% (about 5 sigma).
  for (int c : seen) CHECK(std::abs(c - 1000) < 150);
  sc::uniform_random again(7);
  CHECK(plans(again, 20, 5, 50)[49].vars == ps[49].vars);  // seeded: reproducible
}

TEST_CASE("priority: every variable first, then sampling by |delta|^p with the eta floor") {
  sc::priority s({.p = 2, .eta = 0.01, .seed = 3});
  auto first = plans(s, 12, 4, 3);
  std::set<sc::var_id> all;
  for (const auto& p : first) all.insert(p.vars.begin(), p.vars.end());
  CHECK(all.size() == 12);  // the never-updated come first
  std::vector<sc::var_delta> d;
  for (sc::var_id v = 0; v < 12; ++v) d.push_back({v, v == 5 ? 3.0 : (v == 7 ? -1.0 : 0.0)});
  s.observe(d);
  CHECK(s.priority_of(5) == doctest::Approx(9.0));  // p = 2
  CHECK(s.priority_of(7) == doctest::Approx(1.0));
  std::map<sc::var_id, int> count;
  for (const auto& p : plans(s, 12, 1, 3000)) {
    REQUIRE(p.vars.size() == 1);
    ++count[p.vars[0]];
  }
  // Weights 9, 1 and a floor of 0.01 of the draws spread over the 12: about 89%, 10%, 0.08% each.
  CHECK(count[5] > 2300);
  CHECK(count[7] > 200);
  CHECK(count[7] < 450);
  CHECK(count[0] < 60);
  CHECK(count[0] + count[1] + count[2] > 0);  // the floor: zero-priority variables still come up
  CHECK_THROWS_AS(sc::priority({.p = 0}), strata::error);
}

TEST_CASE("priority with a million variables of which ten move: the draws go to the ten, a round costs O(batch)") {
  const std::uint32_t vars = 1'000'000;
  sc::priority s({.p = 1, .eta = 0.1, .seed = 5});
  sc::context cx;
  cx.vars = vars;
  cx.batch = 100;
  sc::plan first;
  s.schedule(cx, first);  // never observed: the first come from the random sweep
  CHECK(first.vars.size() == 100);
  // A full report (as a program's evaluation gives): every variable observed, ten with a change.
  std::vector<sc::var_delta> d;
  d.reserve(vars);
  for (sc::var_id v = 0; v < vars; ++v) d.push_back({v, v % 100'000 == 7 ? (v % 200'000 == 7 ? 1.0 : -1.0) : 0.0});
  s.observe(d);
  CHECK(s.priority_of(7) == doctest::Approx(1.0));
  CHECK(s.priority_of(900'007) == doctest::Approx(1.0));
  CHECK(s.priority_of(8) == 0.0);
  std::size_t hot = 0, total = 0;
  for (int r = 0; r < 50; ++r) {
    sc::plan p;
    s.schedule(cx, p);
    REQUIRE(distinct_in_range(p, vars));
    CHECK(p.vars.size() <= 100);
    for (auto v : p.vars) hot += v % 100'000 == 7, ++total;
  }
  CHECK(hot >= 50 * 10 - 10);  // each of the ten: ~9 of the 100 draws a round, missed in ~1 round in 9,000
  // 100 draws a round, a tenth of them (eta = 0.1: 1/11) on the floor: about 9 others a round.
  CHECK(total - hot < 50 * 20);
  CHECK(total - hot > 50 * 3);
}

TEST_CASE("dependency_filter never accepts two dependent variables and, when nothing is rejected, equals its scheduler") {
  sc::dependency_filter<sc::round_robin> f(sc::round_robin{}, {.rho = 0.5, .oversample = 2});
  sc::context cx;
  cx.vars = 8;
  cx.batch = 3;
  cx.dependency = [](sc::var_id a, sc::var_id b) { return (a / 2 == b / 2) ? 0.9 : 0.1; };  // pairs {0,1}, {2,3}, ...
  for (std::uint32_t r = 0; r < 20; ++r) {
    cx.round = r;
    sc::plan p;
    f.schedule(cx, p);
    REQUIRE(distinct_in_range(p, 8));
    CHECK(p.vars.size() <= 3);
    for (auto a : p.vars)
      for (auto b : p.vars) CHECK((a == b || a / 2 != b / 2));
  }
  CHECK(f.rejected() > 0);
  // rho = 1 with oversample 1: nothing below 1 is rejected, the schedule is the inner one's.
  sc::dependency_filter<sc::uniform_random> same(sc::uniform_random(9), {.rho = 1.0, .oversample = 1});
  sc::uniform_random plain(9);
  for (std::uint32_t r = 0; r < 50; ++r) {
    cx.round = r;
    sc::plan a, b;
    same.schedule(cx, a);
    plain.schedule(cx, b);
    CHECK(a.vars == b.vars);
  }
  CHECK(same.rejected() == 0);
  cx.dependency = nullptr;
  sc::plan p;
  CHECK_THROWS_AS(f.schedule(cx, p), strata::error);  // no dependency to check: a clear error
}

TEST_CASE("dependency_filter over round_robin starves no variable, even when every pair depends") {
  // Everything depends on everything: one variable per round is accepted. Round robin proposes
  // each variable once per sweep; the candidates not taken come first next round, so the accepted
  // sequence is still 0, 1, 2, ... and every variable is visited once per 10 rounds.
  sc::dependency_filter<sc::round_robin> f(sc::round_robin{}, {.rho = 0.5, .oversample = 3});
  sc::context cx;
  cx.vars = 10;
  cx.batch = 2;
  cx.dependency = [](sc::var_id, sc::var_id) { return 1.0; };
  std::vector<int> seen(10, 0);
  for (std::uint32_t r = 0; r < 40; ++r) {
    cx.round = r;
    sc::plan p;
    f.schedule(cx, p);
    REQUIRE(p.vars.size() == 1);
    CHECK(p.vars[0] == r % 10);
    ++seen[p.vars[0]];
  }
  CHECK(seen == std::vector<int>(10, 4));
}

TEST_CASE("rotation: each round a permutation of blocks over workers, every worker meets every block") {
  sc::rotation s;
  const auto ps = plans(s, 4, 1, 8, 4);
  std::vector<std::set<sc::var_id>> met(4);
  for (const auto& p : ps) {
    REQUIRE(p.vars.size() == 4);
    REQUIRE(p.owner.size() == 4);
    CHECK(std::set<std::uint32_t>(p.owner.begin(), p.owner.end()).size() == 4);  // no two workers share a block
    for (std::size_t i = 0; i < 4; ++i) met[p.owner[i]].insert(p.vars[i]);
  }
  for (const auto& m : met) CHECK(m.size() == 4);
}

TEST_CASE("a user-written scheduler plugs in") {
  evens_then_odds s;
  const auto ps = plans(s, 6, 2, 3);
  CHECK(ps[0].vars == std::vector<sc::var_id>{0, 2});
  CHECK(ps[1].vars == std::vector<sc::var_id>{4, 1});
  CHECK(ps[2].vars == std::vector<sc::var_id>{3, 5});
}

namespace {

/// A program whose model is a vector of counters: each round adds, to every scheduled variable,
/// the sum over workers of (worker id + 1) × (what the worker has seen of that variable + 1). A
/// worker's copy must equal the coordinator's model whenever it pushes (depth 1), and the
/// coordinator checks it from the partials.
struct counters {
  struct partial_type {
    std::vector<double> seen;
    template <class Ar>
    void serialize(Ar& ar) { ar(seen); }
  };
  struct update_type {
    std::vector<sc::var_id> vars;
    std::vector<double> add;
    template <class Ar>
    void serialize(Ar& ar) { ar(vars, add); }
  };
  std::uint32_t n = 6;
  std::vector<std::vector<double>> copies;  // per worker
  std::vector<double> model;
  std::vector<std::vector<double>> history;  // model after each round
  std::uint64_t mismatches = 0, max_late = 0;
  explicit counters(std::uint32_t workers) : copies(workers, std::vector<double>(6, 0.0)), model(6, 0.0) { history.push_back(model); }
  std::uint32_t vars() const { return n; }
  partial_type push(strata::worker& w, const sc::plan& p) {
    partial_type out;
    for (auto v : p.vars) out.seen.push_back(copies[w.id()][v]);
    return out;
  }
  update_type pull(const sc::plan& p, std::vector<partial_type>& parts) {
    // Every worker saw the same values; they must be the model of some round r - k, k < depth.
    for (const auto& q : parts)
      if (q.seen != parts.front().seen) ++mismatches;
    std::uint64_t late = 0;
    bool found = false;
    for (std::uint64_t k = 0; k <= p.round && !found; ++k) {
      const auto& m = history[p.round - k];
      bool eq = true;
      for (std::size_t i = 0; i < p.vars.size(); ++i) eq = eq && m[p.vars[i]] == parts.front().seen[i];
      if (eq) late = k, found = true;
    }
    if (!found) ++mismatches;
    max_late = std::max(max_late, late);
    update_type u;
    u.vars = p.vars;
    for (std::size_t i = 0; i < p.vars.size(); ++i) {
      double add = 0;
      for (std::size_t w = 0; w < parts.size(); ++w) add += double(w + 1) * (parts[w].seen[i] + 1);
      u.add.push_back(add);
      model[p.vars[i]] += add;
    }
    history.push_back(model);
    return u;
  }
  void sync(strata::worker& w, const update_type& u) {
    for (std::size_t i = 0; i < u.vars.size(); ++i) copies[w.id()][u.vars[i]] += u.add[i];
  }
};

template <class T>
void engine_rounds(typename T::config tc, std::uint32_t depth) {
  strata::system<strata::bsp, T> sys({.nodes = 2, .workers_per_node = 2}, std::move(tc));
  counters prog(4);
  sc::round_robin s;
  sc::options o;
  o.rounds = 40;
  o.batch = 2;
  o.depth = depth;
  const auto r = sc::run(sys, prog, s, o);
  CHECK(r.rounds == 40);
  CHECK(prog.mismatches == 0);
  CHECK(r.staleness.count() == 4 * 40);
  CHECK(r.staleness.stats().max() <= depth - 1);
  if (depth == 1) CHECK(prog.max_late == 0);
  CHECK(prog.max_late <= depth - 1);
  for (const auto& c : prog.copies) CHECK(c == prog.model);  // every round's result reached every worker
  REQUIRE(r.per_round.size() == 40);
  for (std::size_t i = 1; i < r.per_round.size(); ++i) CHECK(r.per_round[i].elapsed_s >= r.per_round[i - 1].elapsed_s);
}

}  // namespace

TEST_CASE("STRADS rounds: automatic sync at depth 1, bounded lateness when pipelined") {
  SUBCASE("inproc, depth 1") { engine_rounds<strata::inproc>({}, 1); }
  SUBCASE("inproc, depth 3") { engine_rounds<strata::inproc>({}, 3); }
  strata::delayed<strata::inproc>::config jit;
  jit.delay.latency = std::chrono::microseconds(50);
  jit.delay.jitter = std::chrono::microseconds(300);
  jit.delay.seed = 5;
  SUBCASE("delayed, depth 1") { engine_rounds<strata::delayed<strata::inproc>>(jit, 1); }
  SUBCASE("delayed, depth 2") { engine_rounds<strata::delayed<strata::inproc>>(jit, 2); }
}

TEST_CASE("STRADS: zero rounds ends at once, a program that is done stops early") {
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 2});
  counters prog(2);
  sc::round_robin s;
  sc::options o;
  o.rounds = 0;
  CHECK(sc::run(sys, prog, s, o).rounds == 0);
  struct stop_after_5 : counters {
    using counters::counters;
    bool done() const { return history.size() > 5; }
  } p5(2);
  o.rounds = 100;
  o.depth = 3;
  const auto r = sc::run(sys, p5, s, o);
  CHECK(r.rounds == 7);  // 5 pulled, then the 2 in flight drained
  for (const auto& c : p5.copies) CHECK(c == p5.model);
}

}  // namespace test_sched_schedulers
