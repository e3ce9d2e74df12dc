// Lasso (include/strata/ml/lasso.hpp, apps/trainers/lasso_trainer.hpp): the sequential solver's
// optimality conditions, STRADS coordinate descent with every scheduler, 1-4 workers and
// pipelining against it (objective within 1e-6 relative, same support, duality gap within
// 1e-6 F), a dependency filter at rho = 1 equal to no filter, and bad input. The comparison
// with scikit-learn on the diabetes data is tests/ml/lasso_reference.py (ctest lasso.sklearn).
#include <doctest/doctest.h>

#include <strata/ml/lasso.hpp>
#include <trainers/lasso_trainer.hpp>
#include <strata/sched/schedulers.hpp>
#include <strata/strata.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <random>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_ml_lasso {

namespace ml = strata::ml;
namespace sc = strata::sched;

namespace {

/// n x d, columns sharing a common factor (pairwise correlation about 0.5, two pairs near 0.95),
/// y from 5 non-zero coefficients plus noise; optionally a column of zeros.
ml::io::libsvm_data synthetic(std::uint32_t n = 150, std::uint32_t d = 25, bool zero_column = false, std::uint64_t seed = 4) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 1);
  ml::io::libsvm_data data;
  data.num_features = d;
  for (std::uint32_t i = 0; i < n; ++i) {
    const double common = g(rng);
    std::vector<double> x(d);
    for (std::uint32_t j = 0; j < d; ++j) x[j] = g(rng) + common;
    x[1] = x[0] + 0.3 * g(rng);
    x[3] = x[2] + 0.3 * g(rng);
    if (zero_column) x[d - 1] = 0;
    double y = 2 * x[0] - 1.5 * x[2] + x[5] + 0.5 * x[9] - 0.8 * x[14] + g(rng);
    data.labels.push_back(y);
    for (std::uint32_t j = 0; j < d; ++j) {
      data.indices.push_back(j);
      data.values.push_back(x[j]);
    }
    data.row_offsets.push_back(data.indices.size());
  }
  return data;
}

ml::lasso_problem problem(bool zero_column = false) {
  return ml::lasso_problem::from(synthetic(150, 25, zero_column), {.center_y = true, .standardize_x = true});
}

template <class S>
ml::lasso_run strads(const ml::lasso_problem& p, S s, double lambda, std::uint32_t workers, std::uint32_t batch = 1,
                     std::uint32_t depth = 1) {
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = workers});
  ml::lasso_trainer_options o;
  o.lambda = lambda;
  o.batch = batch;
  o.depth = depth;
  o.tolerance = 1e-9;
  o.rounds = 200000;
  return ml::train_lasso(sys, p, s, o);
}

void same_optimum(const ml::lasso_run& r, const ml::lasso_solution& ref, const char* what) {
  INFO(std::string(what) << ": F " << r.final_eval.objective << " vs " << ref.eval.objective << ", gap " << r.final_eval.gap
            << ", rounds " << r.rounds.rounds);
  CHECK(std::abs(r.final_eval.objective - ref.eval.objective) <= 1e-6 * ref.eval.objective);
  CHECK(r.final_eval.gap <= 1e-6 * r.final_eval.objective);
  REQUIRE(r.beta.size() == ref.beta.size());
  for (std::size_t j = 0; j < ref.beta.size(); ++j) CHECK(((r.beta[j] != 0) == (ref.beta[j] != 0)));
}

}  // namespace

TEST_CASE("lasso: the sequential solver meets the optimality conditions") {
  const auto p = problem();
  CHECK(p.n == 150);
  CHECK(p.d == 25);
  for (double s : p.sq_norm) CHECK(s == doctest::Approx(1.0));  // standardised: ||x_j||^2 = n
  const double lmax = p.lambda_max();
  // At lambda_max, beta = 0 is optimal; just below, something enters.
  CHECK(ml::lasso_cd(p, lmax).beta == std::vector<double>(25, 0.0));
  const auto s = ml::lasso_cd(p, 0.05 * lmax);
  CHECK(s.eval.gap <= 1e-9 * s.eval.objective);
  // KKT: x_j'r/n = lambda sign(beta_j) on the support, |x_j'r/n| <= lambda off it.
  const auto r = p.residual(s.beta);
  const double lambda = 0.05 * lmax;
  int support = 0;
  for (std::uint32_t j = 0; j < p.d; ++j) {
    const double g = p.col_dot(j, r) / p.n;
    if (s.beta[j] != 0) {
      ++support;
      CHECK(g == doctest::Approx(lambda * (s.beta[j] > 0 ? 1 : -1)).epsilon(1e-4));
    } else {
      CHECK(std::abs(g) <= lambda * (1 + 1e-6));
    }
  }
  CHECK(support >= 5);
  CHECK(s.beta[0] > 0);
  CHECK(s.beta[2] < 0);
}

