#pragma once
/// \file Ernest's system model (Venkataraman et al., NSDI 2016): time per iteration on m workers
/// with data scale s,
///
///     t(m, s) = θ0 + θ1·s/m + θ2·log m + θ3·m,   every θ ≥ 0,
///
/// fitted by non-negative least squares (cost/nnls.hpp) on a few measured runs. θ1·s/m is the
/// parallel compute, θ2·log m a tree aggregation, θ3·m per-worker overhead, θ0 the serial part.
///
/// The feature set is a policy type, so a user adds terms without touching the fitter:
///
///     struct my_features {                 // any type with these three members
///       static constexpr std::size_t size = 2;
///       static std::array<std::string_view, size> names() { return {"1", "bytes"}; }
///       static std::array<double, size> features(const probe_point& p) { return {1.0, p.scale}; }
///     };
///     auto model = system_model<with_staleness<ernest_features>>::fit(points);
///
/// Decorators in the manner of transport's `delayed<T>` append a term to any features policy:
/// `with_cores<F>` (compute slows down once workers outnumber cores), `with_staleness<F>`
/// (per-clock blocking on a latency, amortised over the staleness window), `with_push<F>` (the
/// extra blocking of models that pull rows rather than have them pushed) and `with_sync<F>`
/// (pull models wait for the slowest worker, a lag that grows with the compute per clock).
#include <strata/core/error.hpp>
#include <strata/core/json.hpp>
#include <strata/cost/nnls.hpp>
#include <strata/cost/probe.hpp>

#include <xtensor/xtensor.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace strata::cost {

/// A features policy of the system model: `size` terms, their names, and their values at a point.
template <class F>
concept system_features = requires(const probe_point& p) {
  { F::size } -> std::convertible_to<std::size_t>;
  { F::names() } -> std::same_as<std::array<std::string_view, F::size>>;
  { F::features(p) } -> std::same_as<std::array<double, F::size>>;
} && (F::size > 0);

namespace detail {
/// Spells out what a features policy lacks (a concept failure alone is cryptic).
template <class F>
constexpr bool check_system_features() {
  static_assert(requires { F::size; }, "a features policy needs `static constexpr std::size_t size` (the number of terms)");
  static_assert(requires { { F::names() } -> std::same_as<std::array<std::string_view, F::size>>; },
                "a features policy needs `static std::array<std::string_view, size> names()`");
  static_assert(requires(const probe_point& p) { { F::features(p) } -> std::same_as<std::array<double, F::size>>; },
                "a features policy needs `static std::array<double, size> features(const probe_point&)`");
  return system_features<F>;
}
}  // namespace detail

/// Ernest's four terms: 1, s/m, log m, m.
struct ernest_features {
  static constexpr std::size_t size = 4;
  static std::array<std::string_view, size> names() { return {"serial", "compute s/m", "aggregation log m", "per-worker m"}; }
  static std::array<double, size> features(const probe_point& p) {
    return {1.0, p.scale / p.workers, std::log(p.workers), p.workers};
  }
};

/// The feature set F with N more terms, appended after F's (CRTP): a decorator D derives from
/// extend_features<F, D, N> and declares only its own terms, `static constexpr
/// std::array<std::string_view, N> more_names` and `static std::array<double, N> more(const
/// probe_point&)`.
template <class F, class D, std::size_t N>
struct extend_features {
  static constexpr std::size_t size = F::size + N;
  static std::array<std::string_view, size> names() {
    std::array<std::string_view, size> n{};
    std::ranges::copy(F::names(), n.begin());
    std::ranges::copy(D::more_names, n.begin() + F::size);
    return n;
  }
  static std::array<double, size> features(const probe_point& p) {
    std::array<double, size> x{};
    std::ranges::copy(F::features(p), x.begin());
    std::ranges::copy(D::more(p), x.begin() + F::size);
    return x;
  }
};

/// F plus s·(1/min(m, cores) − 1/m): with more workers than cores the compute term stops shrinking
/// (0 while m ≤ cores, or when cores is 0).
template <system_features F>
struct with_cores : extend_features<F, with_cores<F>, 1> {
  static constexpr std::array<std::string_view, 1> more_names{"oversubscription s/min(m,cores) - s/m"};
  static std::array<double, 1> more(const probe_point& p) {
    const double busy = p.cores > 0 ? std::min(p.workers, p.cores) : p.workers;
    return {p.scale / busy - p.scale / p.workers};
  }
};

/// F plus latency/(1 + staleness): a read that must be fresh waits about one round trip; with a
/// staleness bound s it does so about once per s + 1 clocks (eager pushes hide part of it: see
/// with_push). 0 for models without a clock bound (async, vap), whose reads never wait.
template <system_features F>
struct with_staleness : extend_features<F, with_staleness<F>, 1> {
  static constexpr std::array<std::string_view, 1> more_names{"blocking latency/(1+s)"};
  static std::array<double, 1> more(const probe_point& p) {
    return {p.bounded ? p.latency_s / (1.0 + p.staleness) : 0.0};
  }
};

