// Adaptive mode (include/strata/cost/adaptive.hpp, apps/trainers/adaptive.hpp): the
// refit policy picks the candidate that is truly fastest on synthetic traces drawn from a known
// model, explores before it can compare, keeps the current bound within its margin, and rejects
// bad input; the runtime's set_staleness reaches the workers; an adaptive MF run on small
// synthetic data keeps iterations and elapsed time continuous across segments, loses no SGD
// update, and ends within a stated RMSE tolerance of a fixed-bound run. Nothing here is timed.
#include <doctest/doctest.h>

#include "../support/ml_data.hpp"
#include <strata/cost/adaptive.hpp>
#include <trainers/adaptive.hpp>
#include <trainers/mf_trainer.hpp>
#include <strata/strata.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_cost_adaptive {

namespace {
namespace cost = strata::cost;
namespace ml = strata::ml;

// Truth of the synthetic traces: seconds per iteration t(s) = 0.0375 + 0.0625/(1+s) (0.1 at s=0,
// 0.05 at s=4); value f(i) = f* + exp(b0 + b1·log i + b2·S(i)), S(i) = Σ_{j≤i} s_j (log j − log(j−1)).
struct truth {
  double b0 = 0, b1 = -1, b2 = 0, fstar = 0.8;
  double switch_cost = 0.3;  // seconds every segment's first iteration pays (a restart)
  static double t(double s) { return 0.0375 + 0.0625 / (1 + s); }
};

cost::probe_point at(double s) {
  cost::probe_point p;
  p.workers = 4;
  p.consistency = "ssp";
  p.staleness = s;
  return p;
}

struct synthetic_run {
  std::vector<strata::iteration_record> trace;
  std::vector<cost::segment> segments;
  double S = 0;
};

/// Iterations 0..sum(k) under the bounds of `plan` (bound, iterations) per segment.
synthetic_run make_trace(const truth& tr, const std::vector<std::pair<double, std::uint32_t>>& plan) {
  synthetic_run r;
  strata::iteration_record r0;
  r0.iteration = 0;
  r0.metric = tr.fstar + std::exp(tr.b0) * 1.5;
  r.trace.push_back(r0);
  std::uint32_t i = 0;
  double elapsed = 0;
  for (auto [s, k] : plan) {
    cost::segment seg;
    seg.config = at(s);
    seg.first = i + 1;
    for (std::uint32_t j = 0; j < k; ++j) {
      ++i;
      if (i > 1) r.S += s * (std::log(i) - std::log(i - 1.0));
      elapsed += truth::t(s) + (j == 0 && i > 1 ? tr.switch_cost : 0.0);
      strata::iteration_record rec;
      rec.iteration = i;
      rec.elapsed_s = elapsed;
      rec.metric = tr.fstar + std::exp(tr.b0 + tr.b1 * std::log(i) + tr.b2 * r.S);
      r.trace.push_back(rec);
    }
    seg.last = i;
    r.segments.push_back(seg);
  }
  return r;
}

/// The true seconds of each candidate to halve the gap f − f* from the end of `run`, by stepping the true model.
std::vector<double> true_seconds(const truth& tr, const synthetic_run& run, const std::vector<double>& candidates) {
  const auto n = run.trace.back().iteration;
  const double gap = std::exp(tr.b0 + tr.b1 * std::log(n) + tr.b2 * run.S);
  std::vector<double> out;
  for (double c : candidates) {
    double S = run.S, secs = 0;
    bool reached = false;
    for (std::uint32_t i = n + 1; i < 1000000 && !reached; ++i) {
      S += c * (std::log(i) - std::log(i - 1.0));
      secs += truth::t(c);
      reached = std::exp(tr.b0 + tr.b1 * std::log(i) + tr.b2 * S) <= gap / 2;
    }
    out.push_back(reached ? secs : std::numeric_limits<double>::infinity());
  }
  return out;
}
/// The truly fastest candidate.
double true_best(const truth& tr, const synthetic_run& run, const std::vector<double>& candidates) {
  const auto t = true_seconds(tr, run, candidates);
  return candidates[static_cast<std::size_t>(std::min_element(t.begin(), t.end()) - t.begin())];
}

cost::adaptive_choice choose(const synthetic_run& run, const std::vector<double>& cands, cost::refit_options o = {}) {
  std::vector<cost::probe_point> c;
  for (double s : cands) c.push_back(at(s));
  cost::adaptive_input in;
  in.trace = run.trace;
  in.segments = run.segments;
  in.candidates = c;
  return cost::refit_policy(o).choose(in);
}

std::string describe(const cost::adaptive_choice& c) {
  std::string s = c.reason;
  for (const auto& e : c.estimates)
    s += "\n  s=" + std::to_string(e.config.staleness) + " t=" + std::to_string(e.seconds_per_iteration) + " rate=" + std::to_string(e.rate) +
         " seconds=" + std::to_string(e.seconds);
  return s;
}

template <class F>
std::string bad_input(F&& f) {
  try {
    f();
  } catch (const strata::error& e) {
    CHECK(e.code() == strata::errc::bad_input);
    return e.what();
  }
  FAIL("no error");
  return {};
}

const std::vector<double> cands{0, 1, 2, 4};
cost::refit_options margin(double m) {
  cost::refit_options o;
  o.margin = m;
  return o;
}
cost::refit_options no_explore() {
  cost::refit_options o;
  o.explore = false;
  return o;
}
ml::adaptive_options every(std::uint32_t k, std::vector<int> s) {
  ml::adaptive_options o;
  o.every = k;
  o.staleness = std::move(s);
  return o;
}
}  // namespace

