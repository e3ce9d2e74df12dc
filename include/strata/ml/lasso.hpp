#pragma once
/// \file Lasso kernels: the problem (a sparse design in column form and a target), λ_max, the
/// objective, the duality gap, and a sequential cyclic coordinate-descent solver (the reference
/// the STRADS trainer is tested against, and the single-thread baseline of the benchmarks).
///
/// Scaling (the same as scikit-learn's `Lasso` and glmnet's gaussian family with unit weights):
///
///     F(β) = 1/(2n) ‖y − Xβ‖² + λ ‖β‖₁                 (n rows, d columns, no intercept)
///
/// Its dual, for u ∈ ℝⁿ with ‖Xᵀu‖∞ ≤ λ: D(u) = uᵀy − (n/2)‖u‖²; at the optimum u = r/n (r the
/// residual y − Xβ). From any β we take the feasible u = s·r/n with s = min(1, nλ/‖Xᵀr‖∞), so
/// gap(β) = F(β) − D(u) ≥ 0, and 0 exactly at the optimum.
///
/// No intercept is fitted: centre y (and, for dense data, X) before, as `lasso_problem::from`
/// does on request. A column of zeros keeps β_j = 0 (its coordinate step has nothing to fit).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "io/libsvm.hpp"

namespace strata::ml {

/// A Lasso problem: X by columns (CSC), y.
struct lasso_problem {
  std::uint32_t n = 0, d = 0;
  std::vector<std::uint64_t> col_offsets{0};  ///< size d+1
  std::vector<std::uint32_t> rows;            ///< row of each stored value, increasing within a column
  std::vector<double> values;
  std::vector<double> y;
  std::vector<double> sq_norm;  ///< ‖x_j‖² / n per column

  /// How `from` prepares the data.
  struct preparation {
    bool center_y = true;        ///< subtract the mean of y
    bool standardize_x = false;  ///< centre each column and scale it to ‖x_j‖² = n (dense data: fills X)
    bool log1p_x = false;        ///< replace each stored value v by log(1 + v) (counts)
    std::uint64_t max_dense_bytes = std::uint64_t{1} << 30;  ///< standardize_x: the most the dense n × d design may take
  };

