// The data-parallel trainers (apps/trainers): distributed MF against the sequential
// reference, LDA count invariants under every consistency model, LDA log-likelihood growth, and
// 1-worker BSP against 4-worker distributed runs. Small synthetic data; the whole file runs in
// a few seconds.
#include <doctest/doctest.h>

#include "../support/ml_data.hpp"
#include <trainers/lda_trainer.hpp>
#include <trainers/mf_trainer.hpp>
#include <strata/strata.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_ml_trainers {

namespace {

/// The synthetic ratings of tests/support/ml_data.hpp.
std::pair<strata::ml::io::rating_set, strata::ml::io::rating_set> synthetic_ratings(std::uint64_t seed = 7) { return strata_test::synthetic_ratings(seed); }

strata::ml::mf_trainer_options mf_opts() { return strata_test::small_mf_options(60); }

using strata_test::synthetic_corpus;

strata::ml::lda_trainer_options lda_opts() {
  strata::ml::lda_trainer_options o;
  o.topics = 4;
  o.iterations = 12;
  return o;
}

template <class C>
strata::ml::lda_run run_lda(std::uint32_t workers, const strata::ml::lda_corpus& c, strata::system_config cfg = {}) {
  cfg.nodes = 1;
  cfg.workers_per_node = workers;
  strata::system<C> sys(cfg);
  return strata::ml::train_lda(sys, c, lda_opts());
}

}  // namespace

TEST_CASE("distributed MF (4 workers, SSP and ESSP) agrees with the sequential reference within 0.05 RMSE") {
  const auto [train, test] = synthetic_ratings();
  // Sequential reference: ml::mf_reference (no biases, centred) with the same rank and λ.
  strata::ml::mf_options ref;
  ref.rank = 3;
  ref.lambda = 1;
  ref.eta = {0.03, 0.05};
  ref.epochs = 60;
  const auto r = strata::ml::mf_reference(train, ref);
  const double ref_rmse = r.model.rmse(test.ratings);
  const double mean_rmse = [&] {
    double s = 0;
    const double m = train.mean();
    for (const auto& x : test.ratings) s += (x.value - m) * (x.value - m);
    return std::sqrt(s / static_cast<double>(test.size()));
  }();
  REQUIRE(ref_rmse < 0.9 * mean_rmse);  // the reference learned something

  auto o = mf_opts();
  o.iterations = 2 * ref.epochs;  // the same number of epochs as the reference
  strata::system<strata::ssp<strata::dynamic_bound>> s1({.nodes = 1, .workers_per_node = 4, .staleness = 2});
  const auto a = strata::ml::train_mf(s1, train, test, o);
  strata::system<strata::essp<strata::dynamic_bound>> s2({.nodes = 1, .workers_per_node = 4, .staleness = 2});
  const auto b = strata::ml::train_mf(s2, train, test, o);
  INFO("reference " << ref_rmse << ", ssp " << a.final_rmse << ", essp " << b.final_rmse << ", mean " << mean_rmse);
  MESSAGE("MF synthetic: reference " << ref_rmse << ", ssp " << a.final_rmse << ", essp " << b.final_rmse << ", mean " << mean_rmse);
  CHECK(a.final_rmse < ref_rmse + 0.05);
  CHECK(b.final_rmse < ref_rmse + 0.05);
  CHECK(a.iterations.size() == o.iterations + 1);
  CHECK(a.iterations.back().metric < a.iterations.front().metric);
  CHECK(a.sgd_updates == ref.epochs * train.size());
}

