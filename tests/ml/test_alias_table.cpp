// The alias method (include/strata/ml/alias_table.hpp): draw frequencies match the weights
// (chi-square bound, fixed seed), zero weights are never drawn, pooled tables name their ids,
// and bad weights are refused.
#include <doctest/doctest.h>

#include <strata/ml/alias_table.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_ml_alias_table {

namespace {

/// Pearson's chi-square statistic of `draws` draws from `t` against its weights; outcomes of weight
/// 0 must never come up (counted in `impossible`).
double chi_square(const strata::ml::alias_table& t, const std::vector<double>& w, std::size_t draws, std::uint64_t seed,
                  std::size_t& impossible) {
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> seen(w.size(), 0);
  for (std::size_t i = 0; i < draws; ++i) ++seen.at(t(rng));
  double total = 0, chi = 0;
  for (double x : w) total += x;
  impossible = 0;
  for (std::size_t k = 0; k < w.size(); ++k) {
    if (w[k] == 0) {
      impossible += seen[k];
      continue;
    }
    const double expect = static_cast<double>(draws) * w[k] / total;
    chi += (static_cast<double>(seen[k]) - expect) * (static_cast<double>(seen[k]) - expect) / expect;
  }
  return chi;
}

}  // namespace

TEST_CASE("alias table: draw frequencies match the weights (chi-square, fixed seed), zero weights never drawn") {
  SUBCASE("six outcomes, two of weight 0") {
    const std::vector<double> w{1, 0, 3, 0.5, 7, 0};
    const strata::ml::alias_table t(w);
    CHECK(t.total() == doctest::Approx(11.5));
    std::size_t impossible = 0;
    const double chi = chi_square(t, w, 400000, 11, impossible);
    CHECK(impossible == 0);
    CHECK(chi < 16.27);  // chi-square, 3 degrees of freedom (4 outcomes drawn), p = 0.001
  }
  SUBCASE("fifty outcomes of random weights spanning four orders of magnitude") {
    std::mt19937_64 g(5);
    std::vector<double> w(50);
    for (auto& x : w) x = std::pow(10.0, 4.0 * static_cast<double>(g() % 1000) / 1000.0);
    const strata::ml::alias_table t(w);
    std::size_t impossible = 0;
    const double chi = chi_square(t, w, 1000000, 12, impossible);
    CHECK(chi < 85.35);  // chi-square, 49 degrees of freedom, p = 0.001
  }
  SUBCASE("one outcome") {
    const std::vector<double> w{2.5};
    const strata::ml::alias_table t(w);
    std::mt19937_64 rng(1);
    for (int i = 0; i < 100; ++i) CHECK(t(rng) == 0u);
  }
}

TEST_CASE("alias table: a pooled table reports the caller's ids, bad weights are refused") {
  const std::vector<double> w{2, 6};
  const std::vector<std::uint32_t> ids{17, 42};
  std::vector<strata::ml::alias_entry> out(2);
  std::vector<std::uint32_t> scratch;
  CHECK(strata::ml::build_alias(w, ids, out, scratch) == doctest::Approx(8));
  std::mt19937_64 rng(3);
  std::size_t n42 = 0;
  for (int i = 0; i < 80000; ++i) {
    const auto x = strata::ml::alias_draw(out, rng());
    REQUIRE((x == 17u || x == 42u));
    n42 += x == 42u;
  }
  CHECK(static_cast<double>(n42) / 80000 == doctest::Approx(0.75).epsilon(0.01));
  const std::vector<double> zeros{0, 0}, negative{1, -1};
  CHECK_THROWS_AS(strata::ml::alias_table{zeros}, strata::error);
  CHECK_THROWS_AS(strata::ml::alias_table{negative}, strata::error);
  CHECK_THROWS_AS(strata::ml::alias_table(std::vector<double>{}), strata::error);
}

}  // namespace test_ml_alias_table
