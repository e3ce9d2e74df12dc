// Experiment design (include/strata/cost/design.hpp): the greedy A-optimal choice stays within the
// budget, prefers informative and cheap probes, and beats random choices of the same cost.
#include <doctest/doctest.h>

#include <strata/core/error.hpp>
#include <strata/cost/design.hpp>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_cost_design {

namespace {
namespace cost = strata::cost;

std::vector<cost::probe_point> grid() {
  std::vector<cost::probe_point> c;
  for (double m : {1, 2, 3, 4})
    for (double s : {0.05, 0.1, 0.2, 0.4}) {
      cost::probe_point p;
      p.workers = m, p.scale = s;
      c.push_back(p);
    }
  return c;
}
double run_cost(const cost::probe_point& p) { return 1.0 + 10 * p.scale / std::min(p.workers, 2.0); }

}  // namespace

TEST_CASE("design: stays within the budget and spends most of it") {
  const auto c = grid();
  for (double budget : {3.0, 8.0, 15.0, 40.0}) {
    const auto r = cost::a_optimal_design<cost::ernest_features>(c, run_cost, {.budget = budget});
    double spent = 0;
    std::set<std::size_t> distinct(r.chosen.begin(), r.chosen.end());
    CHECK(distinct.size() == r.chosen.size());
    for (auto k : r.chosen) spent += run_cost(c[k]);
    CHECK(spent == doctest::Approx(r.cost));
    CHECK(spent <= budget);
    // Nothing left out would still have fitted.
    for (std::size_t k = 0; k < c.size(); ++k)
      if (!distinct.count(k)) CHECK(spent + run_cost(c[k]) > budget);
  }
  CHECK(cost::a_optimal_design<cost::ernest_features>(c, run_cost, {.budget = 0.5}).chosen.empty());
}

TEST_CASE("design: prefers informative probes over repeats, and cheap over dear") {
  // Ten copies of one configuration and four distinct ones, all of equal cost: the first four picks
  // are four distinct feature rows (one copy at most), since a repeat removes little variance.
  std::vector<cost::probe_point> c(10);
  for (auto& p : c) p.workers = 2, p.scale = 0.1;
  for (double m : {1, 3, 4}) {
    cost::probe_point p;
    p.workers = m, p.scale = m == 3 ? 0.4 : 0.05;
    c.push_back(p);
  }
  const auto r = cost::a_optimal_design<cost::ernest_features>(c, [](const cost::probe_point&) { return 1.0; }, {.budget = 4});
  REQUIRE(r.chosen.size() == 4);
  std::size_t copies = 0;
  for (auto k : r.chosen) copies += k < 10;
  CHECK(copies == 1);
  // Two identical configurations, one ten times dearer: the cheap one is chosen.
  std::vector<cost::probe_point> d(2);
  d[0].workers = d[1].workers = 2;
  const auto r2 = cost::a_optimal_design<cost::ernest_features>(d, [&](const cost::probe_point& p) { return &p == &d[0] ? 10.0 : 1.0; },
                                                                {.budget = 10});
  REQUIRE_FALSE(r2.chosen.empty());
  CHECK(r2.chosen.front() == 1);
}

TEST_CASE("design: probes already made are not asked for again") {
  // With the four distinct configurations already probed, the next pick is no longer one of them
  // first: the best gain is elsewhere, and the criterion starts lower.
  const auto c = grid();
  const auto unit = [](const cost::probe_point&) { return 1.0; };
  const auto first = cost::a_optimal_design<cost::ernest_features>(c, unit, {.budget = 4});
  std::vector<cost::probe_point> made;
  for (auto k : first.chosen) made.push_back(c[k]);
  const auto next = cost::a_optimal_design<cost::ernest_features>(c, unit, {.budget = 1}, made);
  REQUIRE(next.chosen.size() == 1);
  CHECK(next.criterion < first.criterion);
  const auto fresh = cost::a_optimal_design<cost::ernest_features>(c, unit, {.budget = 1});
  CHECK(next.chosen.front() != fresh.chosen.front());
}

TEST_CASE("design: the greedy choice beats random choices of the same size") {
  const auto c = grid();
  const auto unit = [](const cost::probe_point&) { return 1.0; };
  const auto g = cost::a_optimal_design<cost::ernest_features>(c, unit, {.budget = 6});
  REQUIRE(g.chosen.size() == 6);
  CHECK(cost::design_criterion<cost::ernest_features>(c, g.chosen) == doctest::Approx(g.criterion));
  std::mt19937_64 rng(3);
  int worse = 0;
  for (int rep = 0; rep < 20; ++rep) {
    std::vector<std::size_t> idx(c.size());
    for (std::size_t k = 0; k < idx.size(); ++k) idx[k] = k;
    std::shuffle(idx.begin(), idx.end(), rng);
    idx.resize(6);
    worse += cost::design_criterion<cost::ernest_features>(c, idx) >= g.criterion;
  }
  CHECK(worse >= 18);
}

TEST_CASE("design: a bad cost is an error naming the candidate") {
  const auto c = grid();
  CHECK_THROWS_WITH_AS((void)cost::a_optimal_design<cost::ernest_features>(c, [](const cost::probe_point&) { return 0.0; }, {.budget = 5}),
                       doctest::Contains("the cost of candidate 0 (bsp m=1 scale=0.05)"), strata::error);
}

}  // namespace test_cost_design
