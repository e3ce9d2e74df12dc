#pragma once
/// \file Non-negative least squares: min ‖Ax − b‖₂ subject to x ≥ 0, by Lawson and Hanson's
/// active-set method ("Solving Least Squares Problems", 1974, ch. 23), the algorithm behind
/// scipy.optimize.nnls and the fitter of Ernest's system model (cost/system_model.hpp).
///
/// The method keeps a passive set P (the columns allowed to be positive; all others are held at
/// 0). Each outer step moves into P the column whose dual w_j = [Aᵀ(b − Ax)]_j is largest, solves
/// the unconstrained least-squares problem on the columns of P, and, while that solution has a
/// non-positive entry, steps back towards it only as far as feasibility allows and drops the
/// columns that reach 0. It ends when every w_j ≤ tol outside P: the KKT conditions (x ≥ 0,
/// w ≤ 0 where x = 0, w = 0 where x > 0) then hold to rounding. It works on A with its columns
/// scaled to unit norm, so a column's size does not decide whether it may enter.
///
/// The subproblems are solved by Householder QR with column pivoting; a column whose pivot is
/// negligible (A rank-deficient on P) is held at 0, so rank-deficient A gives one of the minimisers
/// (the residual is unique, x need not be). Depends on core/ and xtensor only.
#include <strata/core/error.hpp>

#include <xtensor/xtensor.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace strata::cost {

/// Settings of nnls(); the defaults suit problems of a few hundred rows and tens of columns.
struct nnls_options {
  /// Dual tolerance: stop when every w_j / ‖A_j‖ ≤ tol outside the passive set (the dual of A with
  /// its columns scaled to unit norm). 0: automatic, 10·ε·max(m, n)·√n·‖b‖₂ (the scale of the
  /// scaled Aᵀb's rounding error).
  double tolerance = 0;
  /// Outer steps allowed before giving up (0: 3·n + 30; Lawson–Hanson needs about n in practice).
  std::size_t max_iterations = 0;
};

/// The solution of an NNLS problem.
struct nnls_result {
  xt::xtensor<double, 1> x;       ///< the minimiser, every entry ≥ 0
  double residual_norm = 0;       ///< ‖Ax − b‖₂
  std::size_t iterations = 0;     ///< outer steps taken (columns moved into the passive set)
  bool converged = false;         ///< false when max_iterations ran out first (x is feasible, maybe not optimal)
  xt::xtensor<double, 1> dual;    ///< w = Aᵀ(b − Ax) at the end (w_j / ‖A_j‖ ≤ tol where x = 0, ≈ 0 where x > 0)
  double tolerance = 0;           ///< the dual tolerance used (on the unit-norm columns' duals)
};

