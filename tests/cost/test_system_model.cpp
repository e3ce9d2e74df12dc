// Ernest's system model (include/strata/cost/system_model.hpp): it recovers known θ from noisy
// synthetic timings, keeps θ ≥ 0, takes user terms through the features policy, and refuses too few
// points or bad values.
#include <doctest/doctest.h>

#include <strata/core/error.hpp>
#include <strata/cost/system_model.hpp>

#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_cost_system_model {

namespace {
namespace cost = strata::cost;

/// A user's features policy: Ernest's terms plus one for bytes sent per clock (read from latency_s
/// here, for the test's sake).
struct two_terms {
  static constexpr std::size_t size = 2;
  static std::array<std::string_view, size> names() { return {"1", "s"}; }
  static std::array<double, size> features(const cost::probe_point& p) { return {1.0, p.scale}; }
};
struct not_features {};
struct wrong_return {
  static constexpr std::size_t size = 1;
  static std::array<std::string_view, 1> names() { return {"x"}; }
  static double features(const cost::probe_point&) { return 0; }
};
static_assert(cost::system_features<cost::ernest_features>);
static_assert(cost::system_features<cost::with_staleness<cost::with_cores<cost::ernest_features>>>);
static_assert(cost::system_features<two_terms>);
static_assert(!cost::system_features<not_features>);
static_assert(!cost::system_features<wrong_return>);
static_assert(!cost::system_features<int>);

template <class F>
std::vector<cost::timing_point> synthetic(const std::array<double, F::size>& theta, double noise, std::uint64_t seed,
                                          const std::vector<cost::probe_point>& at) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, noise);
  std::vector<cost::timing_point> pts;
  for (const auto& p : at) {
    const auto x = F::features(p);
    double t = 0;
    for (std::size_t j = 0; j < F::size; ++j) t += theta[j] * x[j];
    pts.push_back({p, t * (1 + g(rng)), "synthetic:" + std::to_string(pts.size() + 1)});
  }
  return pts;
}

std::vector<cost::probe_point> grid() {
  std::vector<cost::probe_point> at;
  for (double m : {1, 2, 3, 4, 6, 8})
    for (double s : {0.125, 0.25, 0.5, 1.0}) {
      cost::probe_point p;
      p.workers = m;
      p.scale = s;
      at.push_back(p);
    }
  return at;
}

}  // namespace

TEST_CASE("system model: recovers known θ from noisy timings") {
  const std::array<double, 4> theta{0.02, 1.5, 0.01, 0.004};
  const auto pts = synthetic<cost::ernest_features>(theta, 0.01, 3, grid());
  const auto m = cost::system_model<>::fit(pts);
  CHECK(m.theta()[0] == doctest::Approx(theta[0]).epsilon(0.15));
  CHECK(m.theta()[1] == doctest::Approx(theta[1]).epsilon(0.03));
  CHECK(m.theta()[2] == doctest::Approx(theta[2]).epsilon(0.3));
  CHECK(m.theta()[3] == doctest::Approx(theta[3]).epsilon(0.3));
  // Extrapolation to a configuration it never saw: m = 16, full data.
  cost::probe_point far;
  far.workers = 16;
  far.scale = 2;
  const double truth = theta[0] + theta[1] * 2 / 16 + theta[2] * std::log(16.0) + theta[3] * 16;
  CHECK(m.predict(far) == doctest::Approx(truth).epsilon(0.05));
  // Exact data: exact θ, absolute or relative weighting.
  const auto exact = synthetic<cost::ernest_features>(theta, 0, 1, grid());
  for (bool rel : {true, false}) {
    const auto e = cost::system_model<>::fit(exact, {.relative = rel});
    for (std::size_t j = 0; j < 4; ++j) CHECK(e.theta()[j] == doctest::Approx(theta[j]).epsilon(1e-8));
  }
}

TEST_CASE("system model: θ stays non-negative when the data pull a term below zero") {
  // Time that falls with m faster than s/m allows would want θ3 < 0; NNLS holds it at 0.
  std::vector<cost::timing_point> pts;
  for (double m : {1, 2, 4, 8}) {
    cost::probe_point p;
    p.workers = m;
    pts.push_back({p, 1.0 / m - 0.01 * m + 0.1, "p"});
  }
  const auto mo = cost::system_model<>::fit(pts);
  for (double t : mo.theta()) CHECK(t >= 0);
  CHECK(mo.theta()[3] == 0);
}

