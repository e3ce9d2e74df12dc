// CoCoA+ (ml/cocoa.hpp, apps/trainers/cocoa_trainer.hpp): the serial SDCA solver against the
// closed-form ridge solution, weak duality at random points, the distributed trainer's dual rising
// every round under BSP (CoCoA+'s guarantee with σ' = K), its one-worker run equal to serial SDCA,
// stale reads under SSP still reaching the optimum, the tolerance stopping every worker at one
// round, and bad settings refused. scikit-learn on real data: tests/ml/cocoa_reference.py (ctest cocoa.sklearn).
#include <doctest/doctest.h>

#include <strata/ml/cocoa.hpp>
#include <strata/strata.hpp>
#include <trainers/cocoa_trainer.hpp>

#include <cmath>
#include <random>
#include <vector>

namespace test_ml_cocoa {

namespace {
namespace ml = strata::ml;

/// n examples, d features, a fraction `density` stored; labels ±1 from a hidden linear model
/// (hinge) or a noisy linear target (squared).
ml::cocoa_data random_problem(std::uint32_t n, std::uint32_t d, double density, ml::cocoa_loss loss, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> truth(d);
  for (double& t : truth) t = g(rng);
  ml::cocoa_data out;
  out.d = d;
  std::vector<std::uint32_t> c;
  std::vector<double> v;
  for (std::uint32_t i = 0; i < n; ++i) {
    c.clear(), v.clear();
    double a = 0;
    for (std::uint32_t j = 0; j < d; ++j)
      if (u(rng) < density) c.push_back(j), v.push_back(g(rng)), a += v.back() * truth[j];
    const double y = loss == ml::cocoa_loss::hinge ? (a + 0.5 * g(rng) > 0 ? 1.0 : -1.0) : a + 0.3 * g(rng);
    out.add(c, v, y);
  }
  return out;
}

ml::cocoa_run train(const ml::cocoa_data& data, const ml::cocoa_trainer_options& o, std::uint32_t workers, int s = 0) {
  if (s == 0) {
    strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = workers});
    return ml::train_cocoa(sys, data, o);
  }
  strata::system<strata::ssp<strata::dynamic_bound>> sys({.nodes = 1, .workers_per_node = workers, .staleness = s});
  return ml::train_cocoa(sys, data, o);
}
}  // namespace

TEST_CASE("SDCA: ridge's optimum is the closed-form solution, the gap certifies it") {
  const auto data = random_problem(200, 6, 0.8, ml::cocoa_loss::squared, 3);
  ml::cocoa_objective o{ml::cocoa_loss::squared, 0.05, 0};
  const auto s = ml::sdca_solve(o, data, 1e-12);
  CHECK(s.gap() >= -1e-12 * s.primal);
  CHECK(s.gap() <= 1e-12 * s.primal);
  // (XᵀX/n + λI) w = Xᵀy/n: the residual of SDCA's w.
  const std::uint32_t d = data.d;
  const double n = static_cast<double>(data.size());
  std::vector<double> A(d * d, 0.0), b(d, 0.0);
  for (std::size_t i = 0; i < data.size(); ++i)
    for (auto k = data.offsets[i]; k < data.offsets[i + 1]; ++k) {
      b[data.cols[k]] += data.vals[k] * data.y[i] / n;
      for (auto l = data.offsets[i]; l < data.offsets[i + 1]; ++l) A[data.cols[k] * d + data.cols[l]] += data.vals[k] * data.vals[l] / n;
    }
  double worst = 0;
  for (std::uint32_t r = 0; r < d; ++r) {
    double lhs = o.lambda2 * s.w[r];
    for (std::uint32_t c = 0; c < d; ++c) lhs += A[r * d + c] * s.w[c];
    worst = std::max(worst, std::abs(lhs - b[r]));
  }
  // gap <= 1e-12 P and λ-strong convexity put w within sqrt(2 gap / λ) ~ 1e-6 of the optimum.
  CHECK(worst < 1e-6);
}

TEST_CASE("weak duality: D(alpha) <= P(w) at random dual points, for the hinge, ridge and the elastic net") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  for (auto loss : {ml::cocoa_loss::hinge, ml::cocoa_loss::squared})
    for (double l1 : {0.0, 0.02}) {
      const auto data = random_problem(80, 12, 0.4, loss, 5);
      ml::cocoa_objective o{loss, 0.03, l1};
      ml::cocoa_local s(data, 1);
      for (int trial = 0; trial < 20; ++trial) {
        std::vector<double> v(data.d, 0.0);
        for (std::size_t i = 0; i < data.size(); ++i) {
          s.alpha[i] = loss == ml::cocoa_loss::hinge ? data.y[i] * u(rng) : 4 * u(rng) - 2;
          data.axpy(i, s.alpha[i] / (o.lambda2 * 80), v.data());
        }
        const auto [p, d] = ml::cocoa_objectives(o, s, v);
        CHECK(d <= p + 1e-12);
      }
    }
}