TEST_CASE("MF weighted-lambda: the objective is the count-weighted loss of the final model, 1 and 4 BSP workers agree") {
  const auto [train, test] = synthetic_ratings(5);
  auto o = mf_opts();
  o.weighted_lambda = true;
  o.lambda = 0.05;  // per step, as in LIBMF
  o.keep_model = true;
  o.eval_every = o.iterations;  // the last iteration's objective is the true model's
  strata::system<strata::bsp> one({.nodes = 1, .workers_per_node = 1});
  const auto a = strata::ml::train_mf(one, train, test, o);
  const auto& m = a.model;
  REQUIRE(m.num_users == train.num_users);
  // The loss Σ (r − r̂)² + λ Σ n_u ‖u‖² + λ Σ n_i ‖v_i‖², from the model and the data alone.
  std::vector<double> n_user(m.num_users, 0), n_item(m.num_items, 0);
  double sq = 0;
  for (const auto& r : train.ratings) {
    const double e = r.value - m.predict(r.user, r.item);
    sq += e * e;
    ++n_user[r.user], ++n_item[r.item];
  }
  double weighted = 0, plain = 0;
  for (std::uint32_t u = 0; u < m.num_users; ++u)
    weighted += n_user[u] * strata::ml::mf_sq_norm(m.user(u)), plain += strata::ml::mf_sq_norm(m.user(u));
  for (std::uint32_t i = 0; i < m.num_items; ++i)
    weighted += n_item[i] * strata::ml::mf_sq_norm(m.item(i)), plain += strata::ml::mf_sq_norm(m.item(i));
  const double reported = a.iterations.back().objective;
  INFO("reported " << reported << ", weighted loss " << sq + o.lambda * weighted << ", plain loss " << sq + o.lambda * plain);
  CHECK(reported == doctest::Approx(sq + o.lambda * weighted).epsilon(1e-4));
  CHECK(std::abs(reported - (sq + o.lambda * plain)) > 1e-3 * reported);  // the two forms are told apart
  CHECK(a.iterations.back().objective < a.iterations.front().objective);
  strata::system<strata::bsp> four({.nodes = 2, .workers_per_node = 2});
  const auto b = strata::ml::train_mf(four, train, test, o);
  CHECK(std::abs(a.final_rmse - b.final_rmse) < 0.05);
  CHECK(b.iterations.back().objective == doctest::Approx(reported).epsilon(0.05));
}

TEST_CASE("MF user order (LIBMF's partial random order) trains as well as the shuffled order, ESSP and BSP alike") {
  const auto [train, test] = synthetic_ratings(13);
  auto shuffled = mf_opts();
  auto ordered = mf_opts();
  ordered.user_order = true;
  strata::system<strata::bsp> s1({.nodes = 1, .workers_per_node = 2});
  const auto a = strata::ml::train_mf(s1, train, test, shuffled);
  strata::system<strata::bsp> s2({.nodes = 1, .workers_per_node = 2});
  const auto b = strata::ml::train_mf(s2, train, test, ordered);
  strata::system<strata::essp<2>> s3({.nodes = 1, .workers_per_node = 2});
  const auto c = strata::ml::train_mf(s3, train, test, ordered);
  INFO("shuffled " << a.final_rmse << ", user order bsp " << b.final_rmse << ", essp " << c.final_rmse << ", from "
                   << b.iterations.front().metric);
  CHECK(b.final_rmse < b.iterations.front().metric - 0.1);  // it learns
  CHECK(std::abs(a.final_rmse - b.final_rmse) < 0.05);
  CHECK(std::abs(b.final_rmse - c.final_rmse) < 0.05);
  CHECK(b.sgd_updates == a.sgd_updates);  // every rating once per epoch in both orders
}

TEST_CASE("MF: 1-worker BSP, 4-worker BSP and ESSP reach the same quality within 0.05 RMSE, and async learns") {
  const auto [train, test] = synthetic_ratings(11);
  strata::system<strata::bsp> one({.nodes = 1, .workers_per_node = 1});
  const auto a = strata::ml::train_mf(one, train, test, mf_opts());
  strata::system<strata::bsp> four({.nodes = 2, .workers_per_node = 2});
  const auto b = strata::ml::train_mf(four, train, test, mf_opts());
  strata::system<strata::essp<2>> es({.nodes = 2, .workers_per_node = 2});
  const auto e = strata::ml::train_mf(es, train, test, mf_opts());
  // Async bounds nothing: on data this small one worker can finish all its iterations before
  // another starts (observed staleness up to 59 of 60 clocks), so its final RMSE varies from run
  // to run (0.65-0.87 seen here, against 0.69 for BSP and 0.84 for predicting the mean). Check
  // only that it learns at some point and loses no SGD step.
  strata::system<strata::async> as({.nodes = 1, .workers_per_node = 4});
  const auto c = strata::ml::train_mf(as, train, test, mf_opts());
  INFO("1-worker " << a.final_rmse << ", 4-worker bsp " << b.final_rmse << ", essp " << e.final_rmse << ", async "
                   << c.final_rmse << " (from " << c.iterations.front().metric << ")");
  CHECK(std::abs(a.final_rmse - b.final_rmse) < 0.05);
  CHECK(std::abs(a.final_rmse - e.final_rmse) < 0.05);
  double best = c.iterations.front().metric;
  for (const auto& it : c.iterations) best = std::min(best, it.metric);
  CHECK(best < c.iterations.front().metric - 0.02);
  CHECK(std::isfinite(c.final_rmse));
  CHECK(c.sgd_updates == std::uint64_t{mf_opts().iterations / mf_opts().clocks_per_epoch} * train.size());
  CHECK(b.stats.min_clock_staleness.stats().max() == 0);
}