TEST_CASE("system model: a user-added term is fitted like the others (decorators)") {
  using F = cost::with_staleness<cost::with_cores<cost::ernest_features>>;
  CHECK(F::size == 6);
  CHECK(F::names()[4] == "oversubscription s/min(m,cores) - s/m");
  CHECK(F::names()[5] == "blocking latency/(1+s)");
  const std::array<double, 6> theta{0.01, 1.0, 0.0, 0.002, 1.0, 3.0};
  std::vector<cost::probe_point> at;
  for (double m : {1, 2, 3, 4})
    for (double s : {0.25, 1.0})
      for (double lat : {0.0, 1e-3})
        for (double st : {0.0, 3.0}) {
          cost::probe_point p;
          p.workers = m, p.scale = s, p.latency_s = lat, p.staleness = st, p.cores = 2;
          at.push_back(p);
        }
  const auto m = cost::system_model<F>::fit(synthetic<F>(theta, 0.005, 9, at));
  CHECK(m.theta()[1] == doctest::Approx(1.0).epsilon(0.05));
  CHECK(m.theta()[4] == doctest::Approx(1.0).epsilon(0.1));
  CHECK(m.theta()[5] == doctest::Approx(3.0).epsilon(0.1));
  // Oversubscription: 4 workers on 2 cores compute no faster than 2.
  cost::probe_point p2, p4;
  p2.workers = 2, p4.workers = 4, p2.cores = p4.cores = 2;
  CHECK(F::features(p4)[1] + F::features(p4)[4] == doctest::Approx(F::features(p2)[1]));
  CHECK(m.to_json().find("terms")->find("blocking latency/(1+s)")->as_number() == m.theta()[5]);
  // with_push: the pull term is 0 under eager pushes (essp), the latency otherwise.
  using P = cost::with_push<F>;
  cost::probe_point pull, push;
  pull.latency_s = push.latency_s = 1e-3, pull.staleness = push.staleness = 1, push.eager = true;
  CHECK(P::features(pull)[6] == doctest::Approx(1e-3));
  CHECK(P::features(push)[6] == 0);
  CHECK(P::features(push)[5] == doctest::Approx(5e-4));
  // Models without a clock bound (async, vap) never wait for freshness: no blocking, no pull, no sync.
  using S = cost::with_sync<P>;
  cost::probe_point unb = pull;
  unb.bounded = false, unb.scale = 1, unb.workers = 2;
  CHECK(S::features(unb)[5] == 0);
  CHECK(S::features(unb)[6] == 0);
  CHECK(S::features(unb)[7] == 0);
  unb.bounded = true;
  CHECK(S::features(unb)[7] == doctest::Approx(0.5));  // s/m under a pull model
  // A policy of the user's own.
  std::vector<cost::timing_point> pts;
  for (double s : {0.5, 1.0, 2.0}) {
    cost::probe_point p;
    p.scale = s;
    pts.push_back({p, 0.5 + 2 * s, "u"});
  }
  const auto u = cost::system_model<two_terms>::fit(pts);
  CHECK(u.theta()[0] == doctest::Approx(0.5));
  CHECK(u.theta()[1] == doctest::Approx(2.0));
}

TEST_CASE("system model: too few points and bad values are errors naming the source") {
  auto pts = synthetic<cost::ernest_features>({0.1, 1, 0, 0}, 0, 1, grid());
  pts.resize(3);
  try {
    (void)cost::system_model<>::fit(pts);
    FAIL("no error");
  } catch (const strata::error& e) {
    CHECK(std::string(e.what()).find("3 timing point(s) for 4 terms") != std::string::npos);
    CHECK(std::string(e.what()).find("synthetic:1") != std::string::npos);
  }
  auto bad = synthetic<cost::ernest_features>({0.1, 1, 0, 0}, 0, 1, grid());
  bad[5].seconds_per_iteration = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH_AS((void)cost::system_model<>::fit(bad), doctest::Contains("synthetic:6: seconds per iteration"), strata::error);
  bad[5].seconds_per_iteration = 1;
  bad[7].at.workers = 0;  // s/m = inf
  CHECK_THROWS_WITH_AS((void)cost::system_model<>::fit(bad), doctest::Contains("synthetic:8: feature"), strata::error);
}

}  // namespace test_cost_system_model