TEST_CASE("lasso by STRADS: every scheduler, 1-4 workers and pipelining reach the sequential optimum") {
  const auto p = problem();
  const double lambda = 0.05 * p.lambda_max();
  const auto ref = ml::lasso_cd(p, lambda, 1e-12);
  same_optimum(strads(p, sc::round_robin{}, lambda, 1), ref, "round_robin, 1 worker");
  same_optimum(strads(p, sc::round_robin{}, lambda, 4), ref, "round_robin, 4 workers");
  same_optimum(strads(p, sc::uniform_random(3), lambda, 2), ref, "uniform_random, 2 workers");
  same_optimum(strads(p, sc::priority({.p = 1}), lambda, 2), ref, "priority p=1, 2 workers");
  same_optimum(strads(p, sc::priority({.p = 2}), lambda, 3), ref, "priority p=2, 3 workers");
  same_optimum(strads(p, sc::dependency_filter<sc::priority>(sc::priority{}, {.rho = 0.5}), lambda, 2, 4), ref,
               "priority + dependency filter, batch 4");
  // Pipelined, a push misses the changes of the rounds in flight: the dependency filter keeps
  // variables correlated with those out of the round (without it, round robin at depth 3
  // diverges on these correlated columns).
  const auto piped = strads(p, sc::dependency_filter<sc::round_robin>(sc::round_robin{}, {.rho = 0.75, .oversample = 4}),
                            lambda, 2, 1, 3);
  same_optimum(piped, ref, "round_robin + dependency filter, pipelined depth 3");
  CHECK(piped.rounds.staleness.stats().max() == 2);  // the pipelining staleness is measured
}

TEST_CASE("lasso by STRADS: a dependency filter with rho = 1 (oversample 1) is no filter") {
  const auto p = problem();
  const double lambda = 0.1 * p.lambda_max();
  const auto a = strads(p, sc::uniform_random(11), lambda, 2, 3);
  const auto b = strads(p, sc::dependency_filter<sc::uniform_random>(sc::uniform_random(11), {.rho = 1.0, .oversample = 1}),
                        lambda, 2, 3);
  CHECK(a.rounds.rounds == b.rounds.rounds);
  CHECK(a.beta == b.beta);
}

TEST_CASE("lasso by STRADS: the trace records F, the gap and nnz, and the gap shrinks") {
  const auto p = problem();
  const auto r = strads(p, sc::round_robin{}, 0.05 * p.lambda_max(), 2);
  REQUIRE(r.points.size() >= 3);
  CHECK(r.points.front().round == 0);
  CHECK(r.points.front().nnz == 0);
  CHECK(r.points.back().eval.gap < r.points.front().eval.gap * 1e-6);
  for (std::size_t i = 1; i < r.points.size(); ++i) CHECK(r.points[i].eval.objective <= r.points[i - 1].eval.objective + 1e-12);
  const auto t = r.trace();
  REQUIRE(t.size() == r.points.size());
  CHECK(t.back().metric_name == "gap");
}

TEST_CASE("lasso: bad input gets a clear error, a column of zeros stays at 0") {
  const auto p = problem(true);
  const auto s = ml::lasso_cd(p, 0.05 * p.lambda_max());
  CHECK(s.beta.back() == 0.0);
  CHECK(std::isfinite(s.eval.objective));
  const auto r = strads(p, sc::round_robin{}, 0.05 * p.lambda_max(), 2);
  CHECK(r.beta.back() == 0.0);
  CHECK(std::isfinite(r.final_eval.objective));
  CHECK_THROWS_WITH_AS(ml::lasso_cd(p, 0.0), doctest::Contains("lambda must be"), strata::error);
  CHECK_THROWS_WITH_AS(ml::lasso_cd(p, -1.0), doctest::Contains("lambda must be"), strata::error);
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 1});
  sc::round_robin rr;
  ml::lasso_trainer_options o;
  o.lambda = -2;
  CHECK_THROWS_WITH_AS(ml::train_lasso(sys, p, rr, o), doctest::Contains("lambda must be"), strata::error);
  ml::io::libsvm_data empty;
  CHECK_THROWS_WITH_AS(ml::lasso_problem::from(empty, {}), doctest::Contains("empty"), strata::error);
}

