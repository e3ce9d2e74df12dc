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
/// No intercept is fitted: centre y (and X) before, as `lasso_problem::from` does on request (X
/// stays sparse: the centring is folded into every kernel). A column of zeros keeps β_j = 0 (its coordinate step has nothing to fit).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <strata/core/error.hpp>
#include <strata/core/huge_pages.hpp>
#include <strata/ml/io/libsvm.hpp>

namespace strata::ml {

/// A Lasso problem: X by columns (CSC), y. A standardised problem stays sparse: column j is
/// x̃_j = v_j − center[j]·1, with v_j the stored (scaled) values and center[j] the scaled column
/// mean, so that ‖x̃_j‖² = n; every kernel folds the centring in (x̃_jᵀu = v_jᵀu − center[j]·Σu).
struct lasso_problem {
  std::uint32_t n = 0, d = 0;
  std::vector<std::uint64_t> col_offsets{0};  ///< size d+1
  std::vector<std::uint32_t> rows;            ///< row of each stored value, increasing within a column
  std::vector<double> values;
  std::vector<double> y;
  std::vector<double> sq_norm;  ///< ‖x̃_j‖² / n per column
  std::vector<double> center;   ///< per column, what x̃_j subtracts from every row (empty: nothing)

  /// How `from` prepares the data.
  struct preparation {
    bool center_y = true;        ///< subtract the mean of y
    bool standardize_x = false;  ///< centre each column and scale it to ‖x_j‖² = n (kept sparse: `center`)
    bool log1p_x = false;        ///< replace each stored value v by log(1 + v) (counts)
  };

  /// Builds a problem from libsvm rows (label = target). Throws strata::error(bad_input) for an
  /// empty design (no rows or no columns) or a non-finite value.
  static lasso_problem from(const io::libsvm_data& data, preparation prep) {
    lasso_problem p;
    if (data.num_rows() == 0 || data.num_features == 0)
      throw error(errc::bad_input, "lasso: the design is empty (" + std::to_string(data.num_rows()) + " rows, " +
                                       std::to_string(data.num_features) + " columns)");
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
    p.transpose(data, prep.log1p_x);
    for (double v : p.values)
      if (!std::isfinite(v)) throw error(errc::bad_input, "lasso: a design value is not finite (log1p of a value <= -1?)");
    if (prep.standardize_x) p.standardize();
    p.sq_norm.assign(p.d, 0.0);
    for (std::uint32_t j = 0; j < p.d; ++j) {
      const double c = p.center_of(j);
      double s = static_cast<double>(p.n - (p.col_offsets[j + 1] - p.col_offsets[j])) * c * c;  // the rows not stored: (0 − c)²
      for (auto k = p.col_offsets[j]; k < p.col_offsets[j + 1]; ++k) s += (p.values[k] - c) * (p.values[k] - c);
      p.sq_norm[j] = s / p.n;
    }
    return p;
  }

  std::uint64_t nnz() const noexcept { return values.size(); }
  /// What column j subtracts from every row (0 unless standardised).
  double center_of(std::uint32_t j) const noexcept { return center.empty() ? 0.0 : center[j]; }
  /// x̃_jᵀ v for a vector over rows whose sum is `sum_v` (only read when the columns are centred).
  double col_dot(std::uint32_t j, std::span<const double> v, double sum_v) const noexcept {
    double s = 0;
    for (auto k = col_offsets[j]; k < col_offsets[j + 1]; ++k) s += values[k] * v[rows[k]];
    return s - center_of(j) * sum_v;
  }
  /// x̃_jᵀ v (sums v when the columns are centred: pass the sum to the overload above in loops).
  double col_dot(std::uint32_t j, std::span<const double> v) const noexcept { return col_dot(j, v, center.empty() ? 0.0 : sum(v)); }
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
    s -= n * center_of(a) * center_of(b);  // (v_a − c_a)ᵀ(v_b − c_b) = v_aᵀv_b − n·c_a·c_b (Σ v_j = n·c_j)
    return std::min(1.0, std::abs(s) / (n * std::sqrt(sq_norm[a] * sq_norm[b])));
  }
  /// λ_max = ‖X̃ᵀy‖∞ / n: the smallest λ with β = 0 optimal.
  double lambda_max() const noexcept {
    const double sy = sum(y);
    double m = 0;
    for (std::uint32_t j = 0; j < d; ++j) m = std::max(m, std::abs(col_dot(j, y, sy)));
    return m / n;
  }
  /// r = y − X̃β.
  std::vector<double> residual(std::span<const double> beta) const {
    std::vector<double> r = y;
    double shift = 0;  // Σ_j β_j·center_j, added back to every row
    for (std::uint32_t j = 0; j < d; ++j)
      if (beta[j] != 0) {
        shift += beta[j] * center_of(j);
        for (auto k = col_offsets[j]; k < col_offsets[j + 1]; ++k) r[rows[k]] -= values[k] * beta[j];
      }
    if (shift != 0)
      for (double& v : r) v += shift;
    return r;
  }
  static double sum(std::span<const double> v) noexcept {
    double s = 0;
    for (double x : v) s += x;
    return s;
  }

