#pragma once
/// \file CoCoA+ kernels (Ma, Smith, Jaggi et al., "Adding vs. averaging in distributed
/// primal-dual optimization", 2015): the primal-dual pair of a regularised linear model, SDCA's
/// closed-form coordinate steps on CoCoA+'s local subproblem, and the objectives. The distributed
/// trainer is apps/trainers/cocoa_trainer.hpp; `sdca_solve` here is the one-machine solver.
///
/// Primal, for n examples (x_i, y_i) and λ2 > 0, λ1 >= 0:
///     P(w) = (1/n) Σ φ(x_i·w; y_i) + λ2/2 ‖w‖² + λ1 ‖w‖₁
/// with φ the hinge loss max(0, 1 − y a) (labels ±1: a linear SVM) or the squared loss ½(a − y)²
/// (ridge; elastic net when λ1 > 0, scikit-learn's ElasticNet with alpha = λ1 + λ2 and
/// l1_ratio = λ1 / alpha). Written as SDCA's P = (1/n)Σφ_i + λ2 g(w) with the 1-strongly convex
/// g(w) = ½‖w‖² + κ‖w‖₁, κ = λ1/λ2, the dual is
///     D(α) = (1/n) Σ −φ*_i(−α_i) − λ2 g*(v),   v = (1/(λ2 n)) Σ α_i x_i,
///     w(α) = ∇g*(v) = soft(v, κ),   g*(v) = ½‖soft(v, κ)‖²,
/// and P(w(α)) − D(α) >= 0 is the duality gap: a certificate of how far P(w) is from its minimum.
///
/// CoCoA+ splits the examples among K workers. A round: every worker reads v (w = soft(v, κ)),
/// improves its own α_[k] by H SDCA steps on the local subproblem with σ' (adding: σ' = K, and the
/// changes are added; averaging, CoCoA: σ' = 1 and the changes are scaled by 1/K), then adds its
/// Δv_k = (1/(λ2 n)) A_k Δα_k to the shared v. The step on coordinate i of worker k maximises
///     −φ*_i(−(α_i + δ)) − x_i·(w + σ' Δv_k) δ − (σ' ‖x_i‖² / (2 λ2 n)) δ²
/// (the local subproblem of Ma et al. eq. (9), for general g through g*'s 1-smoothness):
///     hinge:   β = yα ∈ [0, 1],  β' = clip(β + (1 − y x_i·u) / q, 0, 1),  δ = y(β' − β)
///     squared: δ = (y − α − x_i·u) / (1 + q),       with u = w + σ'Δv_k, q = σ'‖x_i‖²/(λ2 n).
#include <strata/core/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace strata::ml {

/// The loss φ of a CoCoA+ problem.
enum class cocoa_loss : std::uint8_t { hinge, squared };

/// λ2 (the ‖w‖² weight, > 0) and λ1 (the ‖w‖₁ weight, >= 0) of P(w), and the loss.
struct cocoa_objective {
  cocoa_loss loss = cocoa_loss::hinge;
  double lambda2 = 1e-3;
  double lambda1 = 0;
  double kappa() const noexcept { return lambda1 / lambda2; }
};

/// Refuses λ2 <= 0, λ1 < 0 and non-finite values (the dual needs a strongly convex regulariser).
inline void check_cocoa_objective(const cocoa_objective& o) {
  if (!(o.lambda2 > 0) || !std::isfinite(o.lambda2))
    throw error(errc::bad_input, "cocoa: the L2 weight must be finite and > 0 (the dual needs a strongly convex regulariser), got " +
                                     std::to_string(o.lambda2));
  if (!(o.lambda1 >= 0) || !std::isfinite(o.lambda1))
    throw error(errc::bad_input, "cocoa: the L1 weight must be finite and >= 0, got " + std::to_string(o.lambda1));
}

/// Examples in CSR form (rows = examples), with each row's squared norm.
struct cocoa_data {
  std::vector<double> y;
  std::vector<std::uint64_t> offsets{0};
  std::vector<std::uint32_t> cols;
  std::vector<double> vals;
  std::vector<double> sq_norm;
  std::uint32_t d = 0;  ///< features (columns)

