// Lawson–Hanson NNLS (include/strata/cost/nnls.hpp): known solutions, the KKT conditions on random
// and rank-deficient problems, bad input, and agreement with scipy.optimize.nnls (the residual
// norm; x itself may differ when A is rank-deficient) through tests/cost/nnls_reference.py.
#include <doctest/doctest.h>

#include "../paths.hpp"

#include <strata/core/error.hpp>
#include <strata/cost/nnls.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_cost_nnls {

namespace {
namespace cost = strata::cost;

xt::xtensor<double, 2> matrix(std::size_t m, std::size_t n, const std::vector<double>& rows) {
  xt::xtensor<double, 2> A = xt::zeros<double>({m, n});
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) A(i, j) = rows.at(i * n + j);
  return A;
}
xt::xtensor<double, 1> vec(const std::vector<double>& v) {
  xt::xtensor<double, 1> x = xt::zeros<double>({v.size()});
  for (std::size_t i = 0; i < v.size(); ++i) x(i) = v[i];
  return x;
}

/// A random problem; `kind` 0: Gaussian, 1: rank-deficient (duplicated and combined columns, a
/// zero column), 2: wide (m < n), 3: Gaussian with columns scaled by 10^-6 .. 10^6.
struct problem {
  xt::xtensor<double, 2> A;
  xt::xtensor<double, 1> b;
};
problem random_problem(std::mt19937_64& rng, int kind) {
  std::normal_distribution<double> g;
  std::uniform_int_distribution<std::size_t> dim(3, 12);
  std::size_t m = dim(rng) + 4, n = dim(rng);
  if (kind == 2) m = std::max<std::size_t>(2, n / 2);
  problem p{xt::zeros<double>({m, n}), xt::zeros<double>({m})};
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) p.A(i, j) = g(rng);
  if (kind == 1 && n >= 4) {
    for (std::size_t i = 0; i < m; ++i) {
      p.A(i, 1) = p.A(i, 0);                       // a duplicate
      p.A(i, 2) = 2 * p.A(i, 0) - 0.5 * p.A(i, 3);  // a combination
      p.A(i, n - 1) = 0;                           // a zero column
    }
  }
  if (kind == 3) {
    std::uniform_real_distribution<double> exponent(-6, 6);
    for (std::size_t j = 0; j < n; ++j) {
      const double f = std::pow(10.0, exponent(rng));
      for (std::size_t i = 0; i < m; ++i) p.A(i, j) *= f;
    }
  }
  for (std::size_t i = 0; i < m; ++i) p.b(i) = 3 * g(rng);
  return p;
}

/// x ≥ 0; w_j = A_jᵀ(b − Ax) ≤ tol_j where x_j = 0 and |w_j| ≤ tol_j where x_j > 0, tol_j relative
/// to the column's own norm: ‖A_j‖‖b‖ (relative to ‖A‖_F‖b‖, a column 1e-6 the size of the others
/// would pass whatever its dual).
void check_kkt(const problem& p, const cost::nnls_result& r) {
  const std::size_t m = p.A.shape(0), n = p.A.shape(1);
  double nb = 0;
  for (std::size_t i = 0; i < m; ++i) nb += p.b(i) * p.b(i);
  std::vector<double> res(m);
  double rr = 0;
  for (std::size_t i = 0; i < m; ++i) {
    double s = p.b(i);
    for (std::size_t j = 0; j < n; ++j) s -= p.A(i, j) * r.x(j);
    res[i] = s;
    rr += s * s;
  }
  CHECK(r.residual_norm == doctest::Approx(std::sqrt(rr)).epsilon(1e-12));
  for (std::size_t j = 0; j < n; ++j) {
    double w = 0, nj = 0;
    for (std::size_t i = 0; i < m; ++i) w += p.A(i, j) * res[i], nj += p.A(i, j) * p.A(i, j);
    const double tol = 1e-9 * std::sqrt(nj) * std::sqrt(nb) + 1e-300;
    INFO("column " << j << " x=" << r.x(j) << " w=" << w << " tol=" << tol);
    CHECK(r.x(j) >= 0);
    if (r.x(j) == 0) CHECK(w <= tol);
    else CHECK(std::abs(w) <= tol);
  }
}