TEST_CASE("CoCoA+ (BSP, adding, sigma' = K): the true dual rises every round and 1 and 4 workers reach the same optimum") {
  const auto data = random_problem(400, 30, 0.3, ml::cocoa_loss::hinge, 7);
  ml::cocoa_trainer_options o;
  o.objective = {ml::cocoa_loss::hinge, 0.01, 0};
  o.iterations = 60;
  const auto ref = ml::sdca_solve(o.objective, data, 1e-11);
  const auto r4 = train(data, o, 4);
  REQUIRE(r4.iterations.size() == 61);
  for (std::size_t it = 1; it < r4.iterations.size(); ++it) {
    const auto& a = r4.iterations[it - 1];
    const auto& b = r4.iterations[it];
    INFO("round " << it);
    CHECK(b.objective - b.metric >= a.objective - a.metric - 1e-12);  // D = P − gap never falls
    CHECK(b.metric >= 0);                                                // the gap is a gap
    CHECK(b.objective - b.metric <= ref.primal + 1e-12);                 // no dual above the optimum
  }
  CHECK(r4.gap() == doctest::Approx(r4.iterations.back().metric).epsilon(1e-9));
  o.iterations = 3000;
  o.tolerance = 1e-5;  // the hinge's dual converges sublinearly: 1e-6 takes ~4,000 rounds here
  const auto c4 = train(data, o, 4);
  INFO("rounds " << c4.rounds << " gap " << c4.gap() << " reference " << ref.primal << " (gap " << ref.gap() << ")");
  CHECK(c4.converged);
  CHECK(c4.primal == doctest::Approx(ref.primal).epsilon(1e-5));
  CHECK(c4.iterations.size() == c4.rounds + 1);
  CHECK(c4.steps == std::uint64_t{c4.rounds} * data.size());
}

TEST_CASE("CoCoA+ with one worker is serial SDCA round for round, and SSP's stale reads still reach the optimum") {
  const auto data = random_problem(150, 10, 0.5, ml::cocoa_loss::squared, 9);
  ml::cocoa_trainer_options o;
  o.objective = {ml::cocoa_loss::squared, 0.02, 0.01};
  o.iterations = 40;
  o.seed = 1;
  const auto r1 = train(data, o, 1);
  // The same steps in one loop: the trainer's one part is the whole data in the file's order,
  // with the generator the trainer gives worker 0.
  ml::cocoa_local s(data, o.seed * 0x9e3779b97f4a7c15ULL + 1);
  std::vector<double> v(data.d, 0.0), w(data.d, 0.0);
  for (std::uint32_t r = 0; r < o.iterations; ++r) {
    ml::cocoa_primal_of(v, o.objective.kappa(), w);
    s.solve(o.objective, w, 1.0, data.size(), data.size());
    s.commit(1.0);
    for (std::size_t j = 0; j < v.size(); ++j) v[j] += s.dv[j];
  }
  const auto [p, d] = ml::cocoa_objectives(o.objective, s, v);
  CHECK(r1.primal == doctest::Approx(p).epsilon(1e-12));
  CHECK(r1.dual == doctest::Approx(d).epsilon(1e-12));

  o.iterations = 3000;
  o.tolerance = 1e-7;
  const auto ref = ml::sdca_solve(o.objective, data, 1e-11);
  const auto ssp = train(data, o, 3, 2);
  INFO("ssp rounds " << ssp.rounds << " gap " << ssp.gap());
  CHECK(ssp.converged);
  CHECK(ssp.primal == doctest::Approx(ref.primal).epsilon(2e-7));
  std::int64_t smax = 0;
  for (const auto& it : ssp.iterations) smax = std::max(smax, it.staleness_max());
  CHECK(smax <= 2);
}

TEST_CASE("CoCoA+ settings and data no run can use are refused with the reason") {
  ml::cocoa_trainer_options o;
  o.objective.lambda2 = 0;
  CHECK_THROWS_WITH_AS(ml::check_cocoa_options(o), doctest::Contains("strongly convex"), strata::error);
  o.objective.lambda2 = 1e-3;
  o.tolerance = 1e-6;
  o.eval_every = 0;
  CHECK_THROWS_WITH_AS(ml::check_cocoa_options(o), doctest::Contains("eval-every must be > 0"), strata::error);
  o.eval_every = 1;
  o.local_passes = std::nan("");
  CHECK_THROWS_WITH_AS(ml::check_cocoa_options(o), doctest::Contains("local passes"), strata::error);
  strata::ml::io::libsvm_data raw;
  raw.labels = {1, 0};
  raw.row_offsets = {0, 0, 0};
  CHECK_THROWS_WITH_AS(ml::cocoa_prepare(raw, {ml::cocoa_loss::hinge, 1e-3, 0}, {}, "f.svm"),
                       doctest::Contains("f.svm: example 2 has label 0"), strata::error);
  const auto b = ml::cocoa_prepare(raw, {ml::cocoa_loss::hinge, 1e-3, 0}, {.binarize = true}, "f.svm");  // 0/1 labels made ±1
  CHECK(b.y == std::vector<double>{1.0, -1.0});
}

