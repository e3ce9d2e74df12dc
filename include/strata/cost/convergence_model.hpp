#pragma once
/// \file Hemingway's convergence model (Pan et al., arXiv 1702.05865): the suboptimality of a run
/// after i iterations, as a regression of its logarithm on features of i, the worker count m and,
/// for this system, the staleness bound:
///
///     f(i) = f* + exp(β·φ(i, m, s, ...))        (f minimised: a loss, or a negated log-likelihood)
///
/// β is fitted by least squares on log(f(i) − f*) over the probe runs' iterations. The optimum f* is
/// rarely known: given as an option, or else estimated by a profile search (for each f* on a grid
/// below the best value seen, fit β; keep the f* whose curves best match the values themselves).
/// The features are a policy type, as for the system model (cost/system_model.hpp):
///
///     struct F { static constexpr std::size_t size;  static std::array<std::string_view, size> names();
///                static std::array<double, size> features(const probe_point&); };   // uses p.iteration
///
/// `hemingway_features` = {1, log i, i, m·log i}; `with_staleness_drag<F>` adds s·log i (stale
/// reads slow the decay); `with_scale<F>` adds log s and log s·log i (s the data scale). `iterations_to(target, p)` is the first i whose predicted f(i) ≤ target.
#include <strata/core/error.hpp>
#include <strata/core/json.hpp>
#include <strata/cost/nnls.hpp>
#include <strata/cost/probe.hpp>
#include <strata/cost/system_model.hpp>

#include <xtensor/xtensor.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::cost {

/// A features policy of the convergence model: the same shape as a system features policy
/// (size, names(), features(const probe_point&)), reading `probe_point::iteration` as i ≥ 1.
template <class F>
concept convergence_features = system_features<F>;

/// {1, log i, i, m·log i}: a power-law decay (log i), a linear-rate phase (i), and a decay rate
/// that depends on the worker count (m·log i).
struct hemingway_features {
  static constexpr std::size_t size = 4;
  static std::array<std::string_view, size> names() { return {"1", "log i", "i", "m log i"}; }
  static std::array<double, size> features(const probe_point& p) {
    const double li = std::log(p.iteration);
    return {1.0, li, p.iteration, p.workers * li};
  }
};

/// F plus s·log i, s the effective staleness bound: staleness changes the rate of decay.
template <convergence_features F>
struct with_staleness_drag : extend_features<F, with_staleness_drag<F>, 1> {
  static constexpr std::array<std::string_view, 1> more_names{"staleness log i"};
  static std::array<double, 1> more(const probe_point& p) {
    return {p.staleness * std::log(p.iteration)};
  }
};

/// F plus log s and log s · log i, s the data scale: with more data, one iteration does more work
/// (the intercept) and the decay rate changes (the slope), so probes on fractions extrapolate.
template <convergence_features F>
struct with_scale : extend_features<F, with_scale<F>, 2> {
  static constexpr std::array<std::string_view, 2> more_names{"log s", "log s log i"};
  static std::array<double, 2> more(const probe_point& p) {
    return {std::log(p.scale), std::log(p.scale) * std::log(p.iteration)};
  }
};

/// F plus i/m: the rate of decay depends on the number of workers m. CoCoA+'s bound (Ma et al.
/// 2015, Theorem 2, smooth losses) contracts the dual gap per round by about λn / (σ'σ_k + λn),
/// σ' = m and σ_k the spectral norm of a worker's examples: constant while mσ_k ≪ λn and falling
/// like 1/m past it, so log(gap) ≈ a − (b + c/m)·i spans both ends with the "i" term Hemingway's
/// features already have. (Chosen from the theorem, before any held-out run was measured.)
template <convergence_features F>
struct with_rate_per_worker : extend_features<F, with_rate_per_worker<F>, 1> {
  static constexpr std::array<std::string_view, 1> more_names{"i/m"};
  static std::array<double, 1> more(const probe_point& p) {
    return {p.iteration / p.workers};
  }
};

/// F plus i·log m and i·[m = 1]: a rate of decay linear in log m, with one worker apart. Measured on
/// CoCoA+ (benchmarks/results/cocoa/REPORT.md, the first blind evaluation): log(gap) falls by
/// 2.4 per round on one worker (σ' = 1: a round is nearly an exact solve), then 0.35, 0.27, 0.24,
/// 0.19, 0.13 at m = 2, 4, 8, 16, 64, about linear in log m; with_rate_per_worker's b + c/m through
/// m = 1 and 2 turned positive at m = 3. (Shaped on that workload: evaluate it on another.)
template <convergence_features F>
struct with_rate_log_m : extend_features<F, with_rate_log_m<F>, 2> {
  static constexpr std::array<std::string_view, 2> more_names{"i log m", "i [m = 1]"};
  static std::array<double, 2> more(const probe_point& p) {
    return {p.iteration * std::log(p.workers), p.workers == 1 ? p.iteration : 0.0};
  }
};

/// One iteration of a probe run: its configuration with `at.iteration` = i, and the objective f(i)
/// (to be minimised; normalised per data item so runs on different fractions compare).
struct progress_point {
  probe_point at;
  double value = 0;
  std::string source;  ///< "file:line", for error messages
};

/// How the convergence model is fitted.
struct convergence_fit_options {
  /// f*, the optimum (a lower bound of every value); NaN: estimate it (see the file comment).
  double optimum = std::numeric_limits<double>::quiet_NaN();
  /// Points of iterations below this are left out (iteration 0 is the initial state; log 0 is −∞).
  double min_iteration = 1;
  /// The estimated f* is kept at or above this (0 for a quantity that cannot be negative: an RMSE,
  /// a duality gap, a negated log-likelihood); −∞: no bound. Short probes left free once fitted
  /// f* = −0.09 for an RMSE.
  double lower_bound = -std::numeric_limits<double>::infinity();
};