TEST_CASE("lasso by STRADS: stepping every correlated coefficient at once diverges, reported as an error, no hang") {
  // 25 columns sharing a common factor (pairwise correlation ~0.5): the largest eigenvalue of
  // XᵀX/n is ~13, far over Shotgun's limit for 25 parallel steps, so the iterates blow up.
  const auto p = problem();
  try {
    strads(p, sc::round_robin{}, 0.01 * p.lambda_max(), 2, /*batch=*/25);
    FAIL("a run with all 25 correlated coefficients per round converged");
  } catch (const strata::error& e) {
    CHECK(e.code() == strata::errc::diverged);
    CHECK(std::string(e.what()).find("lasso diverged at round") != std::string::npos);
  }
  // The same batch behind a dependency filter that admits only nearly orthogonal columns converges.
  const auto ref = ml::lasso_cd(p, 0.01 * p.lambda_max(), 1e-12);
  same_optimum(strads(p, sc::dependency_filter<sc::round_robin>({}, {.rho = 0.3, .oversample = 25}), 0.01 * p.lambda_max(), 2, 25),
               ref, "filtered, batch 25");
}

TEST_CASE("lasso by STRADS: settings that cannot run are refused before the run, a capped run says it did not converge") {
  const auto p = problem();
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 1});
  sc::round_robin rr;
  const auto refused = [&](auto set, const char* what) {
    ml::lasso_trainer_options o;
    set(o);
    CHECK_THROWS_WITH_AS(ml::train_lasso(sys, p, rr, o), doctest::Contains(what), strata::error);
  };
  refused([](auto& o) { o.lambda = std::nan(""); }, "lambda must be > 0");
  refused([](auto& o) { o.lambda_fraction = std::nan(""); }, "lambda_fraction must be");
  refused([](auto& o) { o.tolerance = -1; }, "tolerance must be");
  refused([](auto& o) { o.rounds = 0; }, "rounds must be >= 1");
  refused([](auto& o) { o.depth = ml::lasso_max_depth + 1; }, "depth must be between 1 and 64");
  ml::lasso_trainer_options o;
  o.rounds = 2;
  o.tolerance = 1e-12;
  const auto capped = ml::train_lasso(sys, p, rr, o);
  CHECK(capped.rounds.rounds == 2);
  CHECK_FALSE(capped.converged);
  CHECK(strads(p, sc::round_robin{}, 0.05 * p.lambda_max(), 1).converged);
}

TEST_CASE("lasso by STRADS: the per-round record stays bounded however many rounds run, and the counts stay exact") {
  const auto p = problem();
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 1});
  sc::round_robin rr;
  ml::lasso_trainer_options o;
  o.rounds = 3 * sc::options{}.max_records + 7;
  o.tolerance = 0;  // every round
  o.evaluate_every = 1000;
  const auto r = ml::train_lasso(sys, p, rr, o);
  CHECK(r.rounds.rounds == o.rounds);
  CHECK(r.updates == o.rounds);  // batch 1: one step a round, counted over every round, recorded or not
  CHECK(r.rounds.per_round.size() <= sc::options{}.max_records);
  REQUIRE(r.rounds.per_round.size() >= 2);
  const auto k = r.rounds.per_round[1].round;  // the stride: rounds 0, k, 2k, ...
  for (std::size_t i = 0; i < r.rounds.per_round.size(); ++i) CHECK(r.rounds.per_round[i].round == i * k);
}

TEST_CASE("lasso by STRADS: the trace's elapsed_s and the summary's seconds share one clock") {
  const auto p = problem();
  const auto r = strads(p, sc::round_robin{}, 0.05 * p.lambda_max(), 2);
  REQUIRE(!r.points.empty());
  for (const auto& pt : r.points) CHECK(pt.elapsed_s <= r.rounds.seconds);  // both from the coordinator's start
  for (const auto& rec : r.rounds.per_round) CHECK(rec.elapsed_s <= r.rounds.seconds);
}

