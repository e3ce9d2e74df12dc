#pragma once
/// \file Adaptive mode: a running trainer re-plans from its own trace. The run is cut into
/// segments of k iterations; after each one an *adaptive policy* looks at the trace so far (the
/// trainer's iteration records, numbered and timed continuously across segments) and the segments
/// run so far, and picks the configuration of the next segment from a list of candidates (the
/// staleness bound, or any other knob a probe_point describes).
///
/// A policy is any type with `choose(const adaptive_input&) -> adaptive_choice` (the concept
/// `adaptive_policy`), so users write their own:
///
///     struct always_four {
///       strata::cost::adaptive_choice choose(const strata::cost::adaptive_input& in) {
///         strata::cost::check_adaptive_input(in);                 // the same errors as the library's
///         return {in.candidates.back(), "the last candidate"};
///       }
///     };
///
/// `refit_policy` is the library's: it refits, on the run's own trace only,
/// - time per iteration of each candidate: measured on the candidate's latest segment (from the
///   segment's second iteration to its last, so the restart and cold cache every segment pays
///   alike are left out); for a candidate never run, the system model t(s) = θ0 + θ1/(1+s), θ ≥ 0
///   by NNLS (cost/system_model.hpp) on one point per segment, once two bounds have been timed;
/// - the convergence of the followed value f (minimised; a maximised one is negated):
///
///       log(f(i) − f*) = β0 + β1·log i + β2·S(i),   S(i) = Σ_{j=2..i} s_j·(log j − log(j−1)),
///
///   s_j the (effective) staleness bound in force at iteration j: Hemingway's {1, log i, s·log i}
///   (cost/convergence_model.hpp, with_staleness_drag) with s·log i replaced by its integral over a
///   bound that changes during the run (the two agree for a constant bound). f* by the same profile
///   search as convergence_model. With one bound seen so far β2 is not identifiable and is taken
///   as 0 (staleness does not change progress per iteration);
/// - for each candidate c, from the last iteration n: the decay rate r_c = β1 + β2·s_c per log i,
///   the iterations h to bring the gap f − f* down to the target (the given target, else half of
///   the current gap): h = n·(exp((g* − g_n)/r_c) − 1), and the seconds h·t_c. It picks the
///   fewest seconds; it keeps the current configuration unless another is predicted faster by
///   more than `margin` (switching is not free and the estimates are noisy).
/// - exploration: until two distinct bounds have been run (with `explore`), it picks the untried
///   candidate whose bound is farthest from those run, without predicting anything.
///
/// Bad input is an error (strata::error(bad_input)): an empty trace, no candidates or segments,
/// a non-finite value or elapsed time, iterations that do not increase, elapsed times that
/// decrease, segments that do not tile the trace's iterations.
#include <strata/core/error.hpp>
#include <strata/core/json.hpp>
#include <strata/core/trace.hpp>
#include <strata/cost/nnls.hpp>
#include <strata/cost/probe.hpp>
#include <strata/cost/system_model.hpp>

#include <xtensor/xtensor.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::cost {

/// One segment of an adaptive run: the configuration it ran with and its iterations (inclusive,
/// numbered as in the trace), and why the policy chose it.
struct segment {
  probe_point config;
  std::uint32_t first = 1, last = 0;
  std::string reason;
};

/// What a policy sees after a segment.
struct adaptive_input {
  std::span<const iteration_record> trace;  ///< every record so far (iteration 0 may be there), increasing iterations
  std::span<const segment> segments;        ///< the segments run so far, in order, tiling the trace's iterations >= 1
  std::span<const probe_point> candidates;  ///< the configurations the next segment may use
  bool use_metric = true;                   ///< follow the record's metric (else its objective)
  bool maximise = false;                    ///< the followed value is maximised (LDA's log-likelihood)
  double target = std::numeric_limits<double>::quiet_NaN();  ///< the value aimed at (NaN: none)
};

/// One candidate's estimate (a policy may leave the list empty).
struct adaptive_estimate {
  probe_point config;
  double seconds_per_iteration = std::numeric_limits<double>::quiet_NaN();
  bool timed = false;  ///< seconds_per_iteration measured on one of its segments (else predicted)
  double rate = std::numeric_limits<double>::quiet_NaN();  ///< d log(f − f*) / d log i
  double iterations = std::numeric_limits<double>::infinity();
  double seconds = std::numeric_limits<double>::infinity();
};

