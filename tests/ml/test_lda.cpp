#include <doctest/doctest.h>

#include <strata/core/error.hpp>
#include <strata/ml/lda.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_ml_lda {

namespace ml = strata::ml;
using ml::lda_count;

namespace {

/// The SEEDS.md formula, term for term, dense, with std::lgamma (single-threaded here).
double seeds_loglik(const ml::lda_counts& c, double a, double b) {
  const double K = c.num_topics, V = c.vocab_size;
  double ll = 0;
  for (std::uint32_t d = 0; d < c.num_docs; ++d) {
    double nd = 0;
    ll += std::lgamma(K * a) - K * std::lgamma(a);
    for (auto n : c.doc(d)) {
      ll += std::lgamma(n + a);
      nd += n;
    }
    ll -= std::lgamma(nd + K * a);
  }
  ll += K * (std::lgamma(V * b) - V * std::lgamma(b));
  for (auto n : c.word_topic) ll += std::lgamma(n + b);
  for (auto n : c.topic_totals) ll -= std::lgamma(n + V * b);
  return ll;
}

/// D documents drawn from `topics` well-separated topics over V words (topic t favours the
/// words w with w % topics == t), so Gibbs sampling has structure to find.
std::vector<std::vector<std::uint32_t>> synthetic_corpus(std::uint32_t D, std::uint32_t len, std::uint32_t V,
                                                         std::uint32_t topics, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<std::uint32_t>> docs(D);
  for (auto& doc : docs) {
    const std::uint32_t t1 = static_cast<std::uint32_t>(rng() % topics), t2 = static_cast<std::uint32_t>(rng() % topics);
    for (std::uint32_t i = 0; i < len; ++i) {
      const std::uint32_t t = (rng() % 4 == 0) ? t2 : t1;
      std::uint32_t w = static_cast<std::uint32_t>(rng() % (V / topics)) * topics + t;
      if (rng() % 20 == 0) w = static_cast<std::uint32_t>(rng() % V);  // a little noise
      doc.push_back(w);
    }
  }
  return docs;
}

/// Max |empirical frequency − p| and the chi-square statistic of `counts` against p.
std::pair<double, double> compare(const std::vector<double>& counts, const std::vector<double>& p, double n) {
  double maxdiff = 0, chi2 = 0;
  for (std::size_t k = 0; k < p.size(); ++k) {
    maxdiff = std::max(maxdiff, std::abs(counts[k] / n - p[k]));
    chi2 += (counts[k] - n * p[k]) * (counts[k] - n * p[k]) / (n * p[k]);
  }
  return {maxdiff, chi2};
}

void check_invariants(const ml::lda_result& r, const std::vector<std::vector<std::uint32_t>>& docs) {
  const auto& c = r.counts;
  const std::uint32_t K = c.num_topics;
  std::vector<lda_count> nk(K, 0), nwk(c.word_topic.size(), 0), ndk(c.doc_topic.size(), 0);
  for (std::uint32_t d = 0; d < c.num_docs; ++d)
    for (std::size_t i = 0; i < docs[d].size(); ++i) {
      const auto k = r.topics[d][i];
      REQUIRE(k < K);
      ++nk[k];
      ++nwk[std::size_t{docs[d][i]} * K + k];
      ++ndk[std::size_t{d} * K + k];
    }
  CHECK(nk == c.topic_totals);
  CHECK(nwk == c.word_topic);
  CHECK(ndk == c.doc_topic);
  for (std::uint32_t d = 0; d < c.num_docs; ++d) {  // Σ_k n_dk = n_d
    const auto row = c.doc(d);
    CHECK(std::accumulate(row.begin(), row.end(), std::int64_t{0}) == static_cast<std::int64_t>(docs[d].size()));
  }
  for (std::uint32_t k = 0; k < K; ++k) {  // Σ_w n_wk = n_k
    std::int64_t s = 0;
    for (std::uint32_t w = 0; w < c.vocab_size; ++w) s += c.word(w)[k];
    CHECK(s == c.topic_totals[k]);
  }
  for (auto n : c.word_topic) CHECK(n >= 0);
}

}  // namespace

TEST_CASE("lda log_gamma matches std::lgamma") {
  double worst = 0;
  for (double x : {1e-8, 1e-3, 0.01, 0.1, 0.5, 1.0, 1.5, 2.0, 3.7, 9.99, 10.0, 10.01, 42.5, 1e3, 1.23e5, 1e7}) {
    const double ref = std::lgamma(x);
    worst = std::max(worst, std::abs(ml::log_gamma(x) - ref) / std::max(1.0, std::abs(ref)));
  }
  CHECK(worst < 1e-13);
  CHECK(std::abs(ml::log_gamma(1.0)) < 1e-14);
  CHECK(std::abs(ml::log_gamma(2.0)) < 1e-14);
  CHECK(std::isinf(ml::log_gamma(0.0)));
}

