// The planner as a library call (include/strata/cost/probing.hpp): probes of a synthetic program
// whose time per iteration and convergence follow known laws; the ranking finds the best m, the
// budget decides how many probes the design buys, values at the numerical floor are left out,
// and bad input is refused.
#include <doctest/doctest.h>

#include <strata/core/error.hpp>
#include <strata/cost/probing.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace test_cost_probing {

namespace {
namespace cost = strata::cost;
using SF = cost::ernest_features;
using CF = cost::with_rate_per_worker<cost::hemingway_features>;

/// Time per iteration 0.02 + 0.4 s/m + 0.01 m; gap exp(0.5 − (0.02 + 0.6/m) i), at most `floor`
/// below which it stays (a numerical floor), as a trace of `iterations` records.
struct synthetic {
  double floor = 0;
  int calls = 0;
  cost::run_trace operator()(const cost::probe_point& p, std::uint32_t iterations) {
    ++calls;
    cost::run_trace t;
    t.file = "synthetic_" + std::to_string(calls);
    t.config = p;
    t.quantity = cost::fit_quantity::metric;
    const double step = 0.02 + 0.4 * p.scale / p.workers + 0.01 * p.workers;
    for (std::uint32_t i = 0; i <= iterations; ++i) {
      strata::iteration_record r;
      r.iteration = i;
      r.elapsed_s = 0.05 + step * i;
      r.metric = std::max(floor, std::exp(0.5 - (0.02 + 0.6 / p.workers) * i));
      r.objective = r.metric;
      t.iterations.push_back(r);
      t.lines.push_back(i + 2);
    }
    return t;
  }
};

std::vector<cost::probe_point> points(std::vector<double> ms, std::vector<double> scales) {
  const std::vector<cost::model_choice> bsp{cost::model_choice::parse("bsp")};
  return cost::grid(ms, scales, bsp, 0.0, 0.0, 8.0);
}
}  // namespace

TEST_CASE("cost::plan: from probes at m <= 4 the ranking finds the fastest m to the target, with intervals") {
  synthetic prog;
  const auto grid = points({1, 2, 4}, {0.25, 0.5, 1});
  const auto cands = points({1, 2, 4, 6, 8, 16}, {1});
  const auto r = cost::plan<SF, CF>(prog, grid, cands, std::exp(-5.0), {.budget_s = 60, .probe_iterations = 12, .convergence = {.optimum = 0}});
  CHECK(r.probes.size() == grid.size());  // a synthetic program costs ~nothing: the budget buys every probe
  CHECK(r.in_budget == grid.size());
  REQUIRE(r.ranked.size() == cands.size());
  // Truth: the target exp(-5) is first reached at iteration ceil(5.5 / (0.02 + 0.6/m)); time 0.05 + that x (0.02 + 0.4/m + 0.01 m).
  auto truth = [](double m) { return 0.05 + std::ceil(5.5 / (0.02 + 0.6 / m)) * (0.02 + 0.4 / m + 0.01 * m); };
  double best_m = 1, best_t = truth(1);
  for (double m : {2.0, 4.0, 6.0, 8.0, 16.0})
    if (truth(m) < best_t) best_t = truth(m), best_m = m;
  CHECK(r.ranked.front().config.workers == best_m);
  for (const auto& e : r.ranked) {
    INFO(e.config.describe());
    CHECK(e.seconds == doctest::Approx(truth(e.config.workers)).epsilon(1e-6));
    CHECK(e.seconds_lo <= e.seconds * 1.0001);
    CHECK(e.seconds_hi >= e.seconds * 0.9999);
  }
}

TEST_CASE("cost::plan: a budget spent by the calibration buys one probe, and the rest needed to fit are run") {
  synthetic prog;
  const auto grid = points({1, 2, 3, 4}, {0.25, 0.5, 1});
  const auto r = cost::plan<SF, CF>(prog, grid, points({2}, {1}), std::exp(-3.0), {.budget_s = 1e-12, .probe_iterations = 10, .convergence = {.optimum = 0}});
  CHECK(r.in_budget == 1);
  CHECK(r.probes.size() == SF::size + 1);
}

