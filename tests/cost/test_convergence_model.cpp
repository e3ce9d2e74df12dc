// Hemingway's convergence model (include/strata/cost/convergence_model.hpp): recovers known β and
// the optimum from noisy synthetic curves, predicts iterations to a target, and refuses bad input.
#include <doctest/doctest.h>

#include <strata/core/error.hpp>
#include <strata/cost/convergence_model.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_cost_convergence_model {

namespace {
namespace cost = strata::cost;
using F = cost::with_staleness_drag<cost::hemingway_features>;

/// f(i) = f* + exp(β·φ(i, m, s)) · (1 + noise), for m ∈ {1, 2, 4}, s ∈ {0, 2}, i = 0..n.
std::vector<cost::progress_point> curves(const std::array<double, F::size>& beta, double optimum, double noise, int n) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> g(0, noise);
  std::vector<cost::progress_point> pts;
  for (double m : {1, 2, 4})
    for (double s : {0.0, 2.0})
      for (int i = 0; i <= n; ++i) {
        cost::probe_point p;
        p.workers = m, p.staleness = s, p.iteration = i;
        double v = 1e9;  // iteration 0 (log 0): the initial state, left out by the fit
        if (i > 0) {
          const auto x = F::features(p);
          double y = 0;
          for (std::size_t j = 0; j < F::size; ++j) y += beta[j] * x[j];
          v = optimum + std::exp(y) * (1 + g(rng));
        }
        pts.push_back({p, v, "run" + std::to_string(static_cast<int>(m)) + ":" + std::to_string(i + 2)});
      }
  return pts;
}

}  // namespace

TEST_CASE("convergence model: known β with a known optimum") {
  const std::array<double, 5> beta{0.5, -0.8, -0.02, 0.05, 0.1};
  const auto pts = curves(beta, 0.7, 0.0, 30);
  const auto m = cost::convergence_model<F>::fit(pts, {.optimum = 0.7});
  for (std::size_t j = 0; j < F::size; ++j) CHECK(m.beta()[j] == doctest::Approx(beta[j]).epsilon(1e-8));
  CHECK(m.optimum() == 0.7);
}

TEST_CASE("convergence model: estimates the optimum and predicts iterations to a target") {
  const std::array<double, 5> beta{0.5, -0.8, -0.02, 0.05, 0.1};
  const auto pts = curves(beta, 0.7, 0.005, 30);
  const auto m = cost::convergence_model<F>::fit(pts);
  CHECK(m.optimum() == doctest::Approx(0.7).epsilon(0.05));
  // Iterations to reach f ≤ 0.7 + 0.3 at m = 2, s = 2 (inside the probed range) and m = 3, s = 1 (between).
  for (auto [mm, ss] : {std::pair{2.0, 2.0}, std::pair{3.0, 1.0}}) {
    cost::probe_point p;
    p.workers = mm, p.staleness = ss;
    int truth = 0;
    for (int i = 1; i < 1000; ++i) {
      p.iteration = i;
      double y = 0;
      const auto x = F::features(p);
      for (std::size_t j = 0; j < F::size; ++j) y += beta[j] * x[j];
      if (0.7 + std::exp(y) <= 1.0) {
        truth = i;
        break;
      }
    }
    REQUIRE(truth > 1);
    const auto it = m.iterations_to(1.0, p);
    REQUIRE(it.has_value());
    CHECK(*it == doctest::Approx(truth).epsilon(0.15));
  }
  // A target at or below the optimum is unreachable.
  cost::probe_point p;
  CHECK_FALSE(m.iterations_to(m.optimum() - 1e-3, p).has_value());
  // More staleness (positive drag coefficient) needs more iterations.
  cost::probe_point a, b;
  a.workers = b.workers = 2;
  b.staleness = 4;
  CHECK(*m.iterations_to(1.0, b) > *m.iterations_to(1.0, a));
}

TEST_CASE("convergence model with i/m: a rate b + c/m (CoCoA+'s) is recovered, and iterations to a target at an unprobed m follow it") {
  using G = cost::with_rate_per_worker<cost::hemingway_features>;
  // log(gap) = 0.3 - (0.05 + 0.6/m) i: from m = 1, 2, 4 predict m = 16, where the rate is 0.0875.
  std::vector<cost::progress_point> pts;
  for (double m : {1, 2, 4})
    for (int i = 1; i <= 20; ++i) {
      cost::probe_point p;
      p.workers = m, p.iteration = i;
      pts.push_back({p, std::exp(0.3 - (0.05 + 0.6 / m) * i), "m" + std::to_string(static_cast<int>(m)) + ":" + std::to_string(i)});
    }
  const auto g = cost::convergence_model<G>::fit(pts, {.optimum = 0.0});
  CHECK(g.beta()[G::size - 1] == doctest::Approx(-0.6).epsilon(1e-8));
  CHECK(g.beta()[2] == doctest::Approx(-0.05).epsilon(1e-8));
  cost::probe_point q;
  q.workers = 16;
  const auto it = g.iterations_to(std::exp(0.3 - 0.0875 * 50), q, 1000);
  REQUIRE(it.has_value());
  CHECK(*it == doctest::Approx(50).epsilon(0.02));
  // Without the term, Hemingway's features bend the curve (m log i) and miss the rate at m = 16.
  const auto h = cost::convergence_model<cost::hemingway_features>::fit(pts, {.optimum = 0.0});
  const auto ih = h.iterations_to(std::exp(0.3 - 0.0875 * 50), q, 1000);
  CHECK((!ih || std::abs(*ih - 50) > 5));
}