TEST_CASE("lda loglik parts sum to the SEEDS.md formula, and sparse rows give the same parts") {
  const auto docs = synthetic_corpus(12, 30, 20, 3, 5);
  ml::lda_options opt;
  opt.num_topics = 4;
  opt.alpha = 0.3;
  opt.beta = 0.05;
  opt.iterations = 3;
  const auto r = ml::lda_reference(docs, 20, opt);
  const double seeds = seeds_loglik(r.counts, opt.alpha, opt.beta);
  CHECK(r.loglik.back() == doctest::Approx(seeds).epsilon(1e-12));

  const ml::lda_params p{4, 20, opt.alpha, opt.beta};
  double parts = ml::lda_topic_loglik(r.counts.topic_totals, p);
  for (std::uint32_t d = 0; d < r.counts.num_docs; ++d) {
    std::vector<lda_count> nz;  // only the non-zero counts, as a sparse row stores them
    for (auto n : r.counts.doc(d))
      if (n) nz.push_back(n);
    parts += ml::lda_doc_loglik(nz, p);
  }
  for (std::uint32_t w = 0; w < 20; ++w) {
    std::vector<ml::topic_count> nz;
    for (std::uint32_t k = 0; k < 4; ++k)
      if (r.counts.word(w)[k]) nz.push_back({k, r.counts.word(w)[k]});
    parts += ml::lda_word_loglik(nz, p);
  }
  CHECK(parts == doctest::Approx(seeds).epsilon(1e-12));
}

TEST_CASE("lda plain and SparseLDA samplers draw from the exact full conditional") {
  // K = 8 with every bucket carrying real mass: α, β large enough that s and r matter, a word
  // row with zeros, a document with zeros, uneven topic totals.
  const ml::lda_params p{8, 50, 0.5, 0.2};
  std::vector<lda_count> doc{3, 0, 5, 0, 1, 0, 0, 2};
  const std::vector<lda_count> totals{40, 10, 25, 5, 60, 8, 30, 12};
  const std::vector<lda_count> word{4, 0, 0, 2, 7, 0, 1, 0};
  const auto exact = ml::lda_topic_probabilities(doc, word, totals, p);
  CHECK(std::accumulate(exact.begin(), exact.end(), 0.0) == doctest::Approx(1.0));

  ml::sparse_lda_sampler s(p);
  s.set_topic_totals(totals);
  s.begin_document(doc);
  std::vector<ml::topic_count> sparse_word;
  for (std::uint32_t k = 0; k < p.num_topics; ++k)
    if (word[k]) sparse_word.push_back({k, word[k]});
  // The buckets must hold a sizeable share, otherwise this test would not exercise them.
  double q = 0;
  for (std::uint32_t k = 0; k < 8; ++k) q += (doc[k] + p.alpha) * word[k] / (totals[k] + p.vocab_size * p.beta);
  CHECK(s.s_mass() / (s.s_mass() + s.r_mass() + q) > 0.05);
  CHECK(s.r_mass() / (s.s_mass() + s.r_mass() + q) > 0.08);

  const int N = 200000;
  std::mt19937_64 rng(42);
  std::vector<double> plain(8, 0), sparse(8, 0), dense(8, 0);
  for (int i = 0; i < N; ++i) {
    ++plain[ml::lda_sample_plain(doc, word, totals, p, rng)];
    ++sparse[s.sample(std::span<const ml::topic_count>(sparse_word), rng)];
    ++dense[s.sample(std::span<const lda_count>(word), rng)];
  }
  // 7 degrees of freedom: P(chi2 > 30) ≈ 1e-4; max |diff| has std error ≤ 0.0012 here.
  for (const auto* c : {&plain, &sparse, &dense}) {
    const auto [maxdiff, chi2] = compare(*c, exact, N);
    CHECK(maxdiff < 0.006);
    CHECK(chi2 < 30);
  }
  CHECK(sparse[1] > 0);  // a topic in neither doc nor word: reachable only through s
}