TEST_CASE("lasso by STRADS: a run that diverges from deep pipelining names the depth, not the batch") {
  const auto p = problem();
  try {
    strads(p, sc::round_robin{}, 0.01 * p.lambda_max(), 2, /*batch=*/1, /*depth=*/16);
    FAIL("round robin at depth 16 over correlated columns converged");
  } catch (const strata::error& e) {
    CHECK(e.code() == strata::errc::diverged);
    const std::string what = e.what();
    CHECK(what.find("depth 16") != std::string::npos);
    CHECK(what.find("smaller depth") != std::string::npos);
  }
}

TEST_CASE("lasso: standardising keeps a wide sparse design sparse, and what cannot fit is refused up front") {
  // 40 rows, 3M columns, 3 stored values: standardising used to densify 40 x 3M (1.4 GB) and was
  // refused; sparse, it holds the 3 values and d-long per-column state.
  ml::io::libsvm_data wide;
  wide.num_features = 3'000'000;
  for (std::uint32_t i = 0; i < 40; ++i) {
    wide.labels.push_back(i % 7);
    if (i < 3) wide.indices.push_back(wide.num_features - 1 - i), wide.values.push_back(1.0 + i);
    wide.row_offsets.push_back(wide.indices.size());
  }
  const auto ps = ml::lasso_problem::from(wide, {.standardize_x = true});
  CHECK(ps.nnz() == 3);
  CHECK(ps.sq_norm[wide.num_features - 1] == doctest::Approx(1.0));
  CHECK(ps.sq_norm[0] == 0.0);  // an empty column stays 0
  // Unstandardised it stays sparse too, but an evaluation (Xᵀr over every column) would exceed the
  // message limit: refused before the run, naming the largest column count.
  const auto p = ml::lasso_problem::from(wide, {});
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 1});
  sc::round_robin rr;
  ml::lasso_trainer_options o;
  o.lambda = 0.1;
  try {
    (void)ml::train_lasso(sys, p, rr, o);
    FAIL("not refused");
  } catch (const strata::error& e) {
    CHECK(e.code() == strata::errc::refused);
    const std::string what = e.what();
    CHECK(what.find("over the message limit") != std::string::npos);
    CHECK(what.find("at most 2096640 columns") != std::string::npos);
    CHECK(what.find("malformed input") == std::string::npos);
  }
  CHECK(ml::lasso_max_columns(16u << 20) == 2096640);
}

namespace {
/// n x d with about a third of the entries stored (non-zero), a sparse linear target plus noise.
ml::io::libsvm_data sparse_synthetic(std::uint32_t n, std::uint32_t d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  ml::io::libsvm_data data;
  data.num_features = d;
  for (std::uint32_t i = 0; i < n; ++i) {
    double y = g(rng);
    for (std::uint32_t j = 0; j < d; ++j) {
      if (u(rng) > 0.35) continue;
      const double x = 1 + 2 * u(rng) + (j % 3);  // non-zero means: centring matters
      data.indices.push_back(j), data.values.push_back(x);
      if (j == 0) y += 3 * x;
      if (j == 4) y -= 2 * x;
      if (j == 7) y += x;
    }
    data.labels.push_back(y);
    data.row_offsets.push_back(data.indices.size());
  }
  return data;
}

/// The same data standardised by filling every entry: (x − m)·s, stored for every row.
ml::io::libsvm_data densely_standardised(const ml::io::libsvm_data& in) {
  const std::uint32_t n = static_cast<std::uint32_t>(in.num_rows()), d = in.num_features;
  std::vector<double> x(std::size_t{n} * d, 0.0);
  for (std::uint32_t i = 0; i < n; ++i)
    for (auto k = in.row_offsets[i]; k < in.row_offsets[i + 1]; ++k) x[std::size_t{i} * d + in.indices[k]] = in.values[k];
  for (std::uint32_t j = 0; j < d; ++j) {
    double m = 0, s = 0;
    for (std::uint32_t i = 0; i < n; ++i) m += x[std::size_t{i} * d + j];
    m /= n;
    for (std::uint32_t i = 0; i < n; ++i) s += (x[std::size_t{i} * d + j] - m) * (x[std::size_t{i} * d + j] - m);
    const double scale = s > 0 ? std::sqrt(n / s) : 0.0;
    for (std::uint32_t i = 0; i < n; ++i) x[std::size_t{i} * d + j] = (x[std::size_t{i} * d + j] - m) * scale;
  }
  ml::io::libsvm_data out;
  out.num_features = d;
  out.labels = in.labels;
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t j = 0; j < d; ++j) out.indices.push_back(j), out.values.push_back(x[std::size_t{i} * d + j]);
    out.row_offsets.push_back(out.indices.size());
  }
  return out;
}