  std::size_t size() const noexcept { return y.size(); }
  double dot(std::size_t i, const double* w) const noexcept {
    double s = 0;
    for (std::uint64_t k = offsets[i]; k < offsets[i + 1]; ++k) s += vals[k] * w[cols[k]];
    return s;
  }
  void axpy(std::size_t i, double a, double* v) const noexcept {
    for (std::uint64_t k = offsets[i]; k < offsets[i + 1]; ++k) v[cols[k]] += a * vals[k];
  }
  /// Appends example (cols, vals, label); the columns must be below d.
  void add(std::span<const std::uint32_t> c, std::span<const double> v, double label) {
    double s = 0;
    for (std::size_t k = 0; k < c.size(); ++k) cols.push_back(c[k]), vals.push_back(v[k]), s += v[k] * v[k];
    offsets.push_back(cols.size());
    y.push_back(label);
    sq_norm.push_back(s);
  }
};

/// soft(z, κ) = sign(z)·max(|z| − κ, 0).
inline double cocoa_soft(double z, double kappa) noexcept {
  return z > kappa ? z - kappa : (z < -kappa ? z + kappa : 0.0);
}
/// w = ∇g*(v) = soft(v, κ), element-wise.
inline void cocoa_primal_of(std::span<const double> v, double kappa, std::span<double> w) noexcept {
  for (std::size_t j = 0; j < v.size(); ++j) w[j] = kappa > 0 ? cocoa_soft(v[j], kappa) : v[j];
}

/// φ(a; y).
inline double cocoa_phi(cocoa_loss l, double a, double y) noexcept {
  if (l == cocoa_loss::hinge) return std::max(0.0, 1.0 - y * a);
  return 0.5 * (a - y) * (a - y);
}
/// −φ*(−α; y) (finite on the dual's domain: yα ∈ [0, 1] for the hinge).
inline double cocoa_neg_conj(cocoa_loss l, double alpha, double y) noexcept {
  if (l == cocoa_loss::hinge) return y * alpha;
  return alpha * y - 0.5 * alpha * alpha;
}

/// The change δ of α_i that maximises coordinate i's local subproblem, where u·x_i = `margin`
/// (u = w + σ'Δv_k) and q = σ'‖x_i‖²/(λ2 n).
inline double cocoa_step(cocoa_loss l, double alpha, double y, double margin, double q) noexcept {
  if (l == cocoa_loss::hinge) {
    const double beta = y * alpha;
    const double nb = q > 0 ? std::clamp(beta + (1.0 - y * margin) / q, 0.0, 1.0) : (1.0 - y * margin > 0 ? 1.0 : beta);
    return y * (nb - beta);
  }
  return (y - alpha - margin) / (1.0 + q);
}

/// The regulariser's terms, from v (w = soft(v, κ)): λ2 g(w) for the primal, λ2 g*(v) for the dual.
struct cocoa_reg_terms {
  double primal = 0, dual = 0;
};
inline cocoa_reg_terms cocoa_regulariser(const cocoa_objective& o, std::span<const double> w) noexcept {
  double sq = 0, l1 = 0;
  for (double x : w) sq += x * x, l1 += std::abs(x);
  return {0.5 * o.lambda2 * sq + o.lambda1 * l1, 0.5 * o.lambda2 * sq};
}

/// One worker's state and local solver: its examples (a cocoa_data of its own), α, the round's
/// Δα and Δv, and the order in which it visits its coordinates.
struct cocoa_local {
  cocoa_data data;
  std::vector<double> alpha, dalpha, dv;
  std::vector<std::uint32_t> order;
  std::size_t next = 0;
  std::mt19937_64 rng;

  cocoa_local() = default;
  cocoa_local(cocoa_data d, std::uint64_t seed) : data(std::move(d)), rng(seed) {
    alpha.assign(data.size(), 0.0);
    dalpha.assign(data.size(), 0.0);
    dv.assign(data.d, 0.0);
    order.resize(data.size());
    std::iota(order.begin(), order.end(), 0u);
    next = order.size();
  }