TEST_CASE("convergence model with i log m and i [m = 1]: one worker's own rate and a rate linear in log m are recovered") {
  using G = cost::with_rate_log_m<cost::hemingway_features>;
  // log(gap) = 0.2 - r(m) i with r(1) = 2.4 and r(m) = 0.4 - 0.06 log m past it: from m = 1, 2, 4 predict m = 32.
  auto rate = [](double m) { return m == 1 ? 2.4 : 0.4 - 0.06 * std::log(m); };
  std::vector<cost::progress_point> pts;
  for (double m : {1, 2, 4})
    for (int i = 1; i <= 12; ++i) {
      cost::probe_point p;
      p.workers = m, p.iteration = i;
      pts.push_back({p, std::exp(0.2 - rate(m) * i), "m" + std::to_string(static_cast<int>(m)) + ":" + std::to_string(i)});
    }
  const auto g = cost::convergence_model<G>::fit(pts, {.optimum = 0.0});
  cost::probe_point q;
  q.workers = 32;
  const auto it = g.iterations_to(std::exp(0.2 - rate(32) * 40), q, 1000);
  REQUIRE(it.has_value());
  CHECK(*it == doctest::Approx(40).epsilon(0.03));
  q.workers = 1;
  const auto one = g.iterations_to(std::exp(0.2 - 2.4 * 5), q, 1000);
  REQUIRE(one.has_value());
  CHECK(*one == doctest::Approx(5).epsilon(0.01));
  // i/m alone cannot hold both ends: through m = 1, 2, 4 its rate at m = 32 is far off (or the target unreachable).
  const auto h = cost::convergence_model<cost::with_rate_per_worker<cost::hemingway_features>>::fit(pts, {.optimum = 0.0});
  q.workers = 32;
  const auto ih = h.iterations_to(std::exp(0.2 - rate(32) * 40), q, 1000);
  CHECK((!ih || std::abs(*ih - 40) > 8));
}

TEST_CASE("convergence model: a lower bound keeps the estimated optimum at or above it") {
  // A quantity that cannot go below 0 (an RMSE, a duality gap), probed for 7 iterations while it
  // still falls in a straight line, 1.0 -> 0.3: left free, the profile search puts f* far below 0
  // (a straight line is the limit of f* -> -inf); bounded by 0, it stays at or above 0.
  std::vector<cost::progress_point> pts;
  for (double m : {1, 2, 4})
    for (double s : {0.0, 2.0})
      for (int i = 1; i <= 7; ++i) {
        cost::probe_point p;
        p.workers = m, p.staleness = s, p.iteration = i;
        pts.push_back({p, 1.0 - 0.1 * i, "line:" + std::to_string(i)});
      }
  const auto free_fit = cost::convergence_model<F>::fit(pts);
  const auto bounded = cost::convergence_model<F>::fit(pts, {.lower_bound = 0.0});
  INFO("free f* " << free_fit.optimum() << ", bounded f* " << bounded.optimum());
  CHECK(free_fit.optimum() < 0);
  CHECK(bounded.optimum() >= 0);
  cost::probe_point p;
  p.workers = 2, p.iteration = 5;
  CHECK(bounded.predict(p) > 0);
  // Values that already reach the bound leave nothing to model: an error saying so.
  auto flat = pts;
  for (auto& q : flat) q.value = std::max(q.value - 10.0, -1.0);
  CHECK_THROWS_WITH_AS((void)cost::convergence_model<F>::fit(flat, {.lower_bound = 0.0}), doctest::Contains("is not above the optimum's lower bound"),
                       strata::error);
}

TEST_CASE("convergence model: too few points, non-finite values and a wrong optimum are errors") {
  const std::array<double, 5> beta{0.5, -0.8, -0.02, 0.05, 0.1};
  auto pts = curves(beta, 0.7, 0.0, 30);
  std::vector<cost::progress_point> few(pts.begin(), pts.begin() + 5);  // iterations 0..4: 4 usable
  CHECK_THROWS_WITH_AS((void)cost::convergence_model<F>::fit(few), doctest::Contains("4 usable point(s)"), strata::error);
  pts[3].value = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH_AS((void)cost::convergence_model<F>::fit(pts), doctest::Contains("run1:5: objective"), strata::error);
  pts = curves(beta, 0.7, 0.0, 30);
  CHECK_THROWS_WITH_AS((void)cost::convergence_model<F>::fit(pts, {.optimum = 0.9}), doctest::Contains("is not above the given optimum"),
                       strata::error);
}

}  // namespace test_cost_convergence_model