/// A policy's answer: the next segment's configuration and why.
struct adaptive_choice {
  probe_point config;
  std::string reason;
  std::vector<adaptive_estimate> estimates;
};

/// An adaptive policy: `choose(input)` returns the next segment's configuration.
template <class P>
concept adaptive_policy = requires(P& p, const adaptive_input& in) {
  { p.choose(in) } -> std::convertible_to<adaptive_choice>;
};

/// Throws strata::error(bad_input) for the bad inputs listed in the file comment.
inline void check_adaptive_input(const adaptive_input& in) {
  auto fail = [](const std::string& what) { throw error(errc::bad_input, "adaptive: " + what); };
  if (in.trace.empty()) fail("the trace is empty (run a segment first)");
  if (in.candidates.empty()) fail("no candidate configurations");
  if (in.segments.empty()) fail("no segments");
  for (std::size_t k = 0; k < in.trace.size(); ++k) {
    const auto& r = in.trace[k];
    const double v = in.use_metric ? r.metric : r.objective;
    if (!std::isfinite(v))
      fail("iteration " + std::to_string(r.iteration) + ": the " + (in.use_metric ? "metric" : "objective") + " is not finite (a diverged run?)");
    if (!std::isfinite(r.elapsed_s)) fail("iteration " + std::to_string(r.iteration) + ": elapsed_s is not finite");
    if (k > 0 && r.iteration <= in.trace[k - 1].iteration)
      fail("iteration " + std::to_string(r.iteration) + " follows iteration " + std::to_string(in.trace[k - 1].iteration));
    if (k > 0 && r.elapsed_s < in.trace[k - 1].elapsed_s) fail("elapsed_s decreases at iteration " + std::to_string(r.iteration));
  }
  std::uint32_t next = in.segments.front().first;
  for (const auto& s : in.segments) {
    if (s.first != next || s.last < s.first)
      fail("segment [" + std::to_string(s.first) + ", " + std::to_string(s.last) + "] does not follow the one before");
    if (!std::isfinite(s.config.staleness)) fail("a segment's staleness is not finite");
    next = s.last + 1;
  }
  const std::uint32_t first = in.trace.front().iteration == 0 && in.trace.size() > 1 ? in.trace[1].iteration : in.trace.front().iteration;
  if (in.segments.front().first > std::max<std::uint32_t>(first, 1) || in.segments.back().last != in.trace.back().iteration)
    fail("the segments [" + std::to_string(in.segments.front().first) + ", " + std::to_string(in.segments.back().last) +
         "] do not cover the trace's iterations up to " + std::to_string(in.trace.back().iteration));
  for (const auto& c : in.candidates)
    if (!std::isfinite(c.staleness) || c.staleness < 0) fail("a candidate's staleness is not a finite number >= 0");
}

/// The policy that never changes anything (the segments run like one fixed run).
struct fixed_policy {
  adaptive_choice choose(const adaptive_input& in) const {
    check_adaptive_input(in);
    return {in.segments.back().config, "fixed", {}};
  }
};

/// How refit_policy decides (see the file comment).
struct refit_options {
  double margin = 0.05;  ///< switch only when another candidate is predicted this much faster (0.05: 5%)
  bool explore = true;   ///< until two bounds have been run, try the one farthest from those run
  bool sustained = true; ///< follow the worst value from i on (as trace_fit_options::sustained)
  /// f* at least this fraction of the observed range below the best value (0: as convergence_model's
  /// search). Near-flat curves otherwise put f* just below the last values, where the logarithm
  /// turns the small differences of noisy last points into large differences of rate.
  double min_gap = 0;
};

/// The system model refit_policy fits on segment timings: 1 and 1/(1+s).
struct staleness_time_features {
  static constexpr std::size_t size = 2;
  static std::array<std::string_view, size> names() { return {"1", "1/(1+s)"}; }
  static std::array<double, size> features(const probe_point& p) { return {1.0, 1.0 / (1.0 + p.staleness)}; }
};

/// The library's adaptive policy (see the file comment).
class refit_policy {
 public:
  explicit refit_policy(refit_options o = {}) : o_(o) {}

