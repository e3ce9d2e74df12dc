// The Metropolis–Hastings LDA sampler (mh_lda_sampler in include/strata/ml/lda.hpp): its chain
// converges to the exact full conditional (chi-square against lda_topic_probabilities, with a
// stale word proposal), it moves exactly one token, the sequential trainer reaches the exact
// sampler's log-likelihood on a corpus drawn from known topics, and the distributed trainer
// keeps the count invariants exactly with it; and the exact sampler's two sweep paths (local word
// rows, per-pair reads under a value bound) both reach the sequential sampler's log-likelihood.
#include <doctest/doctest.h>

#include "../support/ml_data.hpp"
#include <strata/ml/lda.hpp>
#include <trainers/lda_trainer.hpp>
#include <strata/strata.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <type_traits>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_ml_lda_mh {

namespace {

namespace ml = strata::ml;

/// D documents of L tokens from T planted topics over V words: topic t favours words
/// [t·V/T, (t+1)·V/T) (90% of its mass); each document mixes two topics.
std::vector<std::vector<std::uint32_t>> planted_docs(std::uint32_t D, std::uint32_t L, std::uint32_t T, std::uint32_t V, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<std::uint32_t>> docs(D);
  const std::uint32_t band = V / T;
  for (auto& d : docs) {
    const std::uint32_t a = static_cast<std::uint32_t>(rng() % T), b = static_cast<std::uint32_t>(rng() % T);
    const double mix = 0.2 + 0.6 * static_cast<double>(rng() % 1000) / 1000.0;
    for (std::uint32_t i = 0; i < L; ++i) {
      const std::uint32_t t = static_cast<double>(rng() % 1000) / 1000.0 < mix ? a : b;
      const bool in_band = rng() % 10 != 0;
      d.push_back(in_band ? t * band + static_cast<std::uint32_t>(rng() % band) : static_cast<std::uint32_t>(rng() % V));
    }
  }
  return docs;
}

}  // namespace

TEST_CASE("lda MH sampler: the chain's draws follow the exact full conditional, even with a stale word proposal") {
  const ml::lda_params p{6, 30, 0.5, 0.1};
  const std::uint32_t K = p.num_topics;
  // A document of 12 tokens (the resampled one, at index 4, has topic `old`), a word row and
  // topic totals that include the token; the word proposal's snapshot differs from the row.
  const std::vector<std::uint32_t> z{0, 0, 1, 2, 3, 3, 3, 5, 0, 1, 3, 2};
  const std::uint32_t old = z[4];
  std::vector<ml::lda_count> nd(K, 0);
  for (auto k : z) ++nd[k];
  const std::vector<ml::lda_count> row{4, 0, 9, 3, 1, 0};
  const std::vector<ml::lda_count> totals{40, 35, 60, 50, 20, 30};
  const std::vector<ml::lda_count> snapshot{1, 5, 2, 0, 7, 3};  // stale on purpose
  // The exact conditional: counts without the token.
  std::vector<ml::lda_count> nd_x = nd, row_x = row, nk_x = totals;
  --nd_x[old], --row_x[old], --nk_x[old];
  const auto exact = ml::lda_topic_probabilities(nd_x, row_x, nk_x, p);

  std::vector<ml::alias_entry> pool;
  std::vector<double> wb;
  std::vector<std::uint32_t> ib, sb;
  const auto slice = ml::build_word_alias(snapshot, pool, wb, ib, sb);
  CHECK(slice.mass == doctest::Approx(18));
  const ml::lda_word_proposal wp{std::span<const ml::alias_entry>(pool.data() + slice.offset, slice.size), snapshot, slice.mass};

  ml::mh_lda_sampler s(p, 40);  // a long chain: its draw is (very nearly) from the stationary distribution
  std::mt19937_64 rng(21);
  const std::size_t N = 60000;
  std::vector<std::size_t> seen(K, 0);
  for (std::size_t i = 0; i < N; ++i) {
    std::vector<ml::lda_count> d = nd, w = row;
    s.set_topic_totals(totals);
    s.begin_document(d, z);
    const auto k = s.resample(old, w, wp, rng);
    REQUIRE(k < K);
    ++seen[k];
    // Exactly one token moved, from `old` to k, in the document, the word and the totals.
    for (std::uint32_t t = 0; t < K; ++t) {
      const int moved = (t == k ? 1 : 0) - (t == old ? 1 : 0);
      REQUIRE(d[t] == nd[t] + moved);
      REQUIRE(w[t] == row[t] + moved);
      REQUIRE(s.topic_totals()[t] == totals[t] + moved);
    }
  }
  double chi = 0;
  for (std::uint32_t k = 0; k < K; ++k) {
    const double e = exact[k] * N;
    chi += (static_cast<double>(seen[k]) - e) * (static_cast<double>(seen[k]) - e) / e;
  }
  INFO("chi-square " << chi);
  CHECK(chi < 20.52);  // 5 degrees of freedom, p = 0.001 (accepting every proposal gives thousands)
}