TEST_CASE_TEMPLATE("LDA count invariants hold and loglik rises under every model", C, strata::bsp,
                   strata::ssp<2>, strata::essp<2>, strata::vap<40.0>, strata::async) {
  const auto corpus = synthetic_corpus();
  const auto r = run_lda<C>(4, corpus);
  INFO(r.invariant_error);
  CHECK(r.invariants_ok);
  REQUIRE(r.iterations.size() == lda_opts().iterations + 1);
  CHECK(r.final_loglik > r.iterations.front().metric);
  CHECK(r.tokens_sampled == lda_opts().iterations * corpus.tokens());
}

TEST_CASE("LDA: 4-worker BSP loglik per iteration is the exact loglik, and 1-worker BSP vs 4-worker ESSP agree") {
  const auto corpus = synthetic_corpus(5);
  const auto one = run_lda<strata::bsp>(1, corpus);
  const auto four = run_lda<strata::bsp>(4, corpus);
  const auto essp = run_lda<strata::essp<2>>(4, corpus);
  REQUIRE(one.invariants_ok);
  REQUIRE(four.invariants_ok);
  REQUIRE(essp.invariants_ok);
  // Under BSP the per-iteration value is exact: the last one equals the final LL from the tables.
  CHECK(four.iterations.back().metric == doctest::Approx(four.final_loglik).epsilon(1e-9));
  CHECK(one.iterations.front().metric < one.final_loglik);
  // Same data, same K: final quality within 3% of each other.
  INFO("1-worker " << one.final_loglik << ", 4-worker bsp " << four.final_loglik << ", essp " << essp.final_loglik);
  CHECK(std::abs(four.final_loglik - one.final_loglik) < 0.03 * std::abs(one.final_loglik));
  // ESSP's result depends on timing: over 17 runs its final LL spread from 3.05% below to 1.5% above
  // the 1-worker value on this tiny corpus, so its tolerance is 5%.
  CHECK(std::abs(essp.final_loglik - one.final_loglik) < 0.05 * std::abs(one.final_loglik));
}

TEST_CASE_TEMPLATE("--eval-every: the true model's objective at every k-th iteration and the last, null between, the last is the final figure",
                   C, strata::bsp, strata::ssp<2>, strata::essp<2>, strata::async) {
  const auto [train, test] = synthetic_ratings(5);
  auto o = mf_opts();
  o.iterations = 10;
  o.eval_every = 3;
  strata::system<C> sys({.nodes = 2, .workers_per_node = 2});
  const auto r = strata::ml::train_mf(sys, train, test, o);
  REQUIRE(r.iterations.size() == 11);
  for (std::uint32_t i = 0; i <= 10; ++i) {
    INFO("iteration " << i);
    const bool due = i == 0 || i % 3 == 0 || i == 10;
    CHECK(std::isfinite(r.iterations[i].metric) == due);
    CHECK(std::isfinite(r.iterations[i].objective) == due);
  }
  // The snapshot after the last clock holds every update: the same model the final RMSE is computed from.
  CHECK(r.iterations.back().metric == doctest::Approx(r.final_rmse).epsilon(1e-9));
  CHECK(r.iterations[9].objective < r.iterations[3].objective);
  // Snapshot reads are not the algorithm's: the recorded reads are those of the training alone.
  auto plain = o;
  plain.eval_every = 0;
  strata::system<C> again({.nodes = 2, .workers_per_node = 2});
  const auto q = strata::ml::train_mf(again, train, test, plain);
  std::uint64_t n1 = 0, n2 = 0;
  for (const auto& it : r.iterations) n1 += it.reads();
  for (const auto& it : q.iterations) n2 += it.reads();
  CHECK(n1 == n2);

  auto lo = lda_opts();
  lo.eval_every = 4;
  strata::system<C> ls({.nodes = 1, .workers_per_node = 3});
  const auto l = strata::ml::train_lda(ls, synthetic_corpus(), lo);
  REQUIRE(l.iterations.size() == lo.iterations + 1);
  for (std::uint32_t i = 0; i <= lo.iterations; ++i) {
    INFO("lda iteration " << i);
    CHECK(std::isfinite(l.iterations[i].objective) == (i % 4 == 0 || i == lo.iterations));
  }
  CHECK(l.invariants_ok);
  CHECK(l.iterations.back().objective == doctest::Approx(l.final_loglik).epsilon(1e-9));
}

