// The STRADS apps of issue 10 besides Lasso: LDA by word rotation (apps/trainers/lda_rotation.hpp)
// and MF by CCD++ (apps/trainers/mf_ccd.hpp). LDA: exact count invariants at 1, 2 and 4 workers
// (also under ESSP: the rotation uses no table), every worker holds every block once per sweep and
// no block is held twice in a sub-round, the initial LL equals the data-parallel trainer's, and the
// final LL is within 3% of the data-parallel BSP trainer's (best of 3 seeds) after the same sweeps, with the exact
// SparseLDA and the MH sampler; a block handed on in many parts gives the same chain. MF: the same
// result at 1, 2 and 4 workers (CCD++ is deterministic), the loss never rises, and the test RMSE
// within 0.02 of the SGD trainer's on the synthetic ratings.
#include <doctest/doctest.h>

#include "../support/ml_data.hpp"
#include <trainers/lda_rotation.hpp>
#include <trainers/lda_trainer.hpp>
#include <trainers/mf_ccd.hpp>
#include <trainers/mf_trainer.hpp>
#include <strata/strata.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_ml_strads_apps {

namespace ml = strata::ml;

namespace {

using strata_test::synthetic_corpus;

ml::lda_rotation_options rot_opts() {
  ml::lda_rotation_options o;
  o.topics = 4;
  o.iterations = 12;
  return o;
}

template <class C = strata::bsp>
ml::lda_rotation_run rotation(std::uint32_t workers, const ml::lda_corpus& c, ml::lda_rotation_options o = rot_opts()) {
  strata::system<C> sys({.nodes = 1, .workers_per_node = workers, .staleness = 2});
  return ml::train_lda_rotation(sys, c, o);
}

ml::lda_run data_parallel(std::uint32_t workers, const ml::lda_corpus& c, std::uint64_t seed = 1) {
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = workers});
  ml::lda_trainer_options o = rot_opts();
  o.seed = seed;
  return ml::train_lda(sys, c, o);
}
/// The best final LL of the data-parallel BSP trainer over seeds 1-3: one chain can settle in a
/// worse local optimum than another (12 sweeps, seeds 1-20: -7766 to -7380, mean -7554).
double best_data_parallel(std::uint32_t workers, const ml::lda_corpus& c) {
  double best = -1e300;
  for (std::uint64_t seed : {1u, 2u, 3u}) best = std::max(best, data_parallel(workers, c, seed).final_loglik);
  return best;
}

}  // namespace

TEST_CASE("LDA rotation: exact count invariants at 1, 2 and 4 workers, every block once per sweep, none held twice") {
  const auto corpus = synthetic_corpus();
  for (std::uint32_t P : {1u, 2u, 4u}) {
    CAPTURE(P);
    const auto r = rotation(P, corpus);
    INFO(r.invariant_error);
    CHECK(r.invariants_ok);
    CHECK(r.blocks == P);
    CHECK(r.rounds == std::uint64_t{rot_opts().iterations} * P);
    CHECK(r.block_conflicts == 0);
    REQUIRE(r.holds.size() == std::size_t{P} * P);
    for (std::uint32_t p = 0; p < P; ++p)
      for (std::uint32_t b = 0; b < P; ++b) CHECK(r.holds[std::size_t{p} * P + b] == rot_opts().iterations);
    CHECK(r.tokens_sampled == std::uint64_t{rot_opts().iterations} * corpus.tokens());
    REQUIRE(r.iterations.size() == rot_opts().iterations + 1);
    CHECK(r.iterations.back().metric == doctest::Approx(r.final_loglik).epsilon(1e-12));
    CHECK(r.final_loglik > r.iterations.front().metric);
    for (std::size_t i = 1; i < r.iterations.size(); ++i) CHECK(r.iterations[i].iteration == i);
  }
}

TEST_CASE("LDA rotation: keep_model hands back the final word-topic counts") {
  const auto corpus = synthetic_corpus();
  auto o = rot_opts();
  o.keep_model = true;
  const auto r = rotation(2, corpus, o);
  REQUIRE(r.invariants_ok);
  CHECK(r.model.topics == o.topics);
  CHECK(r.model.words.size() == corpus.vocab_size);
  CHECK(r.model.tokens() == static_cast<std::int64_t>(corpus.tokens()));
  // log p(w | z) from the model equals the final LL without the documents' part, which is below it.
  CHECK(r.model.word_loglik() < 0);
  CHECK(r.model.word_loglik() > r.final_loglik);
}

TEST_CASE("LDA rotation: invariants hold under ESSP too (no table is read), with 3 workers and more blocks than words per block") {
  const auto corpus = synthetic_corpus(9);
  const auto r = rotation<strata::essp<2>>(3, corpus);
  INFO(r.invariant_error);
  CHECK(r.invariants_ok);
  CHECK(r.block_conflicts == 0);
  CHECK(r.tokens_sampled == std::uint64_t{rot_opts().iterations} * corpus.tokens());
}