TEST_CASE("adaptive refit policy: staleness that does not slow convergence -> the cheapest bound") {
  truth tr;  // b2 = 0: progress per iteration does not depend on the bound; s=4 is the cheapest
  const auto run = make_trace(tr, {{4, 10}, {0, 10}});
  REQUIRE(true_best(tr, run, cands) == 4);
  const auto c = choose(run, cands);
  INFO(describe(c));
  CHECK(c.config.staleness == 4);
  CHECK(c.reason.rfind("switch", 0) == 0);
  // The timings were measured without the restart each segment pays (0.3 s on its first iteration).
  REQUIRE(c.estimates.size() == 4);
  CHECK(c.estimates[0].timed);
  CHECK(c.estimates[0].seconds_per_iteration == doctest::Approx(truth::t(0)).epsilon(1e-9));
  CHECK(c.estimates[3].seconds_per_iteration == doctest::Approx(truth::t(4)).epsilon(1e-9));
  CHECK_FALSE(c.estimates[1].timed);  // s=1 and s=2 come from the system model, exact on this truth
  CHECK(c.estimates[1].seconds_per_iteration == doctest::Approx(truth::t(1)).epsilon(1e-6));
}

TEST_CASE("adaptive refit policy: staleness that slows convergence a lot -> a small bound") {
  truth tr;
  tr.b2 = 0.35;  // decay rate per log i: -1 at s=0, -0.65 at s=1, +0.4 (no progress) at s=4
  const auto run = make_trace(tr, {{0, 10}, {4, 10}});
  const double want = true_best(tr, run, cands);
  REQUIRE(want == 0);
  const auto c = choose(run, cands);
  INFO(describe(c));
  CHECK(c.config.staleness == want);
  CHECK(std::isinf(c.estimates[3].seconds));  // s=4 makes no progress
}

