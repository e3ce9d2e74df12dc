// The planner (include/strata/cost/planner.hpp): on synthetic models whose truth is known, it ranks
// the candidates in the true order of time to target (the best worker count is in the middle, as in
// Hemingway), its bootstrap interval is repeatable for a seed and widens with noise.
#include <doctest/doctest.h>

#include <strata/cost/planner.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_cost_planner {

namespace {
namespace cost = strata::cost;
using SF = cost::ernest_features;
using CF = cost::hemingway_features;

// Truth: iterations get cheaper with m (s/m) but convergence per iteration slows with m (m·log i).
const std::array<double, 4> theta{0.01, 1.0, 0.0, 0.01};
const std::array<double, 4> beta{0.0, -1.2, 0.0, 0.06};
constexpr double optimum = 0.5;

double true_seconds(double m, double target) {
  cost::probe_point p;
  p.workers = m;
  const double t = theta[0] + theta[1] / m + theta[3] * m;
  for (int i = 1; i < 100000; ++i) {
    const double li = std::log(static_cast<double>(i));
    if (optimum + std::exp(beta[0] + beta[1] * li + beta[2] * i + beta[3] * m * li) <= target) return t * i;
  }
  return INFINITY;
}

struct fitted {
  cost::system_model<SF> sys;
  cost::convergence_model<CF> conv;
};
fitted fit(double noise, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, noise);
  std::vector<cost::timing_point> tp;
  std::vector<cost::progress_point> pp;
  for (double m : {1, 2, 3, 4}) {
    for (double s : {0.5, 1.0}) {
      cost::probe_point p;
      p.workers = m, p.scale = s;
      tp.push_back({p, (theta[0] + theta[1] * s / m + theta[3] * m) * (1 + g(rng)), "t"});
    }
    for (int i = 1; i <= 25; ++i) {
      cost::probe_point p;
      p.workers = m, p.iteration = i;
      const double li = std::log(static_cast<double>(i));
      pp.push_back({p, optimum + std::exp(beta[0] + beta[1] * li + beta[2] * i + beta[3] * m * li) * (1 + g(rng)), "c"});
    }
  }
  return {cost::system_model<SF>::fit(tp), cost::convergence_model<CF>::fit(pp, {.optimum = optimum})};
}

std::vector<cost::probe_point> candidates() {
  std::vector<cost::probe_point> c;
  for (double m : {1, 2, 4, 6, 8, 12}) {
    cost::probe_point p;
    p.workers = m;
    c.push_back(p);
  }
  return c;
}

}  // namespace

TEST_CASE("planner: ranks candidates in the true order of time to target") {
  const double target = 0.55;
  const auto f = fit(0.0, 1);
  const auto cands = candidates();
  const auto ranked = cost::plan(f.sys, f.conv, cands, target, {.bootstrap = 0});
  REQUIRE(ranked.size() == cands.size());
  std::vector<double> truth_order;
  for (const auto& c : cands) truth_order.push_back(c.workers);
  std::sort(truth_order.begin(), truth_order.end(), [&](double a, double b) { return true_seconds(a, target) < true_seconds(b, target); });
  for (std::size_t k = 0; k < ranked.size(); ++k) {
    INFO("rank " << k << ": m=" << ranked[k].config.workers << " predicted " << ranked[k].seconds);
    CHECK(ranked[k].config.workers == truth_order[k]);
    CHECK(ranked[k].seconds == doctest::Approx(true_seconds(ranked[k].config.workers, target)).epsilon(1e-6));
  }
  // The best is in the middle: neither the fewest nor the most workers.
  CHECK(ranked.front().config.workers > 1);
  CHECK(ranked.front().config.workers < 12);
  // An unreachable target (below the optimum) puts every candidate last, unranked.
  const auto none = cost::plan(f.sys, f.conv, cands, optimum - 0.1, {.bootstrap = 0});
  for (const auto& e : none) CHECK_FALSE(e.reachable());
  const auto j = cost::to_json(ranked);
  CHECK(j.as_array().size() == cands.size());
  CHECK(j.as_array()[0].find("rank")->as_number() == 1);
}

TEST_CASE("planner: bootstrap intervals are seeded, contain the estimate, and widen with noise") {
  const double target = 0.55;
  auto cands = candidates();
  cands.resize(3);  // m = 1, 2, 4: within the probed range, where the interval is about noise, not extrapolation
  const auto noisy = fit(0.05, 2);
  const auto a = cost::plan(noisy.sys, noisy.conv, cands, target, {.bootstrap = 100, .seed = 5});
  const auto b = cost::plan(noisy.sys, noisy.conv, cands, target, {.bootstrap = 100, .seed = 5});
  const auto c = cost::plan(noisy.sys, noisy.conv, cands, target, {.bootstrap = 100, .seed = 6});
  bool differs = false;
  for (std::size_t k = 0; k < a.size(); ++k) {
    CHECK(a[k].seconds_lo == b[k].seconds_lo);
    CHECK(a[k].seconds_hi == b[k].seconds_hi);
    differs = differs || a[k].seconds_lo != c[k].seconds_lo;
    CHECK(a[k].seconds_lo <= a[k].seconds * 1.05);
    CHECK(a[k].seconds_hi >= a[k].seconds * 0.95);
    CHECK(a[k].seconds_hi > a[k].seconds_lo);
  }
  CHECK(differs);
  const auto quiet = fit(0.002, 2);
  const auto q = cost::plan(quiet.sys, quiet.conv, cands, target, {.bootstrap = 100, .seed = 5});
  auto width = [](const std::vector<cost::plan_entry>& v) {
    double w = 0;
    for (const auto& e : v) w += (e.seconds_hi - e.seconds_lo) / e.seconds;
    return w;
  };
  CHECK(width(q) < width(a) / 4);
}

TEST_CASE("planner: a start-up model adds the warm-up phase to the time to target") {
  const double target = 0.55;
  const auto f = fit(0.0, 1);
  // Start-up: 2 s + 1 s per worker at iteration w = 3, whatever the iterations cost after.
  std::vector<cost::timing_point> st;
  for (double m : {1, 2, 3, 4, 5}) {
    cost::probe_point p;
    p.workers = m;
    st.push_back({p, 2 + m, "startup"});
  }
  const auto startup = cost::system_model<SF>::fit(st);
  const auto cands = candidates();
  const auto ranked = cost::plan(f.sys, f.conv, cands, target, {.bootstrap = 20, .warmup = 3}, &startup);
  for (const auto& e : ranked) {
    INFO("m=" << e.config.workers);
    CHECK(e.startup_seconds == doctest::Approx(2 + e.config.workers).epsilon(1e-6));
    REQUIRE(e.iterations > 3);
    CHECK(e.seconds == doctest::Approx(e.startup_seconds + (e.iterations - 3) * e.seconds_per_iteration));
  }
  CHECK_THROWS_AS((void)cost::plan(f.sys, f.conv, cands, target, {.bootstrap = 0}, &startup), strata::error);
}

}  // namespace test_cost_planner