TEST_CASE("LDA rotation: the initial LL is the data-parallel trainer's, the final LL within 3% of its BSP run") {
  const auto corpus = synthetic_corpus(5);
  const auto dp1 = data_parallel(1, corpus);
  const auto dp4 = data_parallel(4, corpus);
  REQUIRE(dp1.invariants_ok);
  REQUIRE(dp4.invariants_ok);
  const double best1 = best_data_parallel(1, corpus), best4 = best_data_parallel(4, corpus);
  for (std::uint32_t P : {1u, 2u, 4u}) {
    CAPTURE(P);
    const auto r = rotation(P, corpus);
    REQUIRE(r.invariants_ok);
    // Same seed and workers: the same initial topics, and the same LL formula.
    const auto& same = P == 4 ? dp4 : dp1;
    if (P != 2) CHECK(r.iterations.front().metric == doctest::Approx(same.iterations.front().metric).epsilon(1e-12));
    INFO("rotation " << r.final_loglik << ", data-parallel bsp best of 3 seeds, 1 worker " << best1 << ", 4 workers " << best4
                     << ", initial " << r.iterations.front().metric);
    MESSAGE("LDA synthetic, " << P << " workers: rotation " << r.final_loglik << ", data-parallel bsp (best of 3 seeds) " << best1
                              << " / " << best4);
    CHECK(std::abs(r.final_loglik - best1) < 0.03 * std::abs(best1));
    CHECK(std::abs(r.final_loglik - best4) < 0.03 * std::abs(best4));
  }
}

TEST_CASE("LDA rotation with the MH sampler: exact invariants, every token drawn, the final LL within 3% of the data-parallel BSP run") {
  const auto corpus = synthetic_corpus(5);
  const double best1 = best_data_parallel(1, corpus);
  auto o = rot_opts();
  o.sampler = ml::lda_sampler::mh;
  o.iterations = 20;  // 2 MH steps per token move less per sweep than an exact draw
  for (std::uint32_t P : {1u, 3u})
    for (std::uint32_t dense_mb : {0u, 256u}) {  // every row sparse; every row dense (K = 4)
      CAPTURE(P);
      CAPTURE(dense_mb);
      o.mh_dense_mb = dense_mb;
      const auto r = rotation(P, corpus, o);
      INFO(r.invariant_error);
      REQUIRE(r.invariants_ok);
      CHECK(r.block_conflicts == 0);
      CHECK(r.tokens_sampled == std::uint64_t{o.iterations} * corpus.tokens());
      INFO("rotation mh " << r.final_loglik << ", data-parallel bsp best of 3 seeds " << best1);
      CHECK(r.final_loglik > r.iterations.front().metric);
      CHECK(std::abs(r.final_loglik - best1) < 0.03 * std::abs(best1));
    }
}

TEST_CASE("LDA rotation: a block handed on in many small parts gives the same chain as in one") {
  const auto corpus = synthetic_corpus(7);
  for (auto sampler : {ml::lda_sampler::sparse, ml::lda_sampler::mh}) {
    auto o = rot_opts();
    o.sampler = sampler;
    const auto whole = rotation(3, corpus, o);
    o.rotation_part_entries = 5;  // every block goes as many parts, some of one row
    const auto parts = rotation(3, corpus, o);
    REQUIRE(whole.invariants_ok);
    INFO(parts.invariant_error);
    REQUIRE(parts.invariants_ok);
    CHECK(parts.bytes_sent > whole.bytes_sent);  // more messages, each with its header
    REQUIRE(parts.iterations.size() == whole.iterations.size());
    for (std::size_t i = 0; i < whole.iterations.size(); ++i) CHECK(parts.iterations[i].metric == whole.iterations[i].metric);
  }
}

TEST_CASE("LDA rotation: bad settings are errors") {
  const auto corpus = synthetic_corpus();
  auto o = rot_opts();
  o.topics = 0;
  CHECK_THROWS_AS(rotation(2, corpus, o), strata::error);
  o = rot_opts();
  o.alpha = 0;
  CHECK_THROWS_AS(rotation(2, corpus, o), strata::error);
  auto bad = corpus;
  bad.words[0][0] = 40;  // beyond the vocabulary
  CHECK_THROWS_AS(rotation(2, bad), strata::error);
  o = rot_opts();
  o.iterations = 0;
  const auto r = rotation(2, corpus, o);
  CHECK(r.invariants_ok);
  CHECK(r.iterations.size() == 1);
}