/// The fitted convergence model with features policy F.
template <class F = hemingway_features>
class convergence_model {
  static_assert(detail::check_system_features<F>(),
                "convergence_model<F>: F must be a features policy (size, names(), features(probe_point)); see hemingway_features");

 public:
  using features_type = F;

  /// Fits on `points`. Throws strata::error(bad_input) with fewer usable points than terms + 1, a
  /// non-finite value, or a given optimum that is not below every value (naming the point's source).
  static convergence_model fit(std::span<const progress_point> points, const convergence_fit_options& opt = {}) {
    std::vector<progress_point> use;
    for (const auto& p : points) {
      if (!std::isfinite(p.value) || !std::isfinite(p.at.iteration))
        throw error(errc::bad_input, p.source + ": objective or iteration is not finite");
      if (p.at.iteration >= opt.min_iteration && p.at.iteration >= 1) use.push_back(p);
    }
    if (use.size() < F::size + 1)
      throw error(errc::bad_input, "convergence model: " + std::to_string(use.size()) + " usable point(s) (iteration >= 1) for " +
                                       std::to_string(F::size) + " terms and the optimum; need at least " +
                                       std::to_string(F::size + 1) + (points.empty() ? "" : " (from " + points.front().source + " ...)"));
    double lo = use.front().value, hi = lo;
    for (const auto& p : use) lo = std::min(lo, p.value), hi = std::max(hi, p.value);
    convergence_model best;
    if (std::isfinite(opt.optimum)) {
      for (const auto& p : use)
        if (!(p.value > opt.optimum))
          throw error(errc::bad_input, p.source + ": objective " + std::to_string(p.value) + " is not above the given optimum " +
                                           std::to_string(opt.optimum));
      best = fit_at(use, opt.optimum);
    } else {
      if (!(lo > opt.lower_bound))
        throw error(errc::bad_input, "convergence model: the best value seen, " + std::to_string(lo) + ", is not above the optimum's lower bound " +
                                         std::to_string(opt.lower_bound) + " (the runs reached the optimum: nothing is left to model)");
      const double range = std::max(hi - lo, 1e-12 * std::max(1.0, std::abs(lo)));
      double best_sse = std::numeric_limits<double>::infinity();
      for (double d = 1e-3; d <= 20; d *= 1.25) {  // geometric grid of gaps below the best value seen
        double f = lo - d * range;
        if (f < opt.lower_bound) f = opt.lower_bound;  // past the bound: try the bound itself, then stop
        auto m = fit_at(use, f);
        double sse = 0;
        for (const auto& p : use) sse += (m.predict(p.at) - p.value) * (m.predict(p.at) - p.value);
        if (sse < best_sse) best_sse = sse, best = std::move(m);
        if (f == opt.lower_bound) break;
      }
    }
    best.points_.assign(points.begin(), points.end());
    best.opt_ = opt;
    return best;
  }

  /// Predicted f at `p` (p.iteration = i ≥ 1).
  double predict(const probe_point& p) const { return optimum_ + std::exp(log_gap(p)); }
  /// Predicted log(f(i) − f*).
  double log_gap(const probe_point& p) const {
    const auto x = F::features(p);
    double y = 0;
    for (std::size_t j = 0; j < F::size; ++j) y += beta_[j] * x[j];
    return y;
  }
  /// The first iteration i in 1..max_iterations whose predicted f(i) ≤ target, for the
  /// configuration `p` (its iteration is ignored); nullopt when none is (the target may be at or
  /// below f*, or the curve too slow).
  std::optional<double> iterations_to(double target, probe_point p, double max_iterations = 100000) const {
    if (!(target > optimum_)) return std::nullopt;
    for (double i = 1; i <= max_iterations; ++i) {
      p.iteration = i;
      if (predict(p) <= target) return i;
    }
    return std::nullopt;
  }

  double optimum() const noexcept { return optimum_; }
  const std::array<double, F::size>& beta() const noexcept { return beta_; }
  const std::vector<progress_point>& points() const noexcept { return points_; }
  const convergence_fit_options& options() const noexcept { return opt_; }

  /// {"optimum": f*, "terms": {name: β, ...}, "points": n}.
  json_value to_json() const {
    json_value terms = json_value::object();
    const auto names = F::names();
    for (std::size_t j = 0; j < F::size; ++j) terms.set(std::string(names[j]), beta_[j]);
    json_value o = json_value::object();
    o.set("optimum", optimum_).set("terms", std::move(terms)).set("points", points_.size());
    return o;
  }

 private:
  static convergence_model fit_at(const std::vector<progress_point>& use, double optimum) {
    xt::xtensor<double, 2> A = xt::zeros<double>({use.size(), F::size});
    xt::xtensor<double, 1> b = xt::zeros<double>({use.size()});
    for (std::size_t i = 0; i < use.size(); ++i) {
      const auto x = F::features(use[i].at);
      for (std::size_t j = 0; j < F::size; ++j) A(i, j) = x[j];
      b(i) = std::log(use[i].value - optimum);
    }
    const auto beta = least_squares(A, b);
    convergence_model m;
    m.optimum_ = optimum;
    for (std::size_t j = 0; j < F::size; ++j) m.beta_[j] = beta(j);
    return m;
  }

  double optimum_ = 0;
  std::array<double, F::size> beta_{};
  std::vector<progress_point> points_;
  convergence_fit_options opt_;
};

}  // namespace strata::cost