 private:
  /// Columns from the rows: counts, then a transpose of the CSR.
  void transpose(const io::libsvm_data& data, bool log1p) {
    std::vector<std::uint64_t> count(d + 1, 0);
    for (auto c : data.indices) ++count[c + 1];
    for (std::uint32_t j = 0; j < d; ++j) count[j + 1] += count[j];
    col_offsets = count;
    reserve_huge(rows, data.nnz());  // 1.2 GB at 100M values: huge pages, not 300,000 faults
    reserve_huge(values, data.nnz());
    rows.resize(data.nnz());
    values.resize(data.nnz());
    std::vector<std::uint64_t> at(count.begin(), count.end() - 1);
    for (std::uint32_t i = 0; i < n; ++i) {
      const auto idx = data.row_indices(i);
      const auto val = data.row_values(i);
      for (std::size_t k = 0; k < idx.size(); ++k) {
        const auto pos = at[idx[k]]++;
        rows[pos] = i;
        values[pos] = log1p ? std::log1p(val[k]) : val[k];
      }
    }
  }
  /// Centres and scales every column to ‖x̃_j‖² = n without filling it: the mean m_j and the
  /// spread Σ_i (x_ij − m_j)² count the rows not stored as zeros; the stored values are scaled by
  /// s_j = sqrt(n / spread) and center[j] = m_j·s_j (a constant column: s_j = 0, the column is 0).
  void standardize() {
    center.assign(d, 0.0);
    for (std::uint32_t j = 0; j < d; ++j) {
      const auto b = col_offsets[j], e = col_offsets[j + 1];
      double m = 0, s = 0;
      for (auto k = b; k < e; ++k) m += values[k];
      m /= n;
      for (auto k = b; k < e; ++k) s += (values[k] - m) * (values[k] - m);
      s += static_cast<double>(n - (e - b)) * m * m;
      const double scale = s > 0 ? std::sqrt(n / s) : 0.0;
      for (auto k = b; k < e; ++k) values[k] *= scale;
      center[j] = m * scale;
    }
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
  const double sr = lasso_problem::sum(r);
  for (std::uint32_t j = 0; j < p.d; ++j) mg = std::max(mg, std::abs(p.col_dot(j, r, sr)));
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
  // r: y − Σ β_j v_j, the residual without the centring's constant (x̃_j ⟂ 1, so no x̃_jᵀr sees
  // it); sr = Σ r, kept with it.
  std::vector<double> r = p.y;
  double sr = lasso_problem::sum(r);
  for (s.epochs = 1; s.epochs <= max_epochs; ++s.epochs) {
    for (std::uint32_t j = 0; j < p.d; ++j) {
      if (p.sq_norm[j] <= 0) continue;
      const double z = p.col_dot(j, r, sr) / p.n + p.sq_norm[j] * s.beta[j];
      const double b = lasso_coordinate(z, p.sq_norm[j], lambda);
      const double delta = b - s.beta[j];
      if (delta == 0) continue;
      s.beta[j] = b;
      double col = 0;
      for (auto k = p.col_offsets[j]; k < p.col_offsets[j + 1]; ++k) r[p.rows[k]] -= p.values[k] * delta, col += p.values[k];
      if (!p.center.empty()) sr -= col * delta;
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