namespace {

ml::mf_ccd_options ccd_opts() {
  ml::mf_ccd_options o;
  o.rank = 3;
  o.lambda = 1;
  o.iterations = 15;
  return o;
}

ml::mf_ccd_run ccd(std::uint32_t nodes, std::uint32_t workers, const strata::ml::io::rating_set& train,
                   const strata::ml::io::rating_set& test, ml::mf_ccd_options o = ccd_opts()) {
  strata::system<strata::bsp> sys({.nodes = nodes, .workers_per_node = workers});
  return ml::train_mf_ccd(sys, train, test, o);
}

}  // namespace

TEST_CASE("MF CCD++: 1, 2 and 4 workers give the same factors' RMSE, the loss never rises") {
  const auto [train, test] = strata_test::synthetic_ratings(7);
  const auto one = ccd(1, 1, train, test);
  const auto two = ccd(1, 2, train, test);
  const auto four = ccd(2, 2, train, test);
  const std::uint32_t C = ccd_opts().rank + 2;
  for (const auto* r : {&one, &two, &four}) {
    REQUIRE(r->iterations.size() == ccd_opts().iterations + 1);
    CHECK(r->column_updates == std::uint64_t{ccd_opts().iterations} * C);
    CHECK(r->engine.rounds == std::uint64_t{ccd_opts().iterations} * C + 1);
    for (std::size_t i = 1; i < r->iterations.size(); ++i) {
      CHECK(r->iterations[i].iteration == i);
      // Each coordinate step is an exact minimiser: the loss cannot rise (up to rounding).
      CHECK(r->iterations[i].objective <= r->iterations[i - 1].objective * (1 + 1e-12));
    }
    CHECK(r->final_rmse < r->iterations.front().metric - 0.1);
  }
  for (std::size_t i = 0; i < one.iterations.size(); ++i) {
    CHECK(two.iterations[i].metric == doctest::Approx(one.iterations[i].metric).epsilon(1e-9));
    CHECK(four.iterations[i].metric == doctest::Approx(one.iterations[i].metric).epsilon(1e-9));
    CHECK(four.iterations[i].objective == doctest::Approx(one.iterations[i].objective).epsilon(1e-9));
  }
}

TEST_CASE("MF CCD++ with weighted lambda: its loss never rises, 1 and 3 workers agree, the kept test residuals match the factors") {
  const auto [train, test] = strata_test::synthetic_ratings(11);
  auto o = ccd_opts();
  o.weighted_lambda = true;
  o.lambda = 0.05;
  const auto one = ccd(1, 1, train, test, o);
  const auto three = ccd(1, 3, train, test, o);
  const auto plain = ccd(1, 1, train, test);
  for (const auto* r : {&one, &three, &plain}) {
    REQUIRE(r->iterations.size() == o.iterations + 1);
    for (std::size_t i = 1; i < r->iterations.size(); ++i) CHECK(r->iterations[i].objective <= r->iterations[i - 1].objective * (1 + 1e-12));
    CHECK(r->final_rmse == doctest::Approx(r->final_rmse_recomputed).epsilon(1e-9));
    CHECK(r->final_rmse < r->iterations.front().metric - 0.1);
  }
  CHECK(three.final_rmse == doctest::Approx(one.final_rmse).epsilon(1e-9));
  CHECK(three.final_loss == doctest::Approx(one.final_loss).epsilon(1e-9));
  CHECK(one.final_loss != doctest::Approx(plain.final_loss).epsilon(1e-3));  // a different objective
}

TEST_CASE("MF CCD++ reaches the SGD trainer's test RMSE within 0.02 on the synthetic ratings") {
  for (std::uint64_t seed : {7u, 11u}) {
    CAPTURE(seed);
    const auto [train, test] = strata_test::synthetic_ratings(seed);
    // The SGD trainer as tests/ml/test_trainers.cpp runs it (rank 3, lambda 1, 30 epochs), 2 workers BSP.
    const ml::mf_trainer_options so = strata_test::small_mf_options(60);
    strata::system<strata::bsp> s1({.nodes = 1, .workers_per_node = 2});
    const auto sgd = ml::train_mf(s1, train, test, so);
    const auto c = ccd(1, 2, train, test);
    INFO("sgd " << sgd.final_rmse << ", ccd " << c.final_rmse << " (from " << c.iterations.front().metric << ")");
    MESSAGE("MF synthetic seed " << seed << ": sgd " << sgd.final_rmse << ", ccd++ " << c.final_rmse);
    CHECK(c.final_rmse < sgd.final_rmse + 0.02);
  }
}

TEST_CASE("MF CCD++: bad settings are errors") {
  const auto [train, test] = strata_test::synthetic_ratings(7);
  auto o = ccd_opts();
  o.rank = 0;
  CHECK_THROWS_AS(ccd(1, 2, train, test, o), strata::error);
  o = ccd_opts();
  o.lambda = 0;
  CHECK_THROWS_AS(ccd(1, 2, train, test, o), strata::error);
  CHECK_THROWS_AS(ccd(1, 2, strata::ml::io::rating_set{}, test), strata::error);
}

}  // namespace test_ml_strads_apps
