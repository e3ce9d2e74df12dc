// The synthetic data generators (apps/trainers/synthetic.hpp, strata_gen) at tiny sizes: the same
// seed gives the same bytes and another seed other bytes, and one part's size leaves the other
// parts' draws alone; MF's counts, distinct pairs, rating range, test split, popularity skew and
// noise floor (recomputed from truth.factors.bin); LDA's counts read back, Zipf-like word
// frequencies, topics that are distributions and distinct; Lasso's rows read back with whole
// correlated groups, the recorded support, and its recovery by the sequential Lasso solver; every
// check file matches its data file, and a copy cut short is caught; the cache (cached_truth)
// accepts only a complete set of the same parameters; sizes past the disk or memory and options
// without meaning are refused before anything is written.
#include <doctest/doctest.h>

#include <strata/core/error.hpp>
#include <strata/ml/io/bag_of_words.hpp>
#include <strata/ml/io/file_check.hpp>
#include <strata/ml/io/libsvm.hpp>
#include <strata/ml/io/ratings.hpp>
#include <strata/ml/lasso.hpp>
#include <trainers/synthetic.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <unistd.h>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_ml_synthetic {

namespace fs = std::filesystem;
namespace gen = strata::ml::gen;
namespace io = strata::ml::io;

namespace {

/// A fresh folder under the system's temporary folder, removed at the end.
struct scratch_dir {
  fs::path path;
  explicit scratch_dir(const std::string& name)
      : path(fs::temp_directory_path() / ("strata_test_synthetic_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(path);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  ~scratch_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path operator/(const std::string& name) const { return path / name; }
};

/// A file's bytes (one read: the test's own code runs at -O0).
std::string slurp(const fs::path& p) {
  std::string bytes(fs::file_size(p), '\0');
  std::ifstream in(p, std::ios::binary);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(in.gcount() == static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

gen::mf_options tiny_mf(std::uint64_t seed = 1) {
  auto o = gen::mf_preset("tiny");
  o.seed = seed;
  return o;
}
gen::lda_options tiny_lda(std::uint64_t seed = 1) {
  auto o = gen::lda_preset("tiny");
  o.seed = seed;
  return o;
}
gen::lasso_options tiny_lasso(std::uint64_t seed = 1) {
  auto o = gen::lasso_preset("tiny");
  o.seed = seed;
  return o;
}

/// True when every file both outcomes list has the same bytes.
bool same_files(const gen::gen_outcome& a, const gen::gen_outcome& b) {
  if (a.files.size() != b.files.size()) return false;
  for (std::size_t k = 0; k < a.files.size(); ++k)
    if (a.files[k].name != b.files[k].name || slurp(a.dir / a.files[k].name) != slurp(b.dir / b.files[k].name)) return false;
  return true;
}

/// The floats after a truth file's header (8-byte magic, `sizes` uint32s), checking the magic.
std::vector<float> binary_body(const fs::path& p, const char* magic, std::vector<std::uint32_t>& sizes, std::size_t n_sizes) {
  const std::string bytes = slurp(p);
  REQUIRE(bytes.size() >= 8 + 4 * n_sizes);
  CHECK(bytes.compare(0, 8, magic) == 0);
  sizes.resize(n_sizes);
  std::memcpy(sizes.data(), bytes.data() + 8, 4 * n_sizes);  // little-endian: the machines strata builds on
  std::vector<float> v((bytes.size() - 8 - 4 * n_sizes) / 4);
  std::memcpy(v.data(), bytes.data() + 8 + 4 * n_sizes, v.size() * 4);
  return v;
}

/// The least-squares slope of log(frequency) against log(rank) over the `top` most frequent.
double zipf_slope(std::vector<double> freq, std::size_t top) {
  std::sort(freq.begin(), freq.end(), std::greater<>());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t r = 0; r < top; ++r) {
    const double x = std::log(static_cast<double>(r + 1)), y = std::log(freq[r]);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double n = static_cast<double>(top);
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

/// The strata::error that `f` throws (its code and message); fails the test when none is thrown.
template <class F>
std::pair<std::error_code, std::string> thrown(F&& f) {
  try {
    f();
  } catch (const strata::error& e) {
    return {e.code(), e.what()};
  }
  FAIL("no strata::error thrown");
  return {};
}

}  // namespace

TEST_CASE("synthetic: the same seed gives the same bytes, another seed other bytes, one part's size leaves the others' draws") {
  scratch_dir s("determinism");
  SUBCASE("mf") {
    const auto a = gen::generate_mf(tiny_mf(), s / "a"), b = gen::generate_mf(tiny_mf(), s / "b");
    CHECK(same_files(a.out, b.out));
    const auto c = gen::generate_mf(tiny_mf(2), s / "c");
    CHECK(slurp(s / "a/ratings.train.txt") != slurp(s / "c/ratings.train.txt"));
    CHECK(slurp(s / "a/truth.factors.bin") != slurp(s / "c/truth.factors.bin"));
    auto fewer = tiny_mf();
    fewer.ratings = 30000;  // other ratings, the same factors
    gen::generate_mf(fewer, s / "d");
    CHECK(slurp(s / "a/truth.factors.bin") == slurp(s / "d/truth.factors.bin"));
    CHECK(slurp(s / "a/ratings.train.txt") != slurp(s / "d/ratings.train.txt"));
  }
  SUBCASE("lda") {
    const auto a = gen::generate_lda(tiny_lda(), s / "a"), b = gen::generate_lda(tiny_lda(), s / "b");
    CHECK(same_files(a.out, b.out));
    gen::generate_lda(tiny_lda(3), s / "c");
    CHECK(slurp(s / "a/docword.tiny.txt") != slurp(s / "c/docword.tiny.txt"));
    auto fewer = tiny_lda();
    fewer.docs = 200;  // other documents, the same topics
    gen::generate_lda(fewer, s / "d");
    CHECK(slurp(s / "a/truth.topics.bin") == slurp(s / "d/truth.topics.bin"));
  }
  SUBCASE("lasso") {
    const auto a = gen::generate_lasso(tiny_lasso(), s / "a"), b = gen::generate_lasso(tiny_lasso(), s / "b");
    CHECK(same_files(a.out, b.out));
    gen::generate_lasso(tiny_lasso(4), s / "c");
    CHECK(slurp(s / "a/lasso.tiny.svm") != slurp(s / "c/lasso.tiny.svm"));
    auto fewer = tiny_lasso();
    fewer.samples = 50;  // other rows, the same coefficients
    gen::generate_lasso(fewer, s / "d");
    CHECK(slurp(s / "a/truth.beta.txt") == slurp(s / "d/truth.beta.txt"));
  }
}

TEST_CASE("synthetic mf: exact counts, distinct pairs, ratings in [1, 5], a 10% test split, skewed users, the noise floor") {
  scratch_dir s("mf");
  const auto o = tiny_mf();
  const auto t = gen::generate_mf(o, s.path);
  const auto train = io::read_ratings(s / "ratings.train.txt"), test = io::read_ratings(s / "ratings.test.txt");
  CHECK(train.size() == t.ratings_train);
  CHECK(test.size() == t.ratings_test);
  CHECK(t.ratings_train + t.ratings_test == o.ratings);
  // Distinct (user, item) pairs over both files, ratings with one decimal in [1, 5], at most half the items a user.
  std::vector<std::uint64_t> pairs;
  std::vector<std::uint64_t> per_user(o.users, 0);
  for (const auto* set : {&train, &test})
    for (const auto& r : set->ratings) {
      const std::uint64_t u = set->user_id(r.user), i = set->item_id(r.item);
      REQUIRE(u < o.users);
      REQUIRE(i < o.items);
      pairs.push_back(u * o.items + i);
      ++per_user[u];
      CHECK(r.value >= 1.0f);
      CHECK(r.value <= 5.0f);
      CHECK(std::fabs(r.value * 10 - std::round(r.value * 10)) < 1e-3);
    }
  std::sort(pairs.begin(), pairs.end());
  CHECK(std::adjacent_find(pairs.begin(), pairs.end()) == pairs.end());
  CHECK(*std::max_element(per_user.begin(), per_user.end()) <= o.items / 2);
  CHECK(*std::min_element(per_user.begin(), per_user.end()) >= 1);  // N >= U: one rating each first
  // The test share: within 4 standard deviations of the binomial's 0.1.
  const double n = static_cast<double>(o.ratings), share = static_cast<double>(t.ratings_test) / n;
  CHECK(std::fabs(share - 0.1) < 4 * std::sqrt(0.1 * 0.9 / n));
  // Popularity: the 10% most active users hold more than 30% of the ratings (a uniform draw: 10%).
  std::sort(per_user.begin(), per_user.end(), std::greater<>());
  const auto top = std::accumulate(per_user.begin(), per_user.begin() + o.users / 10, std::uint64_t{0});
  CHECK(static_cast<double>(top) / n > 0.3);
  CHECK(static_cast<double>(top) / n == doctest::Approx(t.top_decile_user_share).epsilon(1e-9));
  // The noise floor, recomputed from truth.factors.bin: the clipped truth against the test ratings.
  std::vector<std::uint32_t> sizes;
  const auto f = binary_body(s / "truth.factors.bin", "STRGENMF", sizes, 3);
  REQUIRE(sizes == std::vector<std::uint32_t>{o.rank, o.users, o.items});
  REQUIRE(f.size() == std::size_t{o.users + o.items} * (o.rank + 1));
  double sq = 0;
  for (const auto& r : test.ratings) {
    const float* p = &f[test.user_id(r.user) * (o.rank + 1)];
    const float* q = &f[(o.users + test.item_id(r.item)) * (o.rank + 1)];
    double pred = o.mean + p[0] + q[0];
    for (std::uint32_t k = 1; k <= o.rank; ++k) pred += double(p[k]) * q[k];
    const double e = std::clamp(pred, 1.0, 5.0) - static_cast<double>(r.value);
    sq += e * e;
  }
  const double floor = std::sqrt(sq / static_cast<double>(test.size()));
  CHECK(floor == doctest::Approx(t.noise_floor_rmse).epsilon(1e-5));
  // Clipping is 1-Lipschitz, so the floor is at most σ (and the 0.05 of rounding); it takes off less than 25%.
  CHECK(t.noise_floor_rmse < 1.03 * o.noise + 0.01);
  CHECK(t.noise_floor_rmse > 0.75 * o.noise);
  const auto truth = gen::cached_truth(s.path, gen::mf_params(o));
  REQUIRE(truth);
  CHECK(truth->find("summary")->find("ratings_test")->as_number() == static_cast<double>(t.ratings_test));
}

TEST_CASE("synthetic lda: the corpus reads back with its counts, Zipf-like word frequencies, topics that are distinct distributions") {
  scratch_dir s("lda");
  const auto o = tiny_lda();
  const auto t = gen::generate_lda(o, s.path);
  const auto bow = io::read_bag_of_words(s / "docword.tiny.txt");
  CHECK(bow.num_docs == o.docs);
  CHECK(bow.num_words == o.vocab);
  CHECK(bow.num_tokens() == t.tokens);
  CHECK(bow.nnz() == t.nnz);
  // Lognormal lengths of mean T/D (spread 0.6: a document's standard deviation is 0.66 of the mean).
  const double mean = static_cast<double>(o.tokens) / o.docs;
  CHECK(std::fabs(static_cast<double>(t.tokens) - static_cast<double>(o.tokens)) < 4 * 0.66 * mean * std::sqrt(double(o.docs)));
  const auto vocab = io::read_vocab(s / "vocab.tiny.txt");
  REQUIRE(vocab.size() == o.vocab);
  CHECK(vocab.front() == "w1");
  // Word frequencies: the top 100's log-log slope near the base's −1.07 (−0.7 to −1.6 at this size).
  std::vector<double> freq(o.vocab, 0);
  for (std::size_t k = 0; k < bow.nnz(); ++k) freq[bow.word_ids[k]] += bow.counts[k];
  const double slope = zipf_slope(freq, 100);
  CHECK(slope < -0.7);
  CHECK(slope > -1.6);
  // The true model explains the corpus better than its own unigram frequencies.
  double unigram = 0;
  for (const double c : freq)
    if (c > 0) unigram += c * std::log(c / static_cast<double>(t.tokens));
  CHECK(t.loglik_per_token > unigram / static_cast<double>(t.tokens) + 0.25);  // by 0.49 nats at seed 1
  CHECK(t.loglik_per_token < 0);
  // truth.topics.bin: K distributions over V words, pairwise distinct (total variation > 0.2).
  std::vector<std::uint32_t> sizes;
  const auto phi = binary_body(s / "truth.topics.bin", "STRGENTP", sizes, 2);
  REQUIRE(sizes == std::vector<std::uint32_t>{o.topics, o.vocab});
  REQUIRE(phi.size() == std::size_t{o.topics} * o.vocab);
  for (std::uint32_t k = 0; k < o.topics; ++k) {
    const double sum = std::accumulate(phi.begin() + k * o.vocab, phi.begin() + (k + 1) * o.vocab, 0.0);
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-4));
    CHECK(*std::min_element(phi.begin() + k * o.vocab, phi.begin() + (k + 1) * o.vocab) >= 0.0f);
    for (std::uint32_t l = 0; l < k; ++l) {
      double tv = 0;
      for (std::uint32_t w = 0; w < o.vocab; ++w) tv += std::fabs(phi[k * o.vocab + w] - phi[l * o.vocab + w]) / 2;
      CHECK(tv > 0.2);
    }
  }
}

TEST_CASE("synthetic lasso: rows of whole correlated groups read back, the recorded support, recovered by the Lasso solver") {
  scratch_dir s("lasso");
  SUBCASE("tiny: the rows and the truth") {
    const auto o = tiny_lasso();
    const auto t = gen::generate_lasso(o, s.path);
    const auto d = io::read_libsvm(s / "lasso.tiny.svm");
    REQUIRE(d.num_rows() == o.samples);
    CHECK(d.nnz() == t.nnz);
    CHECK(t.nnz == std::uint64_t{o.samples} * o.nnz_per_row);  // 2 whole groups of 10 a row
    std::vector<double> a, b;  // features 0 and 1 of one group, where it is active
    std::vector<std::uint64_t> seen(o.features / o.group, 0);
    for (std::size_t i = 0; i < d.num_rows(); ++i) {
      const auto idx = d.row_indices(i);
      REQUIRE(idx.size() == o.nnz_per_row);
      for (std::size_t k = 0; k < idx.size(); ++k) CHECK(idx[k] % o.group == k % o.group);  // whole groups, in order
      ++seen[idx[0] / o.group], ++seen[idx[o.group] / o.group];
    }
    const auto busiest = static_cast<std::uint32_t>(std::max_element(seen.begin(), seen.end()) - seen.begin());
    for (std::size_t i = 0; i < d.num_rows(); ++i) {
      const auto idx = d.row_indices(i);
      const auto val = d.row_values(i);
      for (std::size_t k = 0; k < idx.size(); ++k)
        if (idx[k] == busiest * o.group) a.push_back(val[k]), b.push_back(val[k + 1]);
    }
    REQUIRE(a.size() >= 8);
    const double ma = std::accumulate(a.begin(), a.end(), 0.0) / a.size(), mb = std::accumulate(b.begin(), b.end(), 0.0) / b.size();
    double sab = 0, saa = 0, sbb = 0;
    for (std::size_t k = 0; k < a.size(); ++k) sab += (a[k] - ma) * (b[k] - mb), saa += (a[k] - ma) * (a[k] - ma), sbb += (b[k] - mb) * (b[k] - mb);
    CHECK(sab / std::sqrt(saa * sbb) > 0.7);  // 1 / (1 + 0.3²) = 0.92 in expectation
    // truth.beta.txt: the support, 1-based and increasing, values ±[0.5, 1.5].
    REQUIRE(t.support == o.support_size());
    CHECK(t.support == 10);
    std::ifstream in(s / "truth.beta.txt");
    std::uint64_t index = 0, prev = 0, lines = 0;
    double value = 0;
    while (in >> index >> value) {
      CHECK(index > prev);
      CHECK(index <= o.features);
      CHECK(index - 1 == t.support_ids.at(lines));
      CHECK(value == t.beta.at(lines));
      CHECK(std::fabs(value) >= 0.5);
      CHECK(std::fabs(value) <= 1.5);
      prev = index, ++lines;
    }
    CHECK(lines == t.support);
  }
  SUBCASE("recovery: the largest coefficients of the Lasso fit are the true support") {
    gen::lasso_options o;
    o.name = "recovery";
    o.samples = 600, o.features = 300, o.nnz_per_row = 30, o.support = 10, o.group = 5, o.sigma = 0.5, o.seed = 3;
    const auto t = gen::generate_lasso(o, s.path);
    const auto p = strata::ml::lasso_problem::from(io::read_libsvm(s / "lasso.recovery.svm"), {.center_y = true, .standardize_x = true});
    const auto fit = strata::ml::lasso_cd(p, 0.05 * p.lambda_max(), 1e-6);
    std::vector<std::uint32_t> order(fit.beta.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](auto x, auto y) { return std::fabs(fit.beta[x]) > std::fabs(fit.beta[y]); });
    std::size_t top = 0, nonzero = 0;
    for (std::size_t k = 0; k < t.support; ++k) top += std::binary_search(t.support_ids.begin(), t.support_ids.end(), order[k]);
    for (const auto j : t.support_ids) nonzero += fit.beta.at(j) != 0;
    CHECK(nonzero * 10 >= 8 * t.support);  // at least 80% of the support is in the fit (20 of 20 seeds at these sizes)
    CHECK(top * 10 >= 8 * t.support);      // and among its largest coefficients (20 of 20 seeds)
  }
}

TEST_CASE("synthetic: every check file matches its data file, a copy cut short is caught, the cache wants the complete set") {
  scratch_dir s("checks");
  const auto o = tiny_lda();
  const auto t = gen::generate_lda(o, s / "lda");
  REQUIRE(t.out.files.size() == 3);
  std::uint64_t bytes = 0;
  for (const auto& f : t.out.files) {
    const auto recorded = io::read_check(s / "lda" / f.name);
    REQUIRE(recorded);
    CHECK(*recorded == f.check);
    CHECK(io::compute_check(s / "lda" / f.name) == f.check);
    bytes += f.check.bytes;
  }
  CHECK(t.out.bytes == bytes);
  CHECK_FALSE(fs::exists(s / "lda/docword.tiny.txt.body.tmp"));
  CHECK_FALSE(fs::exists(s / "lda/docword.tiny.txt.tmp"));
  // A copy cut short by 3 bytes, with the original's check file.
  fs::copy_file(s / "lda/docword.tiny.txt", s / "cut.txt");
  fs::copy_file(io::check_path(s / "lda/docword.tiny.txt"), io::check_path(s / "cut.txt"));
  fs::resize_file(s / "cut.txt", fs::file_size(s / "cut.txt") - 3);
  CHECK_THROWS_WITH_AS(io::verify_check(s / "cut.txt", *io::read_check(s / "cut.txt"), io::compute_check(s / "cut.txt")),
                       doctest::Contains("cut short"), strata::error);
  // The cache: the complete set of the same parameters only; its summary line.
  const auto cached = gen::cached_truth(s / "lda", gen::lda_params(o));
  REQUIRE(cached);
  const std::string line = gen::summary_line(*cached);
  CHECK(line.rfind("gen summary: kind=lda name=tiny docs=500 vocab=1000 topics=10 tokens=" + std::to_string(t.tokens) + " ", 0) == 0);
  CHECK(line.find(" bytes=" + std::to_string(t.out.bytes)) != std::string::npos);
  CHECK_FALSE(gen::cached_truth(s / "lda", gen::lda_params(tiny_lda(2))));
  fs::resize_file(s / "lda/vocab.tiny.txt", fs::file_size(s / "lda/vocab.tiny.txt") - 1);
  CHECK_FALSE(gen::cached_truth(s / "lda", gen::lda_params(o)));
  gen::generate_lda(o, s / "lda");
  REQUIRE(gen::cached_truth(s / "lda", gen::lda_params(o)));
  fs::remove(io::check_path(s / "lda/truth.topics.bin"));
  CHECK_FALSE(gen::cached_truth(s / "lda", gen::lda_params(o)));
}

TEST_CASE("synthetic: sizes past the disk or the memory are refused before anything is written, as are options without meaning") {
  scratch_dir s("refuse");
  auto huge = tiny_mf();
  huge.users = 100000000, huge.items = 100000, huge.ratings = 1000000000000, huge.rank = 1;
  const auto [code, what] = thrown([&] { gen::generate_mf(huge, s / "huge"); });
  CHECK(code == strata::errc::refused);
  CHECK(what.find("1000000000000 ratings") != std::string::npos);
  CHECK(what.find("TiB of disk") != std::string::npos);
  CHECK_FALSE(fs::exists(s / "huge"));
  const auto memory = thrown([&] {
    gen::check_resources("lda", s.path, {.disk_bytes = 0, .memory_bytes = std::numeric_limits<std::uint64_t>::max() - 1,
                                         .disk_what = "", .memory_what = "a test"});
  });
  CHECK(memory.first == strata::errc::refused);
  CHECK(memory.second.find("of memory (a test), more than the") != std::string::npos);
  // Options without meaning name strata_gen's flag.
  const auto bad = [](auto f, const char* flag) {
    const auto [c, w] = thrown(f);
    CHECK(c == strata::errc::bad_input);
    CHECK_MESSAGE(w.rfind(flag, 0) == 0, w);
  };
  bad([] { gen::mf_preset("huge"); }, "--size: unknown size 'huge'");
  bad([] { auto o = tiny_mf(); o.ratings = std::uint64_t{o.users} * (o.items / 2) + 1, gen::check_mf_options(o); }, "--ratings: ");
  bad([] { auto o = tiny_mf(); o.items = 1, gen::check_mf_options(o); }, "--items: ");
  bad([] { auto o = tiny_mf(); o.noise = std::nan(""), gen::check_mf_options(o); }, "--noise: ");
  bad([] { auto o = tiny_lda(); o.alpha = -1, gen::check_lda_options(o); }, "--alpha: ");
  bad([] { auto o = tiny_lda(); o.docs = 0, gen::check_lda_options(o); }, "--docs: ");
  bad([] { auto o = tiny_lasso(); o.nnz_per_row = 600, gen::check_lasso_options(o); }, "--nnz-per-row: ");
  bad([] { auto o = tiny_lasso(); o.support = 1001, gen::check_lasso_options(o); }, "--support: ");
  bad([] { auto o = tiny_lasso(); o.sigma = -0.5, gen::check_lasso_options(o); }, "--sigma: ");
}

}  // namespace test_ml_synthetic