  /// Builds a problem from libsvm rows (label = target). Throws strata::error(bad_input) for an
  /// empty design (no rows or no columns) or a non-finite value.
  static lasso_problem from(const io::libsvm_data& data, preparation prep) {
    lasso_problem p;
    if (data.num_rows() == 0 || data.num_features == 0)
      throw error(errc::bad_input, "lasso: the design is empty (" + std::to_string(data.num_rows()) + " rows, " +
                                       std::to_string(data.num_features) + " columns)");
    if (prep.standardize_x) {  // refused before anything is allocated
      const std::uint64_t bytes = std::uint64_t{data.num_rows()} * data.num_features * (sizeof(double) + sizeof(std::uint32_t));
      if (bytes / (sizeof(double) + sizeof(std::uint32_t)) / data.num_features != data.num_rows() || bytes > prep.max_dense_bytes)
        throw error(errc::bad_input, "lasso: standardising densifies " + std::to_string(data.num_rows()) + " rows x " +
                                         std::to_string(data.num_features) + " columns into " + std::to_string(bytes) +
                                         " bytes, over the limit of " + std::to_string(prep.max_dense_bytes) +
                                         " bytes: use the data unstandardised (it stays sparse) or fewer columns");
    }
    p.n = static_cast<std::uint32_t>(data.num_rows());
    p.d = data.num_features;
    p.y = data.labels;
    for (double v : p.y)
      if (!std::isfinite(v)) throw error(errc::bad_input, "lasso: a target is not finite");
    if (prep.center_y) {
      double m = 0;
      for (double v : p.y) m += v;
      m /= p.n;
      for (double& v : p.y) v -= m;
    }
    // Columns: counts, then a transpose of the CSR.
    std::vector<std::uint64_t> count(p.d + 1, 0);
    for (auto c : data.indices) ++count[c + 1];
    if (prep.standardize_x) {  // dense: every column holds every row
      p.col_offsets.resize(p.d + 1);
      for (std::uint32_t j = 0; j <= p.d; ++j) p.col_offsets[j] = std::uint64_t{j} * p.n;
      p.rows.resize(std::uint64_t{p.d} * p.n);
      p.values.assign(p.rows.size(), 0.0);
      for (std::uint32_t j = 0; j < p.d; ++j)
        for (std::uint32_t i = 0; i < p.n; ++i) p.rows[std::uint64_t{j} * p.n + i] = i;
      for (std::uint32_t i = 0; i < p.n; ++i) {
        const auto idx = data.row_indices(i);
        const auto val = data.row_values(i);
        for (std::size_t k = 0; k < idx.size(); ++k)
          p.values[std::uint64_t{idx[k]} * p.n + i] = prep.log1p_x ? std::log1p(val[k]) : val[k];
      }
      for (std::uint32_t j = 0; j < p.d; ++j) {
        double* col = p.values.data() + std::uint64_t{j} * p.n;
        double m = 0, s = 0;
        for (std::uint32_t i = 0; i < p.n; ++i) m += col[i];
        m /= p.n;
        for (std::uint32_t i = 0; i < p.n; ++i) s += (col[i] - m) * (col[i] - m);
        const double scale = s > 0 ? std::sqrt(p.n / s) : 0.0;
        for (std::uint32_t i = 0; i < p.n; ++i) col[i] = (col[i] - m) * scale;
      }
    } else {
      for (std::uint32_t j = 0; j < p.d; ++j) count[j + 1] += count[j];
      p.col_offsets = count;
      p.rows.resize(data.nnz());
      p.values.resize(data.nnz());
      std::vector<std::uint64_t> at(count.begin(), count.end() - 1);
      for (std::uint32_t i = 0; i < p.n; ++i) {
        const auto idx = data.row_indices(i);
        const auto val = data.row_values(i);
        for (std::size_t k = 0; k < idx.size(); ++k) {
          const auto pos = at[idx[k]]++;
          p.rows[pos] = i;
          p.values[pos] = prep.log1p_x ? std::log1p(val[k]) : val[k];
        }
      }
    }
    for (double v : p.values)
      if (!std::isfinite(v)) throw error(errc::bad_input, "lasso: a design value is not finite (log1p of a value <= -1?)");
    p.sq_norm.assign(p.d, 0.0);
    for (std::uint32_t j = 0; j < p.d; ++j) {
      double s = 0;
      for (auto k = p.col_offsets[j]; k < p.col_offsets[j + 1]; ++k) s += p.values[k] * p.values[k];
      p.sq_norm[j] = s / p.n;
    }
    return p;
  }