/// F plus the latency for clock-bounded models that pull rows (bsp, ssp; 0 under eager pushes and
/// for async and vap): a pull model's reads wait on some clocks whatever the staleness bound (a
/// stale row is re-fetched when it runs out), which latency/(1+s) alone cannot express.
template <system_features F>
struct with_push : extend_features<F, with_push<F>, 1> {
  static constexpr std::array<std::string_view, 1> more_names{"pull blocking latency, 0 when eager"};
  static std::array<double, 1> more(const probe_point& p) {
    return {p.eager || !p.bounded ? 0.0 : p.latency_s};
  }
};

/// F plus s/m for clock-bounded models that pull rows (bsp, ssp): their reads wait for the slowest
/// writer, whose lag grows with the compute of a clock; eager pushes (essp) and unbounded models
/// (async, vap) hide it.
template <system_features F>
struct with_sync : extend_features<F, with_sync<F>, 1> {
  static constexpr std::array<std::string_view, 1> more_names{"pull sync s/m"};
  static std::array<double, 1> more(const probe_point& p) {
    return {p.eager || !p.bounded ? 0.0 : p.scale / p.workers};
  }
};

/// One measured run: its configuration and its mean seconds per iteration.
struct timing_point {
  probe_point at;
  double seconds_per_iteration = 0;
  std::string source;  ///< where it came from ("file:line"), for error messages
};

/// How the system model is fitted.
struct system_fit_options {
  /// Minimise relative rather than absolute error (rows scaled by 1/t): the small configurations
  /// then count as much as the large ones, which is what a prediction's relative error measures.
  bool relative = true;
};

/// The fitted system model with features policy F.
template <class F = ernest_features>
class system_model {
  static_assert(detail::check_system_features<F>(),
                "system_model<F>: F must be a features policy (size, names(), features(probe_point)); see ernest_features");

 public:
  using features_type = F;

  /// Fits θ ≥ 0 on `points` by NNLS. Throws strata::error(bad_input) when there are fewer points
  /// than terms, or a point is not finite or not positive (naming its source).
  static system_model fit(std::span<const timing_point> points, const system_fit_options& opt = {}) {
    if (points.size() < F::size) {
      std::string from;
      for (const auto& p : points) from += (from.empty() ? "" : ", ") + p.source;
      throw error(errc::bad_input, "system model: " + std::to_string(points.size()) + " timing point(s) for " +
                                       std::to_string(F::size) + " terms; need at least " + std::to_string(F::size) +
                                       (from.empty() ? std::string() : " (from " + from + ")"));
    }
    xt::xtensor<double, 2> A = xt::zeros<double>({points.size(), F::size});
    xt::xtensor<double, 1> b = xt::zeros<double>({points.size()});
    for (std::size_t i = 0; i < points.size(); ++i) {
      const auto& p = points[i];
      if (!(std::isfinite(p.seconds_per_iteration) && p.seconds_per_iteration > 0))
        throw error(errc::bad_input, p.source + ": seconds per iteration is " + std::to_string(p.seconds_per_iteration) +
                                         " (want a finite positive number)");
      const auto x = F::features(p.at);
      const double w = opt.relative ? 1.0 / p.seconds_per_iteration : 1.0;
      for (std::size_t j = 0; j < F::size; ++j) {
        if (!std::isfinite(x[j])) throw error(errc::bad_input, p.source + ": feature '" + std::string(F::names()[j]) + "' is not finite");
        A(i, j) = w * x[j];
      }
      b(i) = w * p.seconds_per_iteration;
    }
    const auto r = nnls(A, b);
    if (!r.converged) throw error(errc::bad_input, "system model: NNLS did not converge (ill-conditioned features?)");
    system_model m;
    for (std::size_t j = 0; j < F::size; ++j) m.theta_[j] = r.x(j);
    m.points_.assign(points.begin(), points.end());
    m.opt_ = opt;
    return m;
  }

  /// Predicted seconds per iteration at `p`.
  double predict(const probe_point& p) const {
    const auto x = F::features(p);
    double t = 0;
    for (std::size_t j = 0; j < F::size; ++j) t += theta_[j] * x[j];
    return t;
  }
  /// θ, one per term of F.
  const std::array<double, F::size>& theta() const noexcept { return theta_; }
  /// The points it was fitted on, and how (for bootstrap refits).
  const std::vector<timing_point>& points() const noexcept { return points_; }
  const system_fit_options& options() const noexcept { return opt_; }

  /// {"terms": {name: θ, ...}, "points": n}.
  json_value to_json() const {
    json_value terms = json_value::object();
    const auto names = F::names();
    for (std::size_t j = 0; j < F::size; ++j) terms.set(std::string(names[j]), theta_[j]);
    json_value o = json_value::object();
    o.set("terms", std::move(terms)).set("points", points_.size()).set("relative", opt_.relative);
    return o;
  }

 private:
  std::array<double, F::size> theta_{};
  std::vector<timing_point> points_;
  system_fit_options opt_;
};

}  // namespace strata::cost