TEST_CASE("MF rotation (DSGD): no item block trained by two workers in one clock, every rating once per epoch, one worker's quality") {
  const auto [train, test] = synthetic_ratings(11);
  const auto o = mf_opts();  // 60 clocks, 2 per epoch: 30 epochs
  const std::uint32_t epochs = o.iterations / o.clocks_per_epoch;
  strata::system<strata::bsp> one({.nodes = 1, .workers_per_node = 1});
  const auto a = strata::ml::train_mf(one, train, test, o);
  auto r = o;
  r.rotation = true;
  r.iterations = 3 * epochs;  // 3 workers: 3 clocks (sub-epochs) per epoch
  strata::system<strata::bsp> three({.nodes = 1, .workers_per_node = 3});
  const auto b = strata::ml::train_mf(three, train, test, r);
  strata::system<strata::essp<2>> es({.nodes = 1, .workers_per_node = 3});
  const auto e = strata::ml::train_mf(es, train, test, r);
  // The check can fail: data-parallel workers train the same item blocks in the same clock.
  strata::system<strata::bsp> dp({.nodes = 1, .workers_per_node = 3});
  const auto d = strata::ml::train_mf(dp, train, test, o);
  INFO("1 worker " << a.final_rmse << ", rotation bsp " << b.final_rmse << ", rotation essp " << e.final_rmse << ", data-parallel "
                   << d.final_rmse << " (" << d.block_conflicts << " conflicts)");
  CHECK(b.block_conflicts == 0);
  CHECK(e.block_conflicts == 0);
  CHECK(d.block_conflicts > 0);
  CHECK(b.sgd_updates == std::uint64_t{epochs} * train.size());
  CHECK(e.sgd_updates == std::uint64_t{epochs} * train.size());
  CHECK(std::abs(a.final_rmse - b.final_rmse) < 0.03);
  CHECK(std::abs(a.final_rmse - e.final_rmse) < 0.03);
  CHECK(b.final_rmse < b.iterations.front().metric - 0.1);
}

TEST_CASE("MF average_items: 12 workers' item steps averaged, not added: summed they diverge, averaged they reach one worker's RMSE within 0.1") {
  const auto [train, test] = synthetic_ratings(17);
  auto o = mf_opts();
  o.clocks_per_epoch = 1;
  o.iterations = 40;
  o.lr = 0.3;  // one worker still converges; 12 workers' summed item steps diverge
  auto avg = o;
  avg.average_items = true;
  // One worker: nothing to average, the same run step for step.
  {
    strata::system<strata::bsp> s1({.nodes = 1, .workers_per_node = 1}), s2({.nodes = 1, .workers_per_node = 1});
    const auto a = strata::ml::train_mf(s1, train, test, o);
    const auto b = strata::ml::train_mf(s2, train, test, avg);
    REQUIRE(a.iterations.size() == b.iterations.size());
    for (std::size_t i = 0; i < a.iterations.size(); ++i) CHECK(a.iterations[i].metric == b.iterations[i].metric);
  }
  strata::system<strata::bsp> s1({.nodes = 1, .workers_per_node = 1});
  const double one = strata::ml::train_mf(s1, train, test, o).final_rmse;
  // 12 workers (about 12 raters of each item among them): BSP, one clock per epoch.
  strata::system<strata::bsp> s2({.nodes = 1, .workers_per_node = 12});
  const auto b = strata::ml::train_mf(s2, train, test, avg);
  double summed = std::numeric_limits<double>::infinity();  // a non-finite row is refused: the run fails
  try {
    strata::system<strata::bsp> s3({.nodes = 1, .workers_per_node = 12});
    summed = strata::ml::train_mf(s3, train, test, o).final_rmse;
  } catch (const std::exception&) {  // the refusal names the row and the value
  }
  MESSAGE("MF 12 workers: averaged " << b.final_rmse << ", summed " << summed << " (inf: the run refused a non-finite row), one worker " << one);
  CHECK(b.final_rmse < one + 0.1);
  CHECK(b.final_rmse < b.iterations.front().metric - 0.3);
  CHECK(!(summed < one + 0.1));
}

TEST_CASE("MF rotation with one worker is data-parallel SGD with one clock per epoch, step for step") {
  const auto [train, test] = synthetic_ratings(11);
  auto o = mf_opts();
  o.clocks_per_epoch = 1;
  o.iterations = 20;
  auto r = o;
  r.rotation = true;
  strata::system<strata::bsp> s1({.nodes = 1, .workers_per_node = 1}), s2({.nodes = 1, .workers_per_node = 1});
  const auto a = strata::ml::train_mf(s1, train, test, o);
  const auto b = strata::ml::train_mf(s2, train, test, r);
  REQUIRE(a.iterations.size() == b.iterations.size());
  for (std::size_t i = 0; i < a.iterations.size(); ++i) CHECK(a.iterations[i].metric == b.iterations[i].metric);
  CHECK(a.final_rmse == b.final_rmse);
  CHECK(a.final_rmse < a.iterations.front().metric - 0.05);
}

}  // namespace test_ml_trainers