  adaptive_choice choose(const adaptive_input& in) const {
    check_adaptive_input(in);
    const segment& cur = in.segments.back();
    // Bounds run so far.
    std::vector<double> seen;
    for (const auto& s : in.segments)
      if (std::find(seen.begin(), seen.end(), s.config.staleness) == seen.end()) seen.push_back(s.config.staleness);
    if (seen.size() < 2 && o_.explore) {
      const probe_point* far = nullptr;
      double best = -1;
      for (const auto& c : in.candidates) {
        double d = std::numeric_limits<double>::infinity();
        for (double s : seen) d = std::min(d, std::abs(c.staleness - s));
        if (d > best) best = d, far = &c;
      }
      if (far && best > 0) return {*far, "explore: the bound farthest from those run", {}};
    }

    // Time per iteration: measured per candidate (latest segment), else the model.
    std::vector<timing_point> pts;
    for (const auto& s : in.segments)
      if (const double t = segment_seconds_per_iteration(in, s); t > 0) pts.push_back({s.config, t, "segment " + std::to_string(s.first)});
    bool model_ok = false;
    system_model<staleness_time_features> tm;
    if (seen.size() >= 2) {
      try {
        tm = system_model<staleness_time_features>::fit(pts);
        model_ok = true;
      } catch (const error&) {
      }
    }
    // Convergence: (i, S(i), value) for i >= 1.
    std::vector<double> li, si, v;
    fit_points(in, li, si, v);
    const bool drag = seen.size() >= 2;
    double beta[3] = {0, 0, 0}, fstar = 0;
    if (!fit_convergence(li, si, v, drag, o_.min_gap, beta, fstar))
      return {cur.config, "keep: too few iterations to fit the convergence", {}};
    const double n = in.trace.back().iteration;
    const double gap_now = std::exp(beta[0] + beta[1] * li.back() + beta[2] * si.back());
    double g_target = std::log(gap_now / 2);
    if (std::isfinite(in.target)) {
      const double t = in.maximise ? -in.target : in.target;
      if (t > fstar && t - fstar < gap_now) g_target = std::log(t - fstar);
    }
    const double g_now = std::log(gap_now);

    adaptive_choice out;
    out.config = cur.config;
    std::size_t best = 0, current = in.candidates.size();
    for (std::size_t k = 0; k < in.candidates.size(); ++k) {
      const auto& c = in.candidates[k];
      adaptive_estimate e;
      e.config = c;
      for (auto it = pts.rbegin(); it != pts.rend(); ++it)
        if (it->at.staleness == c.staleness) {
          e.seconds_per_iteration = it->seconds_per_iteration, e.timed = true;
          break;
        }
      if (!e.timed) e.seconds_per_iteration = model_ok ? tm.predict(c) : (pts.empty() ? 1.0 : pts.back().seconds_per_iteration);
      e.rate = beta[1] + beta[2] * c.staleness;
      if (e.rate < 0) {
        e.iterations = n * (std::exp((g_target - g_now) / e.rate) - 1);
        e.seconds = e.iterations * e.seconds_per_iteration;
      }
      if (c.staleness == cur.config.staleness && current == in.candidates.size()) current = k;
      out.estimates.push_back(e);
      if (e.seconds < out.estimates[best].seconds) best = k;
    }
    const auto& b = out.estimates[best];
    if (!std::isfinite(b.seconds)) {
      out.reason = "keep: no candidate is predicted to make progress";
      return out;
    }
    if (current < out.estimates.size() && out.estimates[current].seconds <= b.seconds * (1 + o_.margin)) {
      out.config = in.candidates[current];
      out.reason = "keep: " + describe(out.estimates[current]) + " (best other within the margin)";
      return out;
    }
    out.config = in.candidates[best];
    out.reason = "switch: " + describe(b);
    return out;
  }

  /// The segment's seconds per iteration from its second iteration to its last (from its first
  /// when it has one iteration: then the restart is counted); 0 when the trace lacks it.
  static double segment_seconds_per_iteration(const adaptive_input& in, const segment& s) {
    const iteration_record *a = nullptr, *b = nullptr;
    for (const auto& r : in.trace) {
      if (s.last > s.first ? r.iteration == s.first : r.iteration < s.first) a = &r;
      if (r.iteration == s.last) b = &r;
    }
    if (!a || !b || b->iteration <= a->iteration) return 0;
    return (b->elapsed_s - a->elapsed_s) / static_cast<double>(b->iteration - a->iteration);
  }