void same_coefficients(const std::vector<double>& a, const std::vector<double>& b, double rel) {
  REQUIRE(a.size() == b.size());
  double scale = 0;
  for (double v : b) scale = std::max(scale, std::abs(v));
  for (std::size_t j = 0; j < a.size(); ++j) {
    INFO("coefficient " << j << ": " << a[j] << " vs " << b[j]);
    CHECK(std::abs(a[j] - b[j]) <= rel * scale);
  }
}
}  // namespace

TEST_CASE("lasso: sparse standardisation gives the dense standardisation's problem, path and optimum") {
  const auto data = sparse_synthetic(120, 12, 11);
  const auto sparse = ml::lasso_problem::from(data, {.center_y = true, .standardize_x = true});
  const auto dense = ml::lasso_problem::from(densely_standardised(data), {.center_y = true});
  CHECK(sparse.nnz() == data.nnz());  // nothing filled in
  CHECK(dense.nnz() == std::uint64_t{120} * 12);
  CHECK(sparse.lambda_max() == doctest::Approx(dense.lambda_max()).epsilon(1e-12));
  for (std::uint32_t j = 0; j < sparse.d; ++j) {
    CHECK(sparse.sq_norm[j] == doctest::Approx(dense.sq_norm[j]).epsilon(1e-12));
    for (std::uint32_t k = 0; k < sparse.d; ++k) CHECK(sparse.col_cosine(j, k) == doctest::Approx(dense.col_cosine(j, k)).epsilon(1e-10));
  }
  const double lambda = 0.05 * dense.lambda_max();
  // The sequential solver: the same optimum, F and gap to ~1e-9.
  const auto a = ml::lasso_cd(sparse, lambda, 1e-13), b = ml::lasso_cd(dense, lambda, 1e-13);
  CHECK(a.eval.objective == doctest::Approx(b.eval.objective).epsilon(1e-9));
  same_coefficients(a.beta, b.beta, 1e-9);
  // F of one β both ways, and of the residual the problems build.
  const auto ea = ml::lasso_evaluate(sparse, b.beta, lambda), eb = ml::lasso_evaluate(dense, b.beta, lambda);
  CHECK(ea.objective == doctest::Approx(eb.objective).epsilon(1e-12));
  CHECK(std::abs(ea.gap - eb.gap) <= 1e-9 * eb.objective);
  // STRADS rounds with 3 workers (rows split: the centring's sums are per worker), a fixed number
  // of rounds: the same iterates, evaluation by evaluation.
  auto rounds = [&](const ml::lasso_problem& p) {
    strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 3});
    sc::round_robin rr;
    ml::lasso_trainer_options o;
    o.lambda = lambda;
    o.rounds = 300;
    o.batch = 2;
    o.tolerance = 0;
    o.evaluate_every = 25;
    return ml::train_lasso(sys, p, rr, o);
  };
  const auto ra = rounds(sparse), rb = rounds(dense);
  same_coefficients(ra.beta, rb.beta, 1e-9);
  REQUIRE(ra.points.size() == rb.points.size());
  for (std::size_t k = 0; k < ra.points.size(); ++k) {
    INFO("evaluation " << k);
    CHECK(ra.points[k].eval.objective == doctest::Approx(rb.points[k].eval.objective).epsilon(1e-9));
    CHECK(ra.points[k].nnz == rb.points[k].nnz);
  }
  CHECK(ra.final_eval.objective == doctest::Approx(b.eval.objective).epsilon(1e-6));
}

TEST_CASE("lasso by STRADS, sequential batch steps: a whole-design round with one sweep is an epoch of cyclic CD") {
  // The workers push the batch's Gram entries and the coordinator steps the batch in order: round
  // k over all 25 columns (round robin, batch 25) must be epoch k of lasso_cd, to rounding.
  const auto p = problem();
  const double lambda = 0.02 * p.lambda_max();
  for (std::uint64_t k : {1, 3, 7}) {
    strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 2});
    sc::round_robin rr;
    ml::lasso_trainer_options o;
    o.lambda = lambda;
    o.batch = p.d;
    o.rounds = k;
    o.tolerance = 0;
    o.steps = ml::lasso_trainer_options::batch_steps::sequential;
    const auto r = ml::train_lasso(sys, p, rr, o);
    const auto cd = ml::lasso_cd(p, lambda, 0.0, k);
    INFO("rounds " << k);
    same_coefficients(r.beta, cd.beta, 1e-10);
  }
}