/// A python3 that can import scipy: $STRATA_PYTHON, the system's /usr/bin/python3 (where Debian's
/// python3-scipy lives, even when another python3 comes first on PATH), then python3 on PATH.
std::string python_with_scipy() {
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("STRATA_PYTHON"); p && *p) candidates.push_back(p);
  candidates.push_back("/usr/bin/python3");
  candidates.push_back("python3");
  for (const auto& py : candidates)
    if (std::system(("\"" + py + "\" -c 'import scipy.optimize' >/dev/null 2>&1").c_str()) == 0) return py;
  return {};
}

std::string run_capture(const std::string& cmd, int& status) {
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) {
    status = -1;
    return out;
  }
  char buf[4096];
  while (std::size_t k = std::fread(buf, 1, sizeof buf, f)) out.append(buf, k);
  status = ::pclose(f);
  return out;
}

}  // namespace

TEST_CASE("nnls: known solutions") {
  SUBCASE("identity: negative entries of b are clipped to 0") {
    const auto r = cost::nnls(matrix(3, 3, {1, 0, 0, 0, 1, 0, 0, 0, 1}), vec({1, -2, 3}));
    CHECK(r.converged);
    CHECK(r.x(0) == doctest::Approx(1));
    CHECK(r.x(1) == 0);
    CHECK(r.x(2) == doctest::Approx(3));
    CHECK(r.residual_norm == doctest::Approx(2));
    CHECK(r.iterations == 2);
  }
  SUBCASE("a consistent system with a positive solution is solved exactly") {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(-1, 1);
    xt::xtensor<double, 2> A = xt::zeros<double>({20, 5});
    for (std::size_t i = 0; i < 20; ++i)
      for (std::size_t j = 0; j < 5; ++j) A(i, j) = u(rng);
    const auto xs = vec({0.5, 2, 1e-3, 7, 3});
    xt::xtensor<double, 1> b = xt::zeros<double>({20});
    for (std::size_t i = 0; i < 20; ++i)
      for (std::size_t j = 0; j < 5; ++j) b(i) += A(i, j) * xs(j);
    const auto r = cost::nnls(A, b);
    CHECK(r.converged);
    for (std::size_t j = 0; j < 5; ++j) CHECK(r.x(j) == doctest::Approx(xs(j)).epsilon(1e-9));
    CHECK(r.residual_norm < 1e-12);
  }
  SUBCASE("by hand: min (x1 - 1)^2 + (x1 + x2 + 1)^2 + x2^2 has x2 = 0, x1 = 0") {
    // Unconstrained: x1 = 4/3, x2 = -5/3 → x2 clipped; then x1 alone minimises (x1-1)^2 + (x1+1)^2: x1 = 0.
    const auto r = cost::nnls(matrix(3, 2, {1, 0, 1, 1, 0, 1}), vec({1, -1, 0}));
    CHECK(r.x(0) == doctest::Approx(0));
    CHECK(r.x(1) == 0);
    CHECK(r.residual_norm == doctest::Approx(std::sqrt(2.0)));
  }
  SUBCASE("b in the negative cone: x = 0 and no step") {
    const auto r = cost::nnls(matrix(2, 2, {1, 2, 3, 4}), vec({-1, -1}));
    CHECK(r.converged);
    CHECK(r.iterations == 0);
    CHECK(r.x(0) == 0);
    CHECK(r.x(1) == 0);
    CHECK(r.residual_norm == doctest::Approx(std::sqrt(2.0)));
  }
}

TEST_CASE("nnls: the KKT conditions hold on random, rank-deficient, wide and badly scaled problems") {
  std::mt19937_64 rng(42);
  for (int kind = 0; kind < 4; ++kind)
    for (int rep = 0; rep < 30; ++rep) {
      INFO("kind " << kind << " rep " << rep);
      const auto p = random_problem(rng, kind);
      const auto r = cost::nnls(p.A, p.b);
      CHECK(r.converged);
      check_kkt(p, r);
    }
}