TEST_CASE("lda MH sampler: sparse and paired word counts draw what dense ones draw, and keep the moves") {
  const std::uint32_t K = 40;
  const ml::lda_params p{K, 500, 0.1, 0.01};
  std::mt19937_64 gen(5);
  std::vector<std::uint32_t> z(30);
  for (auto& k : z) k = static_cast<std::uint32_t>(gen() % 7);  // a document of few topics
  std::vector<ml::lda_count> nd(K, 0), totals(K, 0), dense(K, 0), snap(K, 0);
  for (auto k : z) ++nd[k];
  for (std::uint32_t k = 0; k < K; ++k) totals[k] = static_cast<ml::lda_count>(100 + gen() % 50);
  for (std::uint32_t k = 0; k < K; k += 3) dense[k] = static_cast<ml::lda_count>(gen() % 9);  // zeros between
  for (auto k : z) ++dense[k];  // the word's row holds the document's tokens
  snap = dense;
  snap[1] = 4, snap[6] = 0;  // stale: a topic the current row lacks, one it has lost
  // The sparse form: every topic either side holds, sorted; a zero entry left in on purpose.
  std::vector<ml::lda_word_entry> sparse;
  for (std::uint32_t k = 0; k < K; ++k)
    if (dense[k] != 0 || snap[k] != 0 || k == 9) sparse.push_back({k, dense[k], snap[k]});
  std::vector<ml::lda_count_pair> paired(K);
  for (std::uint32_t k = 0; k < K; ++k) paired[k] = {dense[k], snap[k]};
  std::vector<ml::alias_entry> pool_d, pool_s, pool_p;
  std::vector<double> wb;
  std::vector<std::uint32_t> ib, sb;
  const auto sd = ml::build_word_alias(snap, pool_d, wb, ib, sb);
  const auto ss = ml::build_word_alias(std::span<const ml::lda_word_entry>(sparse), pool_s, wb, ib, sb);
  const auto sp = ml::build_word_alias(std::span<const ml::lda_count_pair>(paired), pool_p, wb, ib, sb);
  REQUIRE(sd.size == ss.size);
  REQUIRE(sd.size == sp.size);
  CHECK(sd.mass == ss.mass);
  CHECK(sd.mass == sp.mass);
  for (std::size_t j = 0; j < sd.size; ++j) {
    CHECK(pool_d[j].keep == pool_s[j].keep);
    CHECK(pool_d[j].other == pool_s[j].other);
    CHECK(pool_d[j].prob == pool_s[j].prob);
    CHECK(pool_d[j].keep == pool_p[j].keep);
    CHECK(pool_d[j].prob == pool_p[j].prob);
  }
  ml::mh_lda_sampler a(p, 2), b(p, 2), c(p, 2);
  a.set_topic_totals(totals);
  b.set_topic_totals(totals);
  c.set_topic_totals(totals);
  std::vector<ml::lda_count> nd_a = nd, nd_b = nd, nd_c = nd;
  std::vector<std::uint32_t> z_a = z, z_b = z, z_c = z;
  a.begin_document(nd_a, z_a);
  b.begin_document(nd_b, z_b);
  c.begin_document(nd_c, z_c);
  std::mt19937_64 ra(9), rb(9), rc(9);
  ml::lda_dense_word_counts wd{dense.data(), snap.data()};
  ml::lda_sparse_word_counts ws(sparse);
  ml::lda_paired_word_counts wp{paired.data()};
  std::size_t moved = 0;
  for (int sweep = 0; sweep < 50; ++sweep)
    for (std::size_t i = 0; i < z.size(); ++i) {
      const auto ka = a.resample(z_a[i], wd, std::span<const ml::alias_entry>(pool_d), sd.mass, ra);
      const auto kb = b.resample(z_b[i], ws, std::span<const ml::alias_entry>(pool_s), ss.mass, rb);
      const auto kc = c.resample(z_c[i], wp, std::span<const ml::alias_entry>(pool_p), sp.mass, rc);
      REQUIRE(ka == kb);
      REQUIRE(ka == kc);
      moved += ka != z_a[i];
      z_a[i] = ka, z_b[i] = kb, z_c[i] = kc;
    }
  CHECK(moved > 0);  // the chain moved, so inserts and zero entries were exercised
  CHECK(std::is_sorted(sparse.begin(), sparse.end(), [](const auto& x, const auto& y) { return x.topic < y.topic; }));
  for (std::uint32_t k = 0; k < K; ++k) {
    const auto it = std::find_if(sparse.begin(), sparse.end(), [&](const auto& e) { return e.topic == k; });
    CHECK((it == sparse.end() ? 0 : it->current) == dense[k]);
    CHECK((it == sparse.end() ? 0 : it->snapshot) == snap[k]);
    CHECK(nd_a[k] == nd_b[k]);
    CHECK(nd_a[k] == nd_c[k]);
    CHECK(paired[k].current == dense[k]);
    CHECK(paired[k].snapshot == snap[k]);
  }
}

