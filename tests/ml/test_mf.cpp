#include <doctest/doctest.h>

#include <strata/core/error.hpp>
#include <strata/ml/io/ratings.hpp>
#include <strata/ml/mf.hpp>

#include <cmath>
#include <random>
#include <span>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_ml_mf {

namespace ml = strata::ml;
namespace io = strata::ml::io;

namespace {

/// An exactly rank-`rank` matrix 3 + A·Bᵀ, split into a training set (~`frac` of entries) and
/// the held-out rest; every user and item gets at least `rank` training ratings.
struct synthetic {
  io::rating_set train, test;
};
synthetic low_rank(std::uint32_t users, std::uint32_t items, std::uint32_t rank, double frac, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> a(users * rank), b(items * rank);
  for (auto& x : a) x = nd(rng) / std::sqrt(static_cast<float>(rank));
  for (auto& x : b) x = nd(rng);
  std::bernoulli_distribution keep(frac);
  synthetic s;
  for (std::uint32_t i = 0; i < users; ++i)
    for (std::uint32_t j = 0; j < items; ++j) {
      const float r = 3 + ml::mf_dot(std::span<const float>(&a[i * rank], rank), std::span<const float>(&b[j * rank], rank));
      // A band of width `rank` guarantees every user and item some training ratings.
      const bool forced = (j + items - i % items) % items < rank;
      (forced || keep(rng) ? s.train : s.test).ratings.push_back({i, j, r});
    }
  s.train.num_users = s.test.num_users = users;
  s.train.num_items = s.test.num_items = items;
  return s;
}

double global_mean_rmse(const io::rating_set& train, const io::rating_set& test) {
  const double mu = train.mean();
  double s = 0;
  for (const auto& r : test.ratings) s += (r.value - mu) * (r.value - mu);
  return std::sqrt(s / static_cast<double>(test.size()));
}

}  // namespace

TEST_CASE("mf sgd step: exact values and a descent direction") {
  std::vector<float> u{1, 2}, v{0.5f, -1};
  // e = 4 − (0.5 − 2) = 5.5; u' = u + 0.1(5.5 v − 0.2 u); v' = v + 0.1(5.5 u_old − 0.3 v)
  const float e = ml::mf_sgd_step(std::span<float>(u), std::span<float>(v), 4.0f, 0.1f, 0.2f, 0.3f);
  CHECK(e == doctest::Approx(5.5));
  CHECK(u[0] == doctest::Approx(1 + 0.1 * (5.5 * 0.5 - 0.2 * 1)));
  CHECK(u[1] == doctest::Approx(2 + 0.1 * (5.5 * -1 - 0.2 * 2)));
  CHECK(v[0] == doctest::Approx(0.5 + 0.1 * (5.5 * 1 - 0.3 * 0.5)));
  CHECK(v[1] == doctest::Approx(-1 + 0.1 * (5.5 * 2 - 0.3 * -1)));

  // A small step lowers the per-rating objective e² + λ‖u‖² + λ‖v‖².
  std::vector<float> a{0.3f, -0.2f, 0.7f}, b{0.1f, 0.4f, -0.5f};
  auto obj = [&] {
    const double r = 2.0 - ml::mf_dot(a, b);
    return r * r + 0.1 * (ml::mf_sq_norm(a) + ml::mf_sq_norm(b));
  };
  const double before = obj();
  ml::mf_sgd_step(std::span<float>(a), std::span<float>(b), 2.0f, 0.01f, 0.1f);
  CHECK(obj() < before);
  // The raw-pointer form with an offset: e is measured against offset + u·v.
  float p[2] = {1, 1}, q[2] = {1, 1};
  CHECK(ml::mf_sgd_step(p, q, 2, 5.0f, 0.0f, 0.0f, 0.0f, 3.0f) == doctest::Approx(0.0));
}

TEST_CASE("mf loss and rmse follow the SEEDS.md formulas") {
  const std::vector<float> U{1, 0, 0, 2}, V{1, 1, 3, -1};  // rank 2: u0=(1,0) u1=(0,2) v0=(1,1) v1=(3,-1)
  const std::vector<io::rating> rs{{0, 0, 2}, {1, 1, -1}, {1, 0, 2}};
  auto ur = [&](std::uint32_t i) { return std::span<const float>(&U[i * 2], 2); };
  auto vr = [&](std::uint32_t j) { return std::span<const float>(&V[j * 2], 2); };
  // residuals: 2−1 = 1, −1−(−2) = 1, 2−2 = 0 → SSE 2; norms 1+4+2+10 = 17
  CHECK(ml::mf_squared_error(rs, ur, vr) == doctest::Approx(2.0));
  CHECK(ml::mf_rmse(rs, ur, vr) == doctest::Approx(std::sqrt(2.0 / 3)));
  CHECK(ml::mf_loss(rs, ur, vr, 2, 2, 0.5) == doctest::Approx(2.0 + 0.5 * 17));
  CHECK(ml::mf_squared_error(rs, ur, vr, 1.0f) == doctest::Approx(0 + 0 + 1.0));
}

TEST_CASE("mf learning-rate schedule") {
  const ml::inverse_decay_schedule s{0.1, 0.5};
  CHECK(s(0) == doctest::Approx(0.1));
  CHECK(s(2) == doctest::Approx(0.05));
  CHECK(s(18) == doctest::Approx(0.01));
  CHECK(ml::inverse_decay_schedule{0.02, 0}(1000) == doctest::Approx(0.02));
}

TEST_CASE("mf reference fits a synthetic low-rank matrix and beats the global mean held out") {
  const auto data = low_rank(60, 50, 3, 0.5, 7);
  REQUIRE(data.test.size() > 800);
  ml::mf_options opt;
  opt.rank = 3;
  opt.lambda = 0.01;
  opt.eta = {0.05, 0.01};
  opt.epochs = 150;
  opt.seed = 1;
  const auto res = ml::mf_reference(data.train, opt);
  REQUIRE(res.loss.size() == 151);
  CHECK(res.loss.back() < 0.01 * res.loss.front());
  CHECK(res.train_rmse.back() < 0.05);
  const double held_out = res.model.rmse(data.test.ratings);
  const double baseline = global_mean_rmse(data.train, data.test);
  MESSAGE("train rmse ", res.train_rmse.back(), ", test rmse ", held_out, ", global-mean rmse ", baseline);
  CHECK(held_out < 0.2 * baseline);
  CHECK(held_out < 0.15);
  // The model's own rmse agrees with the accessor-based kernel.
  const auto& m = res.model;
  CHECK(ml::mf_rmse(data.test.ratings, [&](std::uint32_t i) { return m.user(i); }, [&](std::uint32_t j) { return m.item(j); },
                    m.offset) == doctest::Approx(held_out));
}

TEST_CASE("mf reference without centring still learns the offset through the factors") {
  const auto data = low_rank(40, 30, 2, 0.6, 3);
  ml::mf_options opt;
  opt.rank = 3;  // one spare dimension to carry the constant 3
  opt.lambda = 0.01;
  opt.eta = {0.03, 0.0};
  opt.epochs = 200;
  opt.center = false;
  opt.init_scale = 0.5f;
  const auto res = ml::mf_reference(data.train, opt);
  CHECK(res.model.offset == 0.0f);
  CHECK(res.model.rmse(data.test.ratings) < 0.5 * global_mean_rmse(data.train, data.test));
  opt.rank = 0;
  CHECK_THROWS_AS(ml::mf_reference(data.train, opt), strata::error);
}

}  // namespace test_ml_mf