namespace detail {

/// Least squares min ‖A[:, cols]·z − b‖ by Householder QR with column pivoting; entries of
/// columns with a negligible pivot (linearly dependent on earlier ones) are 0.
inline std::vector<double> nnls_subproblem(const xt::xtensor<double, 2>& A, const xt::xtensor<double, 1>& b,
                                           const std::vector<std::size_t>& cols) {
  const std::size_t m = A.shape(0), k = cols.size();
  std::vector<double> Q(m * k);  // column-major copy of the chosen columns
  for (std::size_t c = 0; c < k; ++c)
    for (std::size_t i = 0; i < m; ++i) Q[c * m + i] = A(i, cols[c]);
  std::vector<double> y(b.begin(), b.end());
  std::vector<std::size_t> perm(k);
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  std::vector<double> norms(k);
  for (std::size_t c = 0; c < k; ++c) {
    double s = 0;
    for (std::size_t i = 0; i < m; ++i) s += Q[c * m + i] * Q[c * m + i];
    norms[c] = s;
  }
  const double max_norm = k ? std::sqrt(*std::max_element(norms.begin(), norms.end())) : 0.0;
  const double negligible = static_cast<double>(std::max(m, k)) * std::numeric_limits<double>::epsilon() * 16 * max_norm;
  std::size_t rank = 0;
  const std::size_t steps = std::min(m, k);
  for (std::size_t j = 0; j < steps; ++j) {
    // Pivot: the remaining column of largest norm below row j (recomputed: k is small).
    std::size_t best = j;
    double best_norm = -1;
    for (std::size_t c = j; c < k; ++c) {
      double s = 0;
      for (std::size_t i = j; i < m; ++i) s += Q[c * m + i] * Q[c * m + i];
      if (s > best_norm) best_norm = s, best = c;
    }
    if (std::sqrt(best_norm) <= negligible) break;
    if (best != j) {
      std::swap_ranges(Q.begin() + static_cast<std::ptrdiff_t>(j * m), Q.begin() + static_cast<std::ptrdiff_t>((j + 1) * m),
                       Q.begin() + static_cast<std::ptrdiff_t>(best * m));
      std::swap(perm[j], perm[best]);
    }
    // Householder reflector v = x − α e_j, α = −sign(x_j)‖x‖, applied to the later columns and y.
    double* col = &Q[j * m];
    const double alpha = (col[j] > 0 ? -1.0 : 1.0) * std::sqrt(best_norm);
    col[j] -= alpha;
    double vnorm2 = 0;
    for (std::size_t i = j; i < m; ++i) vnorm2 += col[i] * col[i];
    if (vnorm2 > 0) {
      auto reflect = [&](double* v) {
        double d = 0;
        for (std::size_t i = j; i < m; ++i) d += col[i] * v[i];
        const double f = 2 * d / vnorm2;
        for (std::size_t i = j; i < m; ++i) v[i] -= f * col[i];
      };
      for (std::size_t c = j + 1; c < k; ++c) reflect(&Q[c * m]);
      reflect(y.data());
    }
    col[j] = alpha;  // R's diagonal; the rest of the column below is no longer needed
    ++rank;
  }
  // Back substitution on the leading rank×rank block of R.
  std::vector<double> zp(k, 0.0);
  for (std::size_t r = rank; r-- > 0;) {
    double s = y[r];
    for (std::size_t c = r + 1; c < rank; ++c) s -= Q[c * m + r] * zp[c];
    zp[r] = s / Q[r * m + r];
  }
  std::vector<double> z(k, 0.0);
  for (std::size_t c = 0; c < k; ++c) z[perm[c]] = zp[c];
  return z;
}

inline void nnls_dual(const xt::xtensor<double, 2>& A, const xt::xtensor<double, 1>& b, const xt::xtensor<double, 1>& x,
                      xt::xtensor<double, 1>& w, double& rnorm) {
  const std::size_t m = A.shape(0), n = A.shape(1);
  std::vector<double> r(m);
  double rr = 0;
  for (std::size_t i = 0; i < m; ++i) {
    double s = b(i);
    for (std::size_t j = 0; j < n; ++j) s -= A(i, j) * x(j);
    r[i] = s;
    rr += s * s;
  }
  rnorm = std::sqrt(rr);
  for (std::size_t j = 0; j < n; ++j) {
    double s = 0;
    for (std::size_t i = 0; i < m; ++i) s += A(i, j) * r[i];
    w(j) = s;
  }
}

}  // namespace detail