TEST_CASE("lda MH sampler: bad settings are refused") {
  CHECK_THROWS_AS(ml::mh_lda_sampler(ml::lda_params{4, 10, 0.1, 0.01}, 0), strata::error);
  CHECK_THROWS_AS(ml::mh_lda_sampler(ml::lda_params{0, 10, 0.1, 0.01}, 2), strata::error);
}

TEST_CASE("lda reference with the MH sampler: invariants, and the exact sampler's log-likelihood within 2% on planted topics") {
  const std::uint32_t V = 60, T = 5;
  const auto docs = planted_docs(150, 60, T, V, 8);
  ml::lda_options o;
  o.num_topics = T;
  o.iterations = 60;
  o.loglik_every = 0;
  o.seed = 4;
  o.sampler = ml::lda_sampler::sparse;
  const auto exact = ml::lda_reference(docs, V, o);
  o.sampler = ml::lda_sampler::mh;
  const auto mh = ml::lda_reference(docs, V, o);
  // Counts are the tokens' topics, exactly.
  std::vector<std::int64_t> nk(T, 0);
  std::int64_t tokens = 0;
  for (std::size_t d = 0; d < docs.size(); ++d)
    for (std::size_t i = 0; i < docs[d].size(); ++i) {
      const auto k = mh.topics[d][i];
      ++nk[k];
      ++tokens;
      REQUIRE(mh.counts.doc(static_cast<std::uint32_t>(d))[k] > 0);
    }
  for (std::uint32_t k = 0; k < T; ++k) CHECK(mh.counts.topic_totals[k] == nk[k]);
  std::int64_t from_words = 0;
  for (auto x : mh.counts.word_topic) {
    CHECK(x >= 0);
    from_words += x;
  }
  CHECK(from_words == tokens);
  const double ll0 = exact.loglik.front(), le = exact.loglik.back(), lm = mh.loglik.back();
  INFO("initial " << ll0 << ", exact " << le << ", mh " << lm);
  MESSAGE("planted topics: initial LL " << ll0 << ", exact " << le << ", mh " << lm);
  REQUIRE(le - ll0 > 0.15 * std::abs(le));  // training moved far: 2% is a real bound
  CHECK(std::abs(lm - le) < 0.02 * std::abs(le));
}

