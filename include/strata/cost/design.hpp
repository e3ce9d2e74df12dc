#pragma once
/// \file Experiment design: which short probe runs to make under a time budget, so the user does
/// not guess. Ernest chooses them by A-optimal design: minimise trace((XᵀX)⁻¹), the summed variance
/// of the fitted θ, where X has one row of features per chosen run, subject to the runs' total cost
/// fitting the budget. Ernest solves the convex relaxation; this is the documented greedy
/// approximation:
///
///   1. start from no runs; let V(S) = trace((X_SᵀX_S + δI)⁻¹) (δ > 0 keeps it finite while S
///      has fewer runs than terms);
///   2. among the candidates not yet chosen whose cost still fits the remaining budget, pick the
///      one with the largest (V(S) − V(S ∪ {c})) / cost(c): the most variance removed per second;
///   3. repeat until no candidate fits.
///
/// Probes already made (`already`) start S, so the design can be rerun after each probe with a
/// price that the probes so far have made better (sequential design).
///
/// Features are scaled by their largest absolute value over the candidates first, so the choice
/// does not depend on units (seconds vs microseconds of latency).
#include <strata/core/error.hpp>
#include <strata/cost/probe.hpp>
#include <strata/cost/system_model.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace strata::cost {

/// Settings of a_optimal_design().
struct design_options {
  double budget = 0;     ///< total cost allowed (the units of the cost function, e.g. seconds)
  double ridge = 1e-3;   ///< δ of trace((XᵀX + δI)⁻¹), on scaled features
};

/// The chosen probes, in the order the greedy rule picked them.
struct design_result {
  std::vector<std::size_t> chosen;  ///< indices into the candidates
  double cost = 0;                  ///< their summed cost (≤ budget)
  double criterion = 0;             ///< trace((XᵀX + δI)⁻¹) of the chosen set (scaled features)
};

namespace detail {
/// trace(M⁻¹) of a symmetric positive definite M (n×n, row-major), by Cholesky; ∞ if not SPD.
inline double trace_of_inverse(std::vector<double> M, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) {  // in place: lower triangle becomes L
    double d = M[j * n + j];
    for (std::size_t k = 0; k < j; ++k) d -= M[j * n + k] * M[j * n + k];
    if (!(d > 0)) return std::numeric_limits<double>::infinity();
    const double l = std::sqrt(d);
    M[j * n + j] = l;
    for (std::size_t i = j + 1; i < n; ++i) {
      double s = M[i * n + j];
      for (std::size_t k = 0; k < j; ++k) s -= M[i * n + k] * M[j * n + k];
      M[i * n + j] = s / l;
    }
  }
  // trace(M⁻¹) = ‖L⁻¹‖_F²: solve L y = e_c column by column.
  double tr = 0;
  std::vector<double> y(n);
  for (std::size_t c = 0; c < n; ++c) {
    for (std::size_t i = 0; i < n; ++i) {
      double s = i == c ? 1.0 : 0.0;
      for (std::size_t k = 0; k < i; ++k) s -= M[i * n + k] * y[k];
      y[i] = s / M[i * n + i];
      tr += y[i] * y[i];
    }
  }
  return tr;
}
/// Features of every candidate, each divided by its largest absolute value over the candidates.
template <class F>
std::vector<std::array<double, F::size>> scaled_features(std::span<const probe_point> candidates) {
  std::vector<std::array<double, F::size>> X;
  std::array<double, F::size> scale{};
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    const auto x = F::features(candidates[k]);
    for (std::size_t j = 0; j < F::size; ++j) {
      if (!std::isfinite(x[j]))
        throw error(errc::bad_input, "design: feature '" + std::string(F::names()[j]) + "' of candidate " + std::to_string(k) + " (" +
                                         candidates[k].describe() + ") is not finite");
      scale[j] = std::max(scale[j], std::abs(x[j]));
    }
    X.push_back(x);
  }
  for (auto& x : X)
    for (std::size_t j = 0; j < F::size; ++j) x[j] = scale[j] > 0 ? x[j] / scale[j] : 0.0;
  return X;
}
}  // namespace detail

/// The A-optimality criterion trace((XᵀX + δI)⁻¹) of the probes `chosen` (indices into
/// `candidates`, repeats allowed), on features scaled over all the candidates as the design scales
/// them: smaller is better. For comparing a design of one's own with a_optimal_design's.
template <class F>
double design_criterion(std::span<const probe_point> candidates, std::span<const std::size_t> chosen, double ridge = 1e-3) {
  static_assert(detail::check_system_features<F>(), "design_criterion<F>: F must be a features policy");
  constexpr std::size_t n = F::size;
  const auto X = detail::scaled_features<F>(candidates);
  std::vector<double> M(n * n, 0.0);
  for (std::size_t j = 0; j < n; ++j) M[j * n + j] = ridge;
  for (auto k : chosen)
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) M[i * n + j] += X.at(k)[i] * X.at(k)[j];
  return detail::trace_of_inverse(std::move(M), n);
}

/// Chooses probes among `candidates` for the system model with features F, each costing
/// `cost(candidate)` (> 0), within `opt.budget`, given the probes `already` made (see the file
/// comment). Throws strata::error(bad_input) for a cost that is not finite and positive or a
/// non-finite feature.
template <class F>
design_result a_optimal_design(std::span<const probe_point> candidates, const std::function<double(const probe_point&)>& cost,
                               const design_options& opt, std::span<const probe_point> already = {}) {
  static_assert(detail::check_system_features<F>(), "a_optimal_design<F>: F must be a features policy");
  constexpr std::size_t n = F::size;
  std::vector<probe_point> all(candidates.begin(), candidates.end());
  all.insert(all.end(), already.begin(), already.end());
  auto X = detail::scaled_features<F>(all);  // scaled over both, so the criterion is one scale
  const std::vector<std::array<double, n>> done(X.begin() + static_cast<std::ptrdiff_t>(candidates.size()), X.end());
  X.resize(candidates.size());
  std::vector<double> c;
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    const double ck = cost(candidates[k]);
    if (!(std::isfinite(ck) && ck > 0))
      throw error(errc::bad_input, "design: the cost of candidate " + std::to_string(k) + " (" + candidates[k].describe() + ") is " +
                                       std::to_string(ck) + " (want a finite positive number)");
    c.push_back(ck);
  }
  std::vector<double> M(n * n, 0.0);  // XᵀX + δI of the chosen set
  for (std::size_t j = 0; j < n; ++j) M[j * n + j] = opt.ridge;
  for (const auto& x : done)
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) M[i * n + j] += x[i] * x[j];
  auto with = [&](const std::array<double, n>& x) {
    auto m = M;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) m[i * n + j] += x[i] * x[j];
    return m;
  };
  design_result res;
  res.criterion = detail::trace_of_inverse(M, n);
  std::vector<char> taken(candidates.size(), 0);
  for (;;) {
    std::size_t best = candidates.size();
    double best_gain = -1, best_v = res.criterion;
    for (std::size_t k = 0; k < candidates.size(); ++k) {
      if (taken[k] || res.cost + c[k] > opt.budget) continue;
      const double v = detail::trace_of_inverse(with(X[k]), n);
      const double gain = (res.criterion - v) / c[k];
      if (gain > best_gain) best_gain = gain, best = k, best_v = v;
    }
    if (best == candidates.size()) break;
    taken[best] = 1;
    M = with(X[best]);
    res.chosen.push_back(best);
    res.cost += c[best];
    res.criterion = best_v;
  }
  return res;
}

}  // namespace strata::cost