TEST_CASE("CoCoA+ elastic m: alpha and v carry across segments (the true dual never falls), workers change, the optimum is reached") {
  const auto data = random_problem(300, 20, 0.4, ml::cocoa_loss::squared, 13);
  ml::cocoa_trainer_options o;
  o.objective = {ml::cocoa_loss::squared, 0.02, 0};
  o.iterations = 400;
  o.tolerance = 1e-9;
  const auto ref = ml::sdca_solve(o.objective, data, 1e-12);
  strata::cost::elastic_policy policy;
  std::vector<std::uint32_t> ran;
  const auto segment = [&](std::uint32_t m, const ml::cocoa_trainer_options& so) {
    ran.push_back(m);
    strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = m});
    return ml::train_cocoa(sys, data, so);
  };
  const auto r = ml::train_cocoa_elastic(data, o, {.workers = {1, 2, 4}, .every = 5, .count_switches = true}, policy, segment);
  REQUIRE(r.segments.size() >= 2);
  CHECK(ran.front() == 4);  // the widest first
  CHECK(ran[1] == 2);       // then exploration scales in
  CHECK(r.converged);
  CHECK(r.primal == doctest::Approx(ref.primal).epsilon(1e-8));
  REQUIRE(r.iterations.size() == r.rounds + 1);
  for (std::size_t it = 1; it < r.iterations.size(); ++it) {
    const auto& a = r.iterations[it - 1];
    const auto& b = r.iterations[it];
    INFO("round " << it);
    CHECK(b.iteration == a.iteration + 1);
    CHECK(b.elapsed_s >= a.elapsed_s);
    CHECK(b.objective - b.metric >= a.objective - a.metric - 1e-12);  // D rises across segment boundaries too
  }
  for (std::size_t k = 1; k < r.segments.size(); ++k) CHECK(r.segments[k].first == r.segments[k - 1].last + 1);
  // A start state of the wrong size is refused.
  std::vector<double> short_alpha(3, 0.0), v(data.d, 0.0);
  auto bad = o;
  bad.start_alpha = &short_alpha, bad.start_v = &v;
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 1});
  CHECK_THROWS_WITH_AS(ml::train_cocoa(sys, data, bad), doctest::Contains("the start state has 3 alphas"), strata::error);
}

TEST_CASE("elastic policy: predicts each m's time to the target from its segments and picks the fastest, keeping m within the margin") {
  namespace cost = strata::cost;
  // Segment 1 at m = 4: 0.01 s per round, log gap falls 0.1 per round; segment 2 at m = 2: 0.02 s, 0.3 per round.
  std::vector<strata::iteration_record> trace;
  double t = 0, lg = 0;
  for (std::uint32_t i = 0; i <= 20; ++i) {
    strata::iteration_record r;
    r.iteration = i;
    if (i > 0) t += i <= 10 ? 0.01 : 0.02, lg -= i <= 10 ? 0.1 : 0.3;
    r.elapsed_s = t;
    r.metric = std::exp(lg);
    r.objective = 1;
    trace.push_back(r);
  }
  std::vector<cost::probe_point> cands(3);
  cands[0].workers = 1, cands[1].workers = 2, cands[2].workers = 4;
  std::vector<cost::segment> segs{{cands[2], 1, 10, ""}, {cands[1], 11, 20, ""}};
  cost::adaptive_input in;
  in.trace = trace, in.segments = segs, in.candidates = cands;
  in.target = std::exp(lg - 3.0);  // 3 more in log: m=2 needs 10 rounds (0.2 s), m=4 30 rounds (0.3 s)
  const auto c = cost::elastic_policy().choose(in);
  // m = 1 is unseen: t(m) = θ0 + θ1/m through (4, 0.01), (2, 0.02) gives 0.04 s; ρ(m) = θ0 + θ1/m with θ >= 0 fits
  // (4, 0.1), (2, 0.3) with θ0 = 0, θ1 = 0.175/0.3125 = 0.56: 3/0.56 rounds, 0.214 s. m = 2 (0.2 s) stays.
  CHECK(c.config.workers == 2);
  REQUIRE(c.estimates.size() == 3);
  CHECK(c.estimates[1].seconds == doctest::Approx(0.2));
  CHECK(c.estimates[2].seconds == doctest::Approx(0.3));
  CHECK(c.estimates[0].seconds == doctest::Approx(0.04 * 3 / 0.56));
  in.target = 0;
  CHECK_THROWS_WITH_AS(cost::elastic_policy().choose(in), doctest::Contains("target must be finite and > 0"), strata::error);
}

}  // namespace test_ml_cocoa