/// Solves min ‖Ax − b‖₂ subject to x ≥ 0 (see the file comment). Throws strata::error(bad_input)
/// when b's length is not A's row count, A has no columns, or an entry of A or b is not finite.
/// Does not throw when the iteration limit runs out: `converged` is false then.
inline nnls_result nnls(const xt::xtensor<double, 2>& A, const xt::xtensor<double, 1>& b, const nnls_options& opt = {}) {
  const std::size_t m = A.shape(0), n = A.shape(1);
  if (b.shape(0) != m)
    throw error(errc::bad_input, "nnls: A has " + std::to_string(m) + " rows but b has " + std::to_string(b.shape(0)) + " entries");
  if (n == 0) throw error(errc::bad_input, "nnls: A has no columns");
  double normb = 0;
  for (std::size_t i = 0; i < m; ++i) {
    if (!std::isfinite(b(i))) throw error(errc::bad_input, "nnls: b[" + std::to_string(i) + "] is not finite");
    normb += b(i) * b(i);
    for (std::size_t j = 0; j < n; ++j) {
      if (!std::isfinite(A(i, j)))
        throw error(errc::bad_input, "nnls: A[" + std::to_string(i) + "][" + std::to_string(j) + "] is not finite");
    }
  }
  // Columns scaled to unit norm (a zero column stays 0): the dual test compares w_j across columns,
  // and with A's own scales a column 1e-6 the size of the others never passed the tolerance (scipy
  // reached residuals up to 1% smaller on such problems). x and w are scaled back at the end.
  std::vector<double> scale(n, 1.0);
  for (std::size_t j = 0; j < n; ++j) {
    double c = 0;
    for (std::size_t i = 0; i < m; ++i) c += A(i, j) * A(i, j);
    if (c > 0) scale[j] = 1 / std::sqrt(c);
  }
  xt::xtensor<double, 2> As = A;
  double normAs = 0;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) As(i, j) *= scale[j], normAs += As(i, j) * As(i, j);
  nnls_result res;
  res.tolerance = opt.tolerance > 0 ? opt.tolerance
                                    : 10 * std::numeric_limits<double>::epsilon() * static_cast<double>(std::max(m, n)) *
                                          std::sqrt(normAs) * std::sqrt(normb);
  auto unscaled = [&](nnls_result r) {
    for (std::size_t j = 0; j < n; ++j) r.x(j) *= scale[j], r.dual(j) /= scale[j];
    return r;
  };
  const std::size_t max_it = opt.max_iterations ? opt.max_iterations : 3 * n + 30;
  res.x = xt::zeros<double>({n});
  res.dual = xt::zeros<double>({n});
  std::vector<char> passive(n, 0);
  detail::nnls_dual(As, b, res.x, res.dual, res.residual_norm);

  while (res.iterations < max_it) {
    // Candidates: columns outside P with w_j > tol, largest first. A candidate whose own
    // coefficient comes out ≤ 0 in the subproblem (rounding, or dependence on P) is skipped for
    // this step, as Lawson and Hanson prescribe, else the loop could cycle on it.
    std::vector<char> tried(n, 0);
    bool moved = false;
    for (;;) {
      std::size_t t = n;
      double best = res.tolerance;
      for (std::size_t j = 0; j < n; ++j)
        if (!passive[j] && !tried[j] && res.dual(j) > best) best = res.dual(j), t = j;
      if (t == n) break;
      tried[t] = 1;
      passive[t] = 1;
      std::vector<std::size_t> cols;
      for (std::size_t j = 0; j < n; ++j)
        if (passive[j]) cols.push_back(j);
      auto z = detail::nnls_subproblem(As, b, cols);
      const auto pos_t = static_cast<std::size_t>(std::find(cols.begin(), cols.end(), t) - cols.begin());
      if (!(z[pos_t] > 0)) {
        passive[t] = 0;
        continue;
      }
      ++res.iterations;
      moved = true;
      // Inner loop: while the subproblem's solution leaves the feasible set, move towards it as far
      // as feasibility allows and drop the columns that reach 0.
      for (std::size_t inner = 0; inner <= 3 * n + 30; ++inner) {
        bool feasible = true;
        for (std::size_t c = 0; c < cols.size(); ++c) feasible = feasible && z[c] > 0;
        if (feasible) break;
        double alpha = 1;
        for (std::size_t c = 0; c < cols.size(); ++c)
          if (z[c] <= 0) {
            const double xj = res.x(cols[c]);
            alpha = std::min(alpha, xj / (xj - z[c]));
          }
        for (std::size_t c = 0; c < cols.size(); ++c) {
          const std::size_t j = cols[c];
          res.x(j) += alpha * (z[c] - res.x(j));
          if (res.x(j) <= 0 || (z[c] <= 0 && res.x(j) <= std::numeric_limits<double>::epsilon() * std::abs(z[c]))) {
            res.x(j) = 0;
            passive[j] = 0;
          }
        }
        cols.clear();
        for (std::size_t j = 0; j < n; ++j)
          if (passive[j]) cols.push_back(j);
        if (cols.empty()) {
          z.clear();
          break;
        }
        z = detail::nnls_subproblem(As, b, cols);
      }
      for (std::size_t j = 0; j < n; ++j) res.x(j) = 0;
      for (std::size_t c = 0; c < cols.size(); ++c) res.x(cols[c]) = std::max(0.0, z[c]);
      for (std::size_t c = 0; c < cols.size(); ++c)
        if (!(z[c] > 0)) passive[cols[c]] = 0;
      break;
    }
    detail::nnls_dual(As, b, res.x, res.dual, res.residual_norm);
    if (!moved) {
      res.converged = true;
      return unscaled(std::move(res));
    }
  }
  // The limit ran out; converged if the last step happened to satisfy the conditions.
  bool kkt = true;
  for (std::size_t j = 0; j < n; ++j) kkt = kkt && (passive[j] || res.dual(j) <= res.tolerance);
  res.converged = kkt;
  return unscaled(std::move(res));
}

/// Unconstrained least squares min ‖Ax − b‖₂ by Householder QR with column pivoting (the solver of
/// nnls' subproblems); when A is rank-deficient, the coefficients of columns that depend on
/// earlier ones are 0. Throws strata::error(bad_input) on a shape mismatch or a non-finite entry.
inline xt::xtensor<double, 1> least_squares(const xt::xtensor<double, 2>& A, const xt::xtensor<double, 1>& b) {
  const std::size_t m = A.shape(0), n = A.shape(1);
  if (b.shape(0) != m)
    throw error(errc::bad_input, "least_squares: A has " + std::to_string(m) + " rows but b has " + std::to_string(b.shape(0)) + " entries");
  for (std::size_t i = 0; i < m; ++i) {
    if (!std::isfinite(b(i))) throw error(errc::bad_input, "least_squares: b[" + std::to_string(i) + "] is not finite");
    for (std::size_t j = 0; j < n; ++j)
      if (!std::isfinite(A(i, j)))
        throw error(errc::bad_input, "least_squares: A[" + std::to_string(i) + "][" + std::to_string(j) + "] is not finite");
  }
  std::vector<std::size_t> cols(n);
  std::iota(cols.begin(), cols.end(), std::size_t{0});
  const auto z = detail::nnls_subproblem(A, b, cols);
  xt::xtensor<double, 1> x = xt::zeros<double>({n});
  for (std::size_t j = 0; j < n; ++j) x(j) = z[j];
  return x;
}

}  // namespace strata::cost