  /// H SDCA steps on the local subproblem around w (every coordinate once per pass, in a fresh
  /// random order each pass); dv collects (1/(λ2 n)) Σ x_i δ_i, dalpha the δs. `n` is the number
  /// of examples of the whole problem.
  void solve(const cocoa_objective& o, std::span<const double> w, double sigma, std::uint64_t H, std::uint64_t n) {
    std::fill(dv.begin(), dv.end(), 0.0);
    std::fill(dalpha.begin(), dalpha.end(), 0.0);
    if (data.size() == 0) return;
    std::vector<double>& u = scratch_;
    u.assign(w.begin(), w.end());  // u = w + σ'Δv, kept up to date
    const double inv = 1.0 / (o.lambda2 * static_cast<double>(n));
    for (std::uint64_t h = 0; h < H; ++h) {
      if (next == order.size()) std::shuffle(order.begin(), order.end(), rng), next = 0;
      const std::uint32_t i = order[next++];
      const double a = alpha[i] + dalpha[i];
      const double delta = cocoa_step(o.loss, a, data.y[i], data.dot(i, u.data()), sigma * data.sq_norm[i] * inv);
      if (delta == 0) continue;
      dalpha[i] += delta;
      data.axpy(i, delta * inv, dv.data());
      data.axpy(i, sigma * delta * inv, u.data());
    }
  }
  /// Applies γ times the round's change to α and to dv (γ = 1: adding; 1/K: averaging).
  void commit(double gamma) {
    for (std::size_t i = 0; i < alpha.size(); ++i) alpha[i] += gamma * dalpha[i];
    if (gamma != 1.0)
      for (double& x : dv) x *= gamma;
  }
  /// (1/n)Σφ_i(x_i·w) and (1/n)Σ −φ*_i(−α_i) over this worker's examples.
  std::pair<double, double> partial_objectives(cocoa_loss l, std::span<const double> w, std::uint64_t n) const {
    double p = 0, dd = 0;
    for (std::size_t i = 0; i < data.size(); ++i) {
      p += cocoa_phi(l, data.dot(i, w.data()), data.y[i]);
      dd += cocoa_neg_conj(l, alpha[i], data.y[i]);
    }
    return {p / static_cast<double>(n), dd / static_cast<double>(n)};
  }

 private:
  std::vector<double> scratch_;
};

/// The outcome of sdca_solve.
struct sdca_solution {
  std::vector<double> w, alpha;
  double primal = 0, dual = 0;
  std::uint64_t passes = 0;
  double gap() const noexcept { return primal - dual; }
};

/// P(w) and D(α) of a whole problem held by one `cocoa_local` (v = its accumulated dual image).
inline std::pair<double, double> cocoa_objectives(const cocoa_objective& o, const cocoa_local& s, std::span<const double> v) {
  std::vector<double> w(v.size());
  cocoa_primal_of(v, o.kappa(), w);
  const auto [p, dd] = s.partial_objectives(o.loss, w, s.data.size());
  const auto reg = cocoa_regulariser(o, w);
  return {p + reg.primal, dd - reg.dual};
}

/// Serial SDCA (CoCoA+ with one worker) until the duality gap is at most rel_gap × P or
/// max_passes passes over the data: the one-machine reference the distributed runs are checked
/// against.
inline sdca_solution sdca_solve(const cocoa_objective& o, const cocoa_data& data, double rel_gap = 1e-10,
                                std::uint64_t max_passes = 100000, std::uint64_t seed = 1) {
  check_cocoa_objective(o);
  cocoa_local s(data, seed);
  std::vector<double> v(data.d, 0.0), w(data.d, 0.0);
  sdca_solution out;
  for (out.passes = 1; out.passes <= max_passes; ++out.passes) {
    cocoa_primal_of(v, o.kappa(), w);
    s.solve(o, w, 1.0, data.size(), data.size());
    s.commit(1.0);
    for (std::size_t j = 0; j < v.size(); ++j) v[j] += s.dv[j];
    std::tie(out.primal, out.dual) = cocoa_objectives(o, s, v);
    if (out.primal - out.dual <= rel_gap * std::abs(out.primal)) break;
  }
  out.passes = std::min(out.passes, max_passes);
  cocoa_primal_of(v, o.kappa(), w);
  out.w = std::move(w);
  out.alpha = std::move(s.alpha);
  return out;
}

}  // namespace strata::ml
