#include <doctest/doctest.h>

#include <strata/core/error.hpp>
#include <strata/core/stats.hpp>

#include <ostream>
#include <random>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_core_stats {

TEST_CASE("running_stats matches a two-pass mean and variance, also after merge") {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> nd(3.0, 2.0);
  std::vector<double> xs(1000);
  for (auto& x : xs) x = nd(rng);
  strata::running_stats a, b, all;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    (i < 300 ? a : b).add(xs[i]);
    all.add(xs[i]);
  }
  double mean = 0;
  for (double x : xs) mean += x;
  mean /= static_cast<double>(xs.size());
  double var = 0;
  for (double x : xs) var += (x - mean) * (x - mean);
  var /= static_cast<double>(xs.size());
  a.merge(b);
  CHECK(all.mean() == doctest::Approx(mean));
  CHECK(all.variance() == doctest::Approx(var));
  CHECK(a.mean() == doctest::Approx(mean));
  CHECK(a.variance() == doctest::Approx(var));
  CHECK(a.count() == xs.size());
}

TEST_CASE("int_histogram counts negative and positive values") {
  strata::int_histogram h;
  h.add(-1);
  h.add(0, 3);
  h.add(2);
  CHECK(h.count() == 5);
  CHECK(h.bins().at(0) == 3);
  CHECK(h.bins().begin()->first == -1);
  CHECK(h.stats().max() == 2);
  CHECK(h.stats().mean() == doctest::Approx(0.2));
}

TEST_CASE("strata::error carries a strata error code and message") {
  strata::error e(strata::errc::peer_lost, "rank 2 (127.0.0.1:9000) lost");
  CHECK(e.code() == strata::errc::peer_lost);
  CHECK(std::string(e.what()).find("rank 2") != std::string::npos);
  CHECK(e.code().category().name() == std::string("strata"));
}

}  // namespace test_core_stats