 private:
  static std::string describe(const adaptive_estimate& e) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "s=%g %.4f s/it (%s), rate %.3f, %.0f it, %.3f s", e.config.staleness, e.seconds_per_iteration,
                  e.timed ? "measured" : "predicted", e.rate, e.iterations, e.seconds);
    return buf;
  }

  /// log i, S(i) and the (sustained, minimised) value of each record with i >= 1.
  void fit_points(const adaptive_input& in, std::vector<double>& li, std::vector<double>& si, std::vector<double>& v) const {
    auto bound_at = [&](std::uint32_t i) {
      for (const auto& s : in.segments)
        if (i >= s.first && i <= s.last) return s.config.staleness;
      return i < in.segments.front().first ? in.segments.front().config.staleness : in.segments.back().config.staleness;
    };
    double S = 0, prev_log = 0;
    std::uint32_t prev = 1;
    for (const auto& r : in.trace) {
      if (r.iteration < 1) continue;
      const double l = std::log(static_cast<double>(r.iteration));
      // S over the iterations since the previous record (each at its own bound).
      for (std::uint32_t j = prev + 1; j <= r.iteration; ++j) S += bound_at(j) * (std::log(static_cast<double>(j)) - std::log(j - 1.0));
      prev = r.iteration;
      prev_log = l;
      li.push_back(l);
      si.push_back(S);
      const double x = in.use_metric ? r.metric : r.objective;
      v.push_back(in.maximise ? -x : x);
    }
    (void)prev_log;
    if (o_.sustained)
      for (std::size_t k = v.size(); k-- > 1;) v[k - 1] = std::max(v[k - 1], v[k]);
  }

  /// Least squares of log(v − f*) on {1, log i[, S(i)]}, f* by the profile search of
  /// convergence_model. False with too few points.
  static bool fit_convergence(const std::vector<double>& li, const std::vector<double>& si, const std::vector<double>& v, bool drag,
                              double min_gap, double beta[3], double& fstar) {
    const std::size_t terms = drag ? 3 : 2;
    if (v.size() < terms + 1) return false;
    double lo = v.front(), hi = lo;
    for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x);
    const double range = std::max(hi - lo, 1e-12 * std::max(1.0, std::abs(lo)));
    double best_sse = std::numeric_limits<double>::infinity();
    bool any = false;
    for (double d = std::max(1e-3, min_gap); d <= 20; d *= 1.25) {
      const double f = lo - d * range;
      xt::xtensor<double, 2> A = xt::zeros<double>({v.size(), terms});
      xt::xtensor<double, 1> b = xt::zeros<double>({v.size()});
      for (std::size_t i = 0; i < v.size(); ++i) {
        A(i, 0) = 1, A(i, 1) = li[i];
        if (drag) A(i, 2) = si[i];
        b(i) = std::log(v[i] - f);
      }
      xt::xtensor<double, 1> x;
      try {
        x = least_squares(A, b);
      } catch (const error&) {
        continue;
      }
      double sse = 0;
      for (std::size_t i = 0; i < v.size(); ++i) {
        const double pred = f + std::exp(x(0) + x(1) * li[i] + (drag ? x(2) * si[i] : 0.0));
        sse += (pred - v[i]) * (pred - v[i]);
      }
      if (std::isfinite(sse) && sse < best_sse) {
        best_sse = sse, fstar = f, any = true;
        beta[0] = x(0), beta[1] = x(1), beta[2] = drag ? x(2) : 0.0;
      }
    }
    return any;
  }

  refit_options o_;
};

static_assert(adaptive_policy<refit_policy> && adaptive_policy<fixed_policy>);

/// A segment as JSON: {"first", "last", "staleness", "label", "reason"}.
inline json_value to_json(const segment& s) {
  json_value o = json_value::object();
  o.set("first", s.first).set("last", s.last).set("staleness", s.config.staleness).set("label", s.config.describe()).set("reason", s.reason);
  return o;
}

}  // namespace strata::cost