TEST_CASE("adaptive refit policy: a moderate drag -> a bound whose true time is within 5% of the truly fastest") {
  for (double b2 : {0.05, 0.1, 0.15, 0.25}) {
    truth tr;
    tr.b2 = b2;
    const auto run = make_trace(tr, {{0, 8}, {4, 8}, {0, 8}});
    const auto t = true_seconds(tr, run, cands);
    const double best = *std::min_element(t.begin(), t.end());
    const auto c = choose(run, cands, margin(0));
    const auto k = static_cast<std::size_t>(std::find(cands.begin(), cands.end(), c.config.staleness) - cands.begin());
    REQUIRE(k < cands.size());
    INFO("b2 " << b2 << " truth " << true_best(tr, run, cands) << " (" << best << " s), picked " << c.config.staleness << " (" << t[k]
               << " s): " << describe(c));
    CHECK(t[k] <= best * 1.05);
  }
  // The picks move from the cheapest bound to the safest one as the drag grows.
  truth none, heavy;
  heavy.b2 = 0.35;
  CHECK(choose(make_trace(none, {{0, 8}, {4, 8}, {0, 8}}), cands, margin(0)).config.staleness == 4);
  CHECK(choose(make_trace(heavy, {{0, 8}, {4, 8}, {0, 8}}), cands, margin(0)).config.staleness == 0);
}

TEST_CASE("adaptive refit policy: explores the farthest bound first, keeps the current one within the margin") {
  truth tr;
  const auto one = make_trace(tr, {{0, 10}});
  const auto c = choose(one, cands);
  CHECK(c.config.staleness == 4);
  CHECK(c.reason.rfind("explore", 0) == 0);
  CHECK(choose(make_trace(tr, {{2, 10}}), {1, 2, 3}).config.staleness == 1);  // a tie: the first candidate
  // Without exploring, one bound seen: every candidate has the same rate; the cheapest predicted
  // time per iteration is not known (one timing), so nothing beats the current one.
  const auto k = choose(one, cands, no_explore());
  INFO(describe(k));
  CHECK(k.config.staleness == 0);
  // s=4 is 2x cheaper per iteration than s=0 and converges alike: a margin of 150% keeps s=0.
  const auto run = make_trace(tr, {{4, 10}, {0, 10}});
  CHECK(choose(run, cands, margin(1.5)).config.staleness == 0);
  CHECK(choose(run, cands, margin(0.5)).config.staleness == 4);
}

TEST_CASE("adaptive policies: bad input is a clear error, fixed_policy keeps the bound, users' policies satisfy the concept") {
  truth tr;
  const auto run = make_trace(tr, {{0, 10}, {4, 10}});
  std::vector<cost::probe_point> c{at(0), at(4)};
  cost::refit_policy pol;
  cost::adaptive_input in;
  in.trace = run.trace;
  in.segments = run.segments;
  in.candidates = c;
  CHECK_NOTHROW((void)pol.choose(in));
  {
    auto e = in;
    e.trace = {};
    CHECK(bad_input([&] { (void)pol.choose(e); }).find("trace is empty") != std::string::npos);
  }
  {
    auto t = run.trace;
    t[7].metric = std::numeric_limits<double>::quiet_NaN();
    auto e = in;
    e.trace = t;
    CHECK(bad_input([&] { (void)pol.choose(e); }).find("iteration 7: the metric is not finite") != std::string::npos);
    t[7].metric = 1;
    t[9].elapsed_s = std::numeric_limits<double>::infinity();
    e.trace = t;
    CHECK(bad_input([&] { (void)pol.choose(e); }).find("elapsed_s is not finite") != std::string::npos);
    t[9].elapsed_s = 0;
    CHECK(bad_input([&] { (void)pol.choose(e); }).find("decreases") != std::string::npos);
  }
  {
    auto e = in;
    e.candidates = {};
    CHECK(bad_input([&] { (void)pol.choose(e); }).find("no candidate") != std::string::npos);
    e = in;
    e.segments = std::span<const cost::segment>(run.segments.data(), 1);  // the trace goes on past it
    CHECK(bad_input([&] { (void)pol.choose(e); }).find("do not cover") != std::string::npos);
    auto segs = run.segments;
    segs[1].first = 12;
    e.segments = segs;
    CHECK(bad_input([&] { (void)pol.choose(e); }).find("does not follow") != std::string::npos);
  }
  CHECK(cost::fixed_policy{}.choose(in).config.staleness == 4);

  struct always_last {
    cost::adaptive_choice choose(const cost::adaptive_input& in) {
      cost::check_adaptive_input(in);
      return {in.candidates.back(), "last", {}};
    }
  };
  static_assert(cost::adaptive_policy<always_last>);
  static_assert(!cost::adaptive_policy<int>);
}