TEST_CASE("nnls: duplicate columns share one solution's residual") {
  // Columns 0 and 1 are equal: any split of their weight is optimal; the residual is unique.
  const auto A = matrix(4, 3, {1, 1, 0, 2, 2, 1, 0, 0, 1, 1, 1, 3});
  const auto b = vec({1, 3, 1, 4});
  const auto r = cost::nnls(A, b);
  const auto r1 = cost::nnls(matrix(4, 2, {1, 0, 2, 1, 0, 1, 1, 3}), b);
  CHECK(r.converged);
  CHECK(r.residual_norm == doctest::Approx(r1.residual_norm).epsilon(1e-10));
  CHECK(r.x(0) + r.x(1) == doctest::Approx(r1.x(0)).epsilon(1e-9));
}

TEST_CASE("nnls: bad input is a strata::error naming what is wrong") {
  const auto A = matrix(2, 2, {1, 0, 0, 1});
  auto expect = [](auto&& f, const std::string& part) {
    try {
      f();
      FAIL("no error");
    } catch (const strata::error& e) {
      CHECK(e.code() == strata::errc::bad_input);
      CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
  };
  expect([&] { (void)cost::nnls(A, vec({1, 2, 3})); }, "2 rows but b has 3");
  expect([&] { (void)cost::nnls(A, vec({1, std::numeric_limits<double>::quiet_NaN()})); }, "b[1] is not finite");
  auto An = A;
  An(1, 0) = std::numeric_limits<double>::infinity();
  expect([&] { (void)cost::nnls(An, vec({1, 2})); }, "A[1][0] is not finite");
  expect([&] { (void)cost::nnls(xt::xtensor<double, 2>(xt::zeros<double>({2, 0})), vec({1, 2})); }, "no columns");
}

TEST_CASE("nnls: the residual agrees with scipy.optimize.nnls on random problems") {
  const std::string py = python_with_scipy();
  if (py.empty())
    FAIL("no python3 with scipy found ($STRATA_PYTHON, /usr/bin/python3, python3 on PATH): run scripts/deps.sh "
         "(it installs Debian's python3-scipy), or set STRATA_PYTHON to a python3 that can import scipy");
  const auto dir = std::filesystem::temp_directory_path() / ("strata_test_nnls_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::mt19937_64 rng(2024);
  std::map<std::string, std::pair<problem, cost::nnls_result>> cases;
  std::string files;
  for (int kind = 0; kind < 4; ++kind)
    for (int rep = 0; rep < 15; ++rep) {
      auto p = random_problem(rng, kind);
      // (appended piece by piece: GCC 12 at -O3 warns falsely on "p" + std::to_string(...), -Wrestrict)
      std::string name = "p";
      name += std::to_string(kind);
      name += '_';
      name += std::to_string(rep);
      name += ".txt";
      const auto path = (dir / name).string();
      std::ofstream f(path);
      char buf[40];
      f << p.A.shape(0) << ' ' << p.A.shape(1) << '\n';
      for (double v : p.A) std::snprintf(buf, sizeof buf, "%.17g ", v), f << buf;
      for (double v : p.b) std::snprintf(buf, sizeof buf, "%.17g ", v), f << buf;
      f << '\n';
      auto r = cost::nnls(p.A, p.b);
      cases.emplace(path, std::make_pair(std::move(p), std::move(r)));
      files += " '" + path + "'";
    }
  int status = 0;
  const std::string script = std::string(strata::test::source_dir()) + "/tests/cost/nnls_reference.py";
  const std::string out = run_capture("\"" + py + "\" '" + script + "'" + files + " 2>&1", status);
  std::filesystem::remove_all(dir);
  if (status != 0) FAIL("python failed (status " << status << "): " << out);
  std::istringstream in(out);
  std::string line;
  std::size_t compared = 0;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string path;
    double rnorm = 0;
    ls >> path >> rnorm;
    const auto it = cases.find(path);
    REQUIRE(it != cases.end());
    const auto& ours = it->second.second;
    const double nb = std::sqrt(static_cast<double>(xt::sum(it->second.first.b * it->second.first.b)()));
    INFO(path << ": ours " << ours.residual_norm << ", scipy " << rnorm << ", |b| " << nb);
    // 1e-8 relative; a zero residual (wide A) is zero to rounding, relative to |b|.
    CHECK(std::abs(ours.residual_norm - rnorm) <= 1e-8 * rnorm + 1e-12 * nb);
    ++compared;
  }
  CHECK(compared == cases.size());
}

}  // namespace test_cost_nnls