TEST_CASE("cost::plan: points at the numerical floor are left out of the convergence fit, and bad input is refused") {
  synthetic prog{.floor = 1e-13};  // m = 1 reaches the floor by round 50
  const auto grid = points({1, 2, 4}, {0.5, 1});
  const auto cands = points({1, 2, 4}, {1});
  const auto r = cost::plan<SF, CF>(prog, grid, cands, std::exp(-20.0), {.budget_s = 60, .probe_iterations = 60, .convergence = {.optimum = 0}});
  for (const auto& p : r.convergence->points()) CHECK(p.value >= 1e-12 * std::exp(0.5) * 0.999);
  CHECK(r.ranked.front().reachable());
  synthetic p2;
  CHECK_THROWS_WITH_AS((cost::plan<SF, CF>(p2, grid, cands, 1.0, {.budget_s = 0})), doctest::Contains("budget must be finite and > 0"), strata::error);
  CHECK_THROWS_WITH_AS((cost::plan<SF, CF>(p2, points({1}, {1}), cands, 1.0, {})), doctest::Contains("the system model needs at least"), strata::error);
  CHECK_THROWS_WITH_AS((cost::plan<SF, CF>(p2, grid, cands, INFINITY, {})), doctest::Contains("target is not finite"), strata::error);
}

TEST_CASE("cost::plan: the bootstrap draws whole runs, so intervals hold the truth when each run has its own error") {
  // Each probe's time per iteration and rate carry a random factor of its own (a run's error: its
  // cache, its partition); within a run the points are exact. Drawn point by point, a run's 30
  // progress points pass for independent evidence and the intervals are too narrow; drawn run by
  // run they hold the expected time about as often as they should.
  struct noisy {
    std::mt19937_64 rng;
    cost::run_trace operator()(const cost::probe_point& p, std::uint32_t iterations) {
      std::normal_distribution<double> z(0, 1);
      const double ft = std::exp(0.03 * z(rng)), fr = std::exp(0.2 * z(rng));
      cost::run_trace t;
      t.file = "noisy_" + std::to_string(rng());
      t.config = p;
      t.quantity = cost::fit_quantity::metric;
      const double step = (0.02 + 0.4 * p.scale / p.workers + 0.01 * p.workers) * ft;
      for (std::uint32_t i = 0; i <= iterations; ++i) {
        strata::iteration_record r;
        r.iteration = i;
        r.elapsed_s = 0.05 + step * i;
        r.metric = std::exp(0.5 - (0.02 + 0.6 / p.workers) * fr * i);
        r.objective = r.metric;
        t.iterations.push_back(r);
        t.lines.push_back(i + 2);
      }
      return t;
    }
  };
  const auto grid = points({1, 2, 3, 4}, {0.25, 0.5, 1});
  const auto cands = points({3}, {1});
  const double truth = 0.05 + std::ceil(5.5 / (0.02 + 0.6 / 3)) * (0.02 + 0.4 / 3 + 0.03);
  int held = 0, width_ok = 0;
  const int experiments = 20;
  for (int e = 0; e < experiments; ++e) {
    noisy prog{std::mt19937_64(100 + e)};
    cost::probing_options o;
    o.budget_s = 60, o.probe_iterations = 30, o.convergence.optimum = 0, o.planner.seed = 7 + e;
    const auto r = cost::plan<SF, CF>(prog, grid, cands, std::exp(-5.0), o);
    const auto& x = r.ranked.front();
    held += x.seconds_lo <= truth && truth <= x.seconds_hi;
    width_ok += x.seconds_hi - x.seconds_lo > 0.01 * x.seconds;
  }
  MESSAGE("run bootstrap: the 90% interval held the expected time in " << held << " of " << experiments);
  CHECK(width_ok == experiments);
  CHECK(held >= 13);  // run by run: 15 of 20 at this commit; drawn point by point the same plans held 5
}

}  // namespace test_cost_probing