TEST_CASE("system::set_staleness: the next run's workers read with the new bound, models without a dynamic bound refuse") {
  strata::system<strata::ssp<strata::dynamic_bound>> sys({.nodes = 1, .workers_per_node = 2, .staleness = 0});
  auto t = sys.add_table<strata::dense_row<float>>(1);
  std::vector<int> seen(2, -1);
  auto program = [&](strata::worker& w) -> strata::task<> {
    seen[w.id()] = w.model().staleness;
    (void)co_await w.get(t, 0);
    co_await w.clock();
  };
  sys.run(program);
  CHECK(seen == std::vector<int>{0, 0});
  sys.set_staleness(3);
  CHECK(sys.model().staleness == 3);
  CHECK(sys.config().staleness == 3);
  sys.run(program);
  CHECK(seen == std::vector<int>{3, 3});
  CHECK(bad_input([&] { sys.set_staleness(-1); }).find(">= 0") != std::string::npos);

  strata::system<strata::bsp> b({.nodes = 1, .workers_per_node = 1});
  CHECK(bad_input([&] { b.set_staleness(2); }).find("no dynamic staleness bound") != std::string::npos);
}

namespace {
ml::mf_trainer_options small_mf() { return strata_test::small_mf_options(40); }

/// Alternates the bound between the first and the last candidate (a user's policy).
struct alternate {
  cost::adaptive_choice choose(const cost::adaptive_input& in) {
    cost::check_adaptive_input(in);
    const auto& cur = in.segments.back().config;
    return {cur.staleness == in.candidates.front().staleness ? in.candidates.back() : in.candidates.front(), "alternate", {}};
  }
};

void check_continuous(const ml::mf_run& r, std::uint32_t iterations) {
  REQUIRE(r.iterations.size() == iterations + 1);
  for (std::uint32_t i = 0; i <= iterations; ++i) {
    CHECK(r.iterations[i].iteration == i);
    if (i > 0) CHECK(r.iterations[i].elapsed_s >= r.iterations[i - 1].elapsed_s);
    CHECK(std::isfinite(r.iterations[i].metric));
  }
}
}  // namespace