  std::uint64_t nnz() const noexcept { return values.size(); }
  /// x_jᵀ v for a vector over rows.
  double col_dot(std::uint32_t j, std::span<const double> v) const noexcept {
    double s = 0;
    for (auto k = col_offsets[j]; k < col_offsets[j + 1]; ++k) s += values[k] * v[rows[k]];
    return s;
  }
  /// |correlation| (cosine) of columns a and b, in [0, 1]; 0 when either is zero.
  double col_cosine(std::uint32_t a, std::uint32_t b) const noexcept {
    if (sq_norm[a] <= 0 || sq_norm[b] <= 0) return 0.0;
    auto i = col_offsets[a], ie = col_offsets[a + 1], k = col_offsets[b], ke = col_offsets[b + 1];
    double s = 0;
    while (i < ie && k < ke) {
      if (rows[i] < rows[k]) ++i;
      else if (rows[k] < rows[i]) ++k;
      else s += values[i++] * values[k++];
    }
    return std::min(1.0, std::abs(s) / (n * std::sqrt(sq_norm[a] * sq_norm[b])));
  }
  /// λ_max = ‖Xᵀy‖∞ / n: the smallest λ with β = 0 optimal.
  double lambda_max() const noexcept {
    double m = 0;
    for (std::uint32_t j = 0; j < d; ++j) m = std::max(m, std::abs(col_dot(j, y)));
    return m / n;
  }
  /// r = y − Xβ.
  std::vector<double> residual(std::span<const double> beta) const {
    std::vector<double> r = y;
    for (std::uint32_t j = 0; j < d; ++j)
      if (beta[j] != 0)
        for (auto k = col_offsets[j]; k < col_offsets[j + 1]; ++k) r[rows[k]] -= values[k] * beta[j];
    return r;
  }
};

/// The soft-threshold S(z, λ) = sign(z)·max(|z| − λ, 0).
inline double soft_threshold(double z, double lambda) noexcept {
  return z > lambda ? z - lambda : z < -lambda ? z + lambda : 0.0;
}

/// The minimiser of F over β_j with the others fixed, from z = x_jᵀr/n + (‖x_j‖²/n)·β_j.
inline double lasso_coordinate(double z, double sq_norm, double lambda) noexcept {
  return sq_norm > 0 ? soft_threshold(z, lambda) / sq_norm : 0.0;
}

/// F(β) and its duality gap from sufficient statistics of the residual r = y − Xβ:
/// rss = ‖r‖², ry = rᵀy, max_grad = ‖Xᵀr‖∞, l1 = ‖β‖₁ (see the file comment).
struct lasso_eval {
  double objective = 0, gap = 0;
  static lasso_eval of(double rss, double ry, double max_grad, double l1, double lambda, std::uint32_t n) {
    lasso_eval e;
    e.objective = rss / (2.0 * n) + lambda * l1;
    const double s = max_grad > 0 ? std::min(1.0, n * lambda / max_grad) : 1.0;
    const double dual = s / n * ry - s * s * rss / (2.0 * n);
    e.gap = std::max(0.0, e.objective - dual);
    return e;
  }
};

/// F(β) and its gap, computed directly.
inline lasso_eval lasso_evaluate(const lasso_problem& p, std::span<const double> beta, double lambda) {
  const auto r = p.residual(beta);
  double rss = 0, ry = 0, mg = 0, l1 = 0;
  for (std::uint32_t i = 0; i < p.n; ++i) rss += r[i] * r[i], ry += r[i] * p.y[i];
  for (std::uint32_t j = 0; j < p.d; ++j) mg = std::max(mg, std::abs(p.col_dot(j, r)));
  for (double b : beta) l1 += std::abs(b);
  return lasso_eval::of(rss, ry, mg, l1, lambda, p.n);
}

/// Checks λ: finite and > 0.
inline void check_lambda(double lambda) {
  if (!(lambda > 0) || !std::isfinite(lambda))
    throw error(errc::bad_input, "lasso: lambda must be a finite number > 0 (got " + std::to_string(lambda) + ")");
}

/// The outcome of the sequential solver.
struct lasso_solution {
  std::vector<double> beta;
  lasso_eval eval;
  std::uint64_t epochs = 0;
};

/// Cyclic coordinate descent (one thread): epochs over every column until gap ≤ rel_gap × F or
/// `max_epochs`. The reference for tests and the baseline of the benchmarks.
inline lasso_solution lasso_cd(const lasso_problem& p, double lambda, double rel_gap = 1e-9,
                               std::uint64_t max_epochs = 100000) {
  check_lambda(lambda);
  lasso_solution s;
  s.beta.assign(p.d, 0.0);
  std::vector<double> r = p.y;
  for (s.epochs = 1; s.epochs <= max_epochs; ++s.epochs) {
    for (std::uint32_t j = 0; j < p.d; ++j) {
      if (p.sq_norm[j] <= 0) continue;
      const double z = p.col_dot(j, r) / p.n + p.sq_norm[j] * s.beta[j];
      const double b = lasso_coordinate(z, p.sq_norm[j], lambda);
      const double delta = b - s.beta[j];
      if (delta == 0) continue;
      s.beta[j] = b;
      for (auto k = p.col_offsets[j]; k < p.col_offsets[j + 1]; ++k) r[p.rows[k]] -= p.values[k] * delta;
    }
    if (s.epochs % 10 == 0 || s.epochs == max_epochs) {
      s.eval = lasso_evaluate(p, s.beta, lambda);
      if (s.eval.gap <= rel_gap * s.eval.objective) break;
    }
  }
  s.epochs = std::min(s.epochs, max_epochs);
  s.eval = lasso_evaluate(p, s.beta, lambda);
  return s;
}

}  // namespace strata::ml