TEST_CASE("lda SparseLDA resample excludes the token and keeps its buckets exact") {
  const ml::lda_params p{6, 30, 0.4, 0.3};
  std::vector<lda_count> doc{2, 0, 3, 1, 0, 0};
  std::vector<lda_count> totals{20, 9, 14, 6, 11, 3};
  std::vector<lda_count> word{3, 1, 0, 2, 0, 0};  // includes the token being resampled (topic 0)
  std::vector<lda_count> doc_minus = doc, totals_minus = totals, word_minus = word;
  --doc_minus[0];
  --totals_minus[0];
  --word_minus[0];
  const auto exact = ml::lda_topic_probabilities(doc_minus, word_minus, totals_minus, p);

  std::vector<ml::topic_count> sparse_word;  // the same row, sparse and out of topic order
  for (std::uint32_t k = 6; k-- > 0;)
    if (word[k]) sparse_word.push_back({k, word[k]});

  ml::sparse_lda_sampler s(p);
  const int N = 100000;
  std::vector<double> freq_dense(6, 0), freq_sparse(6, 0);
  std::mt19937_64 rng(9);
  int moved_wrong = 0;
  for (int i = 0; i < 2 * N; ++i) {
    std::vector<lda_count> d = doc;  // a fresh copy each time: resample moves the token
    s.set_topic_totals(totals);
    s.begin_document(d);
    const bool dense = i % 2 == 0;
    const auto k = dense ? s.resample(0, std::span<const lda_count>(word), rng)
                         : s.resample(0, std::span<const ml::topic_count>(sparse_word), rng);
    ++(dense ? freq_dense : freq_sparse)[k];
    for (std::uint32_t j = 0; j < 6; ++j) moved_wrong += d[j] != doc_minus[j] + (j == k ? 1 : 0);
    moved_wrong += s.topic_totals()[k] != totals_minus[k] + 1;
  }
  CHECK(moved_wrong == 0);
  for (const auto* f : {&freq_dense, &freq_sparse}) {
    const auto [maxdiff, chi2] = compare(*f, exact, N);
    CHECK(maxdiff < 0.008);
    CHECK(chi2 < 28);  // 5 dof: P(chi2 > 28) ≈ 4e-5
  }

  // After many moves the incrementally kept buckets equal a fresh recomputation.
  std::vector<lda_count> d = doc;
  s.set_topic_totals(totals);
  s.begin_document(d);
  std::uniform_int_distribution<int> pick(0, 5);
  for (int i = 0; i < 5000; ++i) {
    std::uint32_t from = 0;
    while (d[from] == 0) from = static_cast<std::uint32_t>(pick(rng));
    const auto to = s.resample(from, std::span<const lda_count>(word), rng);
    --word[from];
    ++word[to];
  }
  std::vector<lda_count> t(s.topic_totals().begin(), s.topic_totals().end());
  CHECK(std::accumulate(d.begin(), d.end(), 0) == std::accumulate(doc.begin(), doc.end(), 0));
  CHECK(std::accumulate(t.begin(), t.end(), 0) == std::accumulate(totals.begin(), totals.end(), 0));
  const double s_inc = s.s_mass(), r_inc = s.r_mass();
  ml::sparse_lda_sampler fresh(p);
  fresh.set_topic_totals(t);
  fresh.begin_document(d);
  CHECK(s_inc == doctest::Approx(fresh.s_mass()).epsilon(1e-12));
  CHECK(r_inc == doctest::Approx(fresh.r_mass()).epsilon(1e-12));
}

TEST_CASE("lda SparseLDA's O(n_d) document binding gives the O(K) binding's buckets and draws") {
  const ml::lda_params p{8, 40, 0.3, 0.2};
  std::mt19937_64 rng(3);
  std::vector<std::vector<std::uint32_t>> z(6);
  std::vector<lda_count> totals(8, 12);
  for (auto& doc : z) {
    doc.resize(3 + rng() % 7);
    for (auto& k : doc) k = static_cast<std::uint32_t>(rng() % 8), ++totals[k];
  }
  const std::vector<ml::topic_count> row{{1, 4}, {4, 2}, {6, 5}, {0, 1}};
  ml::doc_topic_scratch nd(8);
  ml::sparse_lda_sampler s(p);
  s.set_topic_totals(totals);
  int draws = 0, differ = 0, unload_failed = 0;
  for (int pass = 0; pass < 300; ++pass)
    for (auto& doc : z) {
      s.begin_document(nd.load(doc), doc);
      // The same state bound the O(K) way: the same masses, and the same draw from the same stream.
      ml::sparse_lda_sampler full(p);
      full.set_topic_totals(s.topic_totals());
      const auto n = nd.load({});
      std::vector<lda_count> copy(n.begin(), n.end());
      full.begin_document(copy);
      CHECK(s.r_mass() == doctest::Approx(full.r_mass()).epsilon(1e-9));
      CHECK(s.s_mass() == doctest::Approx(full.s_mass()).epsilon(1e-9));
      for (auto& k : doc) {
        auto same_stream = rng;
        const auto a = s.resample(k, std::span<const ml::topic_count>(row), rng);
        const auto b = full.resample(k, std::span<const ml::topic_count>(row), same_stream);
        differ += a != b;
        ++draws;
        k = a;
        if (a != b) break;  // the two states part here; the next document binds afresh
      }
      unload_failed += !nd.unload(doc);  // the sampler's in-place edits are the recount of the new topics
    }
  CHECK(draws > 5000);
  CHECK(differ <= 2);  // only a rounding tie could part them
  CHECK(unload_failed == 0);
  CHECK_THROWS_AS(s.begin_document(nd.load(z[0]), std::vector<std::uint32_t>{9}), strata::error);
}