TEST_CASE("adaptive MF: segments keep the run whole (iterations, time, every SGD update) and end near a fixed-bound run") {
  const auto [train, test] = strata_test::synthetic_ratings(11);
  const auto o = small_mf();
  const std::uint64_t updates = std::uint64_t{o.iterations / o.clocks_per_epoch} * train.size();
  strata::system<strata::ssp<strata::dynamic_bound>> fixed_sys({.nodes = 1, .workers_per_node = 4, .staleness = 0});
  const auto fixed = ml::train_mf(fixed_sys, train, test, o);
  check_continuous(fixed, o.iterations);
  constexpr double tolerance = 0.05;  // RMSE; the data's noise is 0.2, the mean predictor ~0.84

  SUBCASE("a fixed policy in segments of 10 is the same run as one segment (s=0 reads are exact)") {
    strata::system<strata::ssp<strata::dynamic_bound>> sys({.nodes = 1, .workers_per_node = 4, .staleness = 0});
    cost::fixed_policy pol;
    std::vector<std::uint32_t> seen;
    const auto r = ml::train_mf_adaptive(sys, train, test, o, every(10, {0, 2}), pol,
                                         [&](const strata::iteration_record& it) { seen.push_back(it.iteration); });
    check_continuous(r, o.iterations);
    CHECK(r.sgd_updates == updates);
    CHECK(r.segments.size() == 4);
    CHECK(seen.size() == o.iterations + 1);  // the progress callback saw every iteration once
    INFO("fixed " << fixed.final_rmse << " segmented " << r.final_rmse);
    // Not bit-identical: under SSP a read may also see some updates of the current clock, in
    // whatever order they arrive, so runs differ slightly; a lost or repeated segment would not.
    CHECK(r.final_rmse == doctest::Approx(fixed.final_rmse).epsilon(0.01));
    for (std::uint32_t i = 0; i <= o.iterations; ++i) CHECK(r.iterations[i].metric == doctest::Approx(fixed.iterations[i].metric).epsilon(0.02));
  }
  SUBCASE("a policy that alternates s=0 and s=3: bounds hold per segment, nothing is lost") {
    strata::system<strata::ssp<strata::dynamic_bound>> sys({.nodes = 1, .workers_per_node = 4, .staleness = 0});
    alternate pol;
    const auto r = ml::train_mf_adaptive(sys, train, test, o, every(7, {0, 3}), pol);
    check_continuous(r, o.iterations);
    CHECK(r.sgd_updates == updates);
    REQUIRE(r.segments.size() == 6);  // 7+7+7+7+7+5
    CHECK(r.segments.back().last == o.iterations);
    for (std::size_t k = 0; k < r.segments.size(); ++k) {
      const auto& s = r.segments[k];
      CHECK(s.config.staleness == (k % 2 ? 3 : 0));
      for (std::uint32_t i = s.first; i <= s.last; ++i) CHECK(r.iterations[i].staleness_max() <= static_cast<std::int64_t>(s.config.staleness));
    }
    CHECK(sys.model().staleness == 3);
    INFO("fixed " << fixed.final_rmse << " alternating " << r.final_rmse);
    CHECK(r.final_rmse <= fixed.final_rmse + tolerance);
  }
  SUBCASE("the refit policy under essp: every chosen bound is a candidate, the RMSE within the tolerance") {
    strata::system<strata::essp<strata::dynamic_bound>> sys({.nodes = 1, .workers_per_node = 4, .staleness = 0});
    cost::refit_policy pol;
    const auto r = ml::train_mf_adaptive(sys, train, test, o, every(8, {0, 1, 2, 4}), pol);
    check_continuous(r, o.iterations);
    CHECK(r.sgd_updates == updates);
    REQUIRE(r.segments.size() == 5);
    CHECK(r.segments[1].reason.rfind("explore", 0) == 0);
    CHECK(r.segments[1].config.staleness == 4);
    for (const auto& s : r.segments) {
      MESSAGE("segment " << s.first << "-" << s.last << " s=" << s.config.staleness << ": " << s.reason);
      CHECK((s.config.staleness == 0 || s.config.staleness == 1 || s.config.staleness == 2 || s.config.staleness == 4));
    }
    INFO("fixed " << fixed.final_rmse << " adaptive " << r.final_rmse);
    CHECK(r.final_rmse <= fixed.final_rmse + tolerance);
  }
  SUBCASE("bad settings are errors") {
    strata::system<strata::bsp> b({.nodes = 1, .workers_per_node = 2});
    cost::refit_policy pol;
    CHECK(bad_input([&] { (void)ml::train_mf_adaptive(b, train, test, o, every(10, {0, 2}), pol); })
              .find("no dynamic staleness bound") != std::string::npos);
    strata::system<strata::ssp<strata::dynamic_bound>> sys({.nodes = 1, .workers_per_node = 2});
    CHECK(bad_input([&] { (void)ml::train_mf_adaptive(sys, train, test, o, every(0, {}), pol); }).find("0 iterations") != std::string::npos);
    strata::system<strata::ssp<strata::dynamic_bound>> sys2({.nodes = 1, .workers_per_node = 2});
    CHECK(bad_input([&] { (void)ml::train_mf_adaptive(sys2, train, test, o, every(5, {-1}), pol); }).find(">= 0") !=
          std::string::npos);
  }
}

}  // namespace test_cost_adaptive