TEST_CASE("lasso by STRADS, sequential batch steps: every scheduler reaches the optimum with batches that diverge in parallel") {
  // Batch 25 of 25 correlated columns diverges with parallel steps (the test above); stepped one
  // after another from the pushed Gram entries it is exact.
  const auto p = problem();
  const double lambda = 0.01 * p.lambda_max();
  const auto ref = ml::lasso_cd(p, lambda, 1e-12);
  const auto seq = [&](auto s, std::uint32_t workers, std::uint32_t batch, std::uint32_t sweeps = 1, std::uint32_t depth = 1) {
    strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = workers});
    ml::lasso_trainer_options o;
    o.lambda = lambda;
    o.batch = batch;
    o.depth = depth;
    o.sweeps = sweeps;
    o.tolerance = 1e-9;
    o.rounds = 200000;
    o.steps = ml::lasso_trainer_options::batch_steps::sequential;
    return ml::train_lasso(sys, p, s, o);
  };
  same_optimum(seq(sc::round_robin{}, 2, 25), ref, "round_robin, batch 25, sequential");
  same_optimum(seq(sc::round_robin{}, 3, 25, 4), ref, "round_robin, batch 25, 4 sweeps");
  same_optimum(seq(sc::uniform_random(5), 2, 12), ref, "uniform_random, batch 12, sequential");
  same_optimum(seq(sc::priority({.p = 1}), 2, 12), ref, "priority, batch 12, sequential");
  same_optimum(seq(sc::priority({.p = 2}), 1, 25, 3), ref, "priority p=2, batch 25, 3 sweeps, 1 worker");
  // Centred (standardised sparse) columns: the Gram's rank-one centring term is the coordinator's.
  const auto data = sparse_synthetic(150, 30, 3);
  const auto ps = ml::lasso_problem::from(data, {.center_y = true, .standardize_x = true});
  const double ls = 0.02 * ps.lambda_max();
  const auto refs = ml::lasso_cd(ps, ls, 1e-12);
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 3});
  sc::priority pr;
  ml::lasso_trainer_options o;
  o.lambda = ls;
  o.batch = 30;
  o.tolerance = 1e-9;
  o.rounds = 100000;
  o.steps = ml::lasso_trainer_options::batch_steps::sequential;
  same_optimum(ml::train_lasso(sys, ps, pr, o), refs, "standardised sparse, priority batch 30, sequential, 3 workers");
}

TEST_CASE("lasso by STRADS: an evaluation tells a priority scheduler which zero coefficients would move") {
  // 2,000 columns, y built from 3: after the first round (evaluated), the priorities come from the
  // full gradient, so the scheduler draws the columns that violate the optimality conditions
  // (every column is observed at once: no sweep of the never-visited first), and the run reaches
  // the sequential optimum.
  ml::io::libsvm_data data;
  data.num_features = 2000;
  std::mt19937_64 rng(9);
  std::normal_distribution<double> g(0, 1);
  std::uniform_int_distribution<std::uint32_t> col(0, 1999);
  for (int i = 0; i < 300; ++i) {
    std::vector<std::uint32_t> cols;
    while (cols.size() < 40) {
      const auto c = col(rng);
      if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
    }
    std::sort(cols.begin(), cols.end());
    double y = g(rng);
    for (auto c : cols) {
      const double x = g(rng);
      data.indices.push_back(c), data.values.push_back(x);
      if (c == 17 || c == 901 || c == 1500) y += 3 * x;
    }
    data.labels.push_back(y);
    data.row_offsets.push_back(data.indices.size());
  }
  const auto p = ml::lasso_problem::from(data, {});
  const double lambda = 0.3 * p.lambda_max();
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 2});
  sc::priority pr;
  ml::lasso_trainer_options o;
  o.lambda = lambda;
  o.batch = 50;
  o.evaluate_every = 5;
  o.tolerance = 1e-8;
  o.rounds = 2000;
  o.steps = ml::lasso_trainer_options::batch_steps::sequential;
  const auto r = ml::train_lasso(sys, p, pr, o);
  const auto ref = ml::lasso_cd(p, lambda, 1e-12);
  same_optimum(r, ref, "priority over 2,000 columns");
  CHECK(r.converged);
  CHECK(r.rounds.rounds < 400);  // 171 at this seed
}

}  // namespace test_ml_lasso