TEST_CASE("lda samplers read stale negative counts as zero") {
  const ml::lda_params p{3, 10, 0.1, 0.1};
  const std::vector<lda_count> doc{1, 0, 0}, word{-2, 0, 3}, totals{-1, 4, 5};
  const auto exact = ml::lda_topic_probabilities(doc, word, totals, p);
  for (double x : exact) CHECK(x > 0);
  CHECK(exact[0] == doctest::Approx(1.1 * 0.1 / 1.0 / (1.1 * 0.1 / 1.0 + 0.1 * 0.1 / 5.0 + 0.1 * 3.1 / 6.0)));
  ml::sparse_lda_sampler s(p);
  s.set_topic_totals(totals);
  std::mt19937_64 rng(1);
  const std::vector<ml::topic_count> row{{0, -2}, {2, 3}};
  for (int i = 0; i < 1000; ++i) CHECK(s.sample(std::span<const ml::topic_count>(row), rng) < 3);
}

TEST_CASE("lda reference: count invariants, rising loglik, relabelling invariance") {
  const std::uint32_t V = 30;
  const auto docs = synthetic_corpus(60, 40, V, 3, 11);
  for (auto kind : {ml::lda_sampler::plain, ml::lda_sampler::sparse}) {
    CAPTURE(static_cast<int>(kind));
    ml::lda_options opt;
    opt.num_topics = 3;
    opt.alpha = 0.1;
    opt.beta = 0.05;
    opt.iterations = 30;
    opt.seed = 3;
    opt.sampler = kind;
    const auto r = ml::lda_reference(docs, V, opt);
    check_invariants(r, docs);
    REQUIRE(r.loglik.size() == 31);
    CHECK(r.loglik_iteration.front() == 0);
    CHECK(r.loglik_iteration.back() == 30);
    // The planted topics are sharp, so the gain is large, not a fluctuation.
    CHECK(r.loglik.back() > r.loglik.front() + 500);
    const double tail = *std::min_element(r.loglik.end() - 5, r.loglik.end());
    CHECK(tail > r.loglik[1]);

    // Relabel topics (k -> perm[k]) in every table: the loglik must not change.
    const std::vector<std::uint32_t> perm{2, 0, 1};
    ml::lda_counts c = r.counts;
    for (std::uint32_t d = 0; d < c.num_docs; ++d)
      for (std::uint32_t k = 0; k < 3; ++k) c.doc(d)[perm[k]] = r.counts.doc(d)[k];
    for (std::uint32_t w = 0; w < V; ++w)
      for (std::uint32_t k = 0; k < 3; ++k) c.word(w)[perm[k]] = r.counts.word(w)[k];
    for (std::uint32_t k = 0; k < 3; ++k) c.topic_totals[perm[k]] = r.counts.topic_totals[k];
    CHECK(c.doc_topic != r.counts.doc_topic);
    CHECK(ml::lda_loglik(c, opt.alpha, opt.beta) == doctest::Approx(r.loglik.back()).epsilon(1e-12));
  }
}

TEST_CASE("lda reference: same seed, same result, and bad input throws") {
  const auto docs = synthetic_corpus(10, 20, 12, 3, 2);
  ml::lda_options opt;
  opt.num_topics = 3;
  opt.iterations = 5;
  opt.loglik_every = 0;
  const auto a = ml::lda_reference(docs, 12, opt), b = ml::lda_reference(docs, 12, opt);
  CHECK(a.topics == b.topics);
  CHECK(a.loglik == b.loglik);
  CHECK(a.loglik_iteration == std::vector<std::uint32_t>{0, 5});
  CHECK_THROWS_AS(ml::lda_reference(docs, 5, opt), strata::error);  // word ids ≥ V
  opt.num_topics = 0;
  CHECK_THROWS_AS(ml::lda_reference(docs, 12, opt), strata::error);
}

}  // namespace test_ml_lda