TEST_CASE_TEMPLATE("LDA trainer with the MH sampler: count invariants exact at 1 and 2 workers, loglik near the exact sampler's", C,
                   strata::bsp, strata::essp<2>) {
  const auto corpus = ml::lda_corpus::from_tokens(planted_docs(150, 60, 5, 60, 12), 60);
  for (std::uint32_t workers : {1u, 2u}) {
    // Either sampler's chain can settle in a local optimum (two planted topics merged: ~6% lower
    // LL) depending on the seed and the partition, so the best of three seeds is compared.
    double best_exact = -1e300, best_mh = -1e300, initial = 0;
    for (std::uint64_t seed : {1u, 2u, 3u}) {
      ml::lda_trainer_options o;
      o.topics = 5;
      o.iterations = 30;
      o.seed = seed;
      o.keep_model = true;
      strata::system<C> a({.nodes = 1, .workers_per_node = workers});
      const auto exact = ml::train_lda(a, corpus, o);
      o.sampler = ml::lda_sampler::mh;
      strata::system<C> b({.nodes = 1, .workers_per_node = workers});
      const auto mh = ml::train_lda(b, corpus, o);
      INFO(workers << " worker(s), seed " << seed << ": " << mh.invariant_error << "; exact LL " << exact.final_loglik << ", mh "
                   << mh.final_loglik);
      CHECK(mh.invariants_ok);
      CHECK(mh.model.tokens() == static_cast<std::int64_t>(corpus.tokens()));
      CHECK(mh.tokens_sampled == o.iterations * corpus.tokens());
      best_exact = std::max(best_exact, exact.final_loglik);
      best_mh = std::max(best_mh, mh.final_loglik);
      initial = exact.iterations.front().metric;
    }
    INFO(workers << " worker(s): initial LL " << initial << ", best exact " << best_exact << ", best mh " << best_mh);
    REQUIRE(best_exact - initial > 0.15 * std::abs(best_exact));  // training moved far: the bound is a real one
    // BSP runs are deterministic (1.4% apart here); ESSP's depend on timing, and in about 1 run in
    // 10 all three MH chains stayed in the merged-topics optimum (8% below), so it gets 10%: still
    // far inside the 50% that accepting every proposal costs (the kernel and reference tests above
    // are the sharp checks of the acceptance).
    const double tol = std::is_same_v<C, strata::bsp> ? 0.03 : 0.10;
    CHECK(std::abs(best_mh - best_exact) < tol * std::abs(best_exact));
  }
}

TEST_CASE("LDA trainer, exact sampler: local word rows (BSP, ESSP) and per-pair reads (VAP) reach the sequential sampler's loglik") {
  // Under every model whose increments leave at the clock, the trainer samples a sweep against a
  // local copy of each word row (read at its first use, plus its own moves) and sends each word's
  // net change once; under VAP it reads and sends per (document, word) pair. Both are the exact
  // Gibbs sampler, so on planted topics both end where the sequential sampler ends.
  const std::uint32_t V = 60, T = 5;
  const auto docs = planted_docs(150, 60, T, V, 12);
  const auto corpus = ml::lda_corpus::from_tokens(docs, V);
  double best_ref = -1e300, initial = 0;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    ml::lda_options o;
    o.num_topics = T;
    o.iterations = 30;
    o.loglik_every = 0;
    o.seed = seed;
    o.sampler = ml::lda_sampler::sparse;
    const auto r = ml::lda_reference(docs, V, o);
    best_ref = std::max(best_ref, r.loglik.back());
    initial = r.loglik.front();
  }
  REQUIRE(best_ref - initial > 0.15 * std::abs(best_ref));  // training moved far: 3% is a real bound
  auto best_of = [&]<class C>(std::uint32_t workers) {
    double best = -1e300;
    for (std::uint64_t seed : {1u, 2u, 3u}) {
      ml::lda_trainer_options o;
      o.topics = T;
      o.iterations = 30;
      o.seed = seed;
      o.keep_model = true;
      strata::system<C> sys({.nodes = 1, .workers_per_node = workers});
      const auto run = ml::train_lda(sys, corpus, o);
      INFO(C::name() << ", " << workers << " worker(s), seed " << seed << ": " << run.invariant_error);
      CHECK(run.invariants_ok);
      CHECK(run.model.tokens() == static_cast<std::int64_t>(corpus.tokens()));
      CHECK(run.tokens_sampled == o.iterations * corpus.tokens());
      best = std::max(best, run.final_loglik);
    }
    return best;
  };
  const double bsp1 = best_of.operator()<strata::bsp>(1), bsp2 = best_of.operator()<strata::bsp>(2),
               essp2 = best_of.operator()<strata::essp<2>>(2), vap1 = best_of.operator()<strata::vap<40.0>>(1);
  INFO("sequential " << best_ref << ", bsp 1 worker " << bsp1 << ", bsp 2 " << bsp2 << ", essp 2 " << essp2 << ", vap 1 " << vap1);
  for (double ll : {bsp1, bsp2, essp2, vap1}) CHECK(std::abs(ll - best_ref) < 0.03 * std::abs(best_ref));
}

}  // namespace test_ml_lda_mh
