#pragma once
/// \file Checking a plan against measurements: per held-out configuration, predicted and measured
/// time per iteration and time to the target; the median relative errors; and how much slower
/// the planner's pick is than the measured best. Also the ranked table a tool prints.
#include <strata/core/json.hpp>
#include <strata/cost/planner.hpp>
#include <strata/cost/probe.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace strata::cost {

/// One held-out configuration, predicted and measured. A measured time to target < 0 means the run
/// did not reach the target in the iterations it ran.
struct heldout_check {
  probe_point config;
  double predicted_seconds_per_iteration = 0, measured_seconds_per_iteration = 0;
  double predicted_seconds = std::numeric_limits<double>::infinity(), measured_seconds = -1;
  double predicted_iterations = std::numeric_limits<double>::infinity(), measured_iterations = -1;
};

/// |predicted − measured| / measured.
inline double relative_error(double predicted, double measured) { return std::abs(predicted - measured) / std::abs(measured); }

/// The median (NaN for none).
inline double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// The summary of a set of held-out checks.
struct evaluation {
  double median_error_seconds_per_iteration = std::numeric_limits<double>::quiet_NaN();
  double median_error_seconds = std::numeric_limits<double>::quiet_NaN();  ///< over configurations that reached the target and were predicted to
  std::size_t timed = 0;          ///< configurations in median_error_seconds
  std::size_t missed_reach = 0;   ///< predicted reachable but not reached, or the other way round
  std::size_t pick = 0;           ///< index of the planner's pick (the smallest predicted time)
  std::size_t best = 0;           ///< index of the measured best (smallest measured time to target)
  double pick_slowdown = std::numeric_limits<double>::quiet_NaN();  ///< measured time of the pick / measured best − 1 (∞ if the pick never reached)
};

/// Summarises `checks` (see evaluation's members).
inline evaluation evaluate(const std::vector<heldout_check>& checks) {
  evaluation ev;
  std::vector<double> spi, sec;
  double pick_pred = std::numeric_limits<double>::infinity(), best_meas = std::numeric_limits<double>::infinity();
  bool any_best = false;
  for (std::size_t k = 0; k < checks.size(); ++k) {
    const auto& c = checks[k];
    if (c.measured_seconds_per_iteration > 0)
      spi.push_back(relative_error(c.predicted_seconds_per_iteration, c.measured_seconds_per_iteration));
    const bool pred_ok = std::isfinite(c.predicted_seconds), meas_ok = c.measured_seconds >= 0;
    if (pred_ok && meas_ok) sec.push_back(relative_error(c.predicted_seconds, c.measured_seconds));
    if (pred_ok != meas_ok) ++ev.missed_reach;
    if (pred_ok && c.predicted_seconds < pick_pred) pick_pred = c.predicted_seconds, ev.pick = k;
    if (meas_ok && c.measured_seconds < best_meas) best_meas = c.measured_seconds, ev.best = k, any_best = true;
  }
  ev.median_error_seconds_per_iteration = median(spi);
  ev.median_error_seconds = median(sec);
  ev.timed = sec.size();
  if (any_best && std::isfinite(pick_pred)) {
    const double m = checks[ev.pick].measured_seconds;
    ev.pick_slowdown = m >= 0 ? m / best_meas - 1 : std::numeric_limits<double>::infinity();
  }
  return ev;
}

/// The checks and their summary as JSON.
inline json_value to_json(const std::vector<heldout_check>& checks, const evaluation& ev) {
  json_value a = json_value::array();
  for (const auto& c : checks) {
    json_value o = json_value::object();
    o.set("label", c.config.describe()).set("config", to_json(c.config))
        .set("predicted_seconds_per_iteration", c.predicted_seconds_per_iteration)
        .set("measured_seconds_per_iteration", c.measured_seconds_per_iteration)
        .set("predicted_iterations", c.predicted_iterations).set("measured_iterations", c.measured_iterations)
        .set("predicted_seconds", c.predicted_seconds).set("measured_seconds", c.measured_seconds);
    a.push_back(std::move(o));
  }
  json_value s = json_value::object();
  s.set("median_error_seconds_per_iteration", ev.median_error_seconds_per_iteration)
      .set("median_error_seconds_to_target", ev.median_error_seconds).set("timed", ev.timed).set("missed_reach", ev.missed_reach)
      .set("pick", checks.empty() ? json_value() : json_value(checks[ev.pick].config.describe()))
      .set("measured_best", checks.empty() ? json_value() : json_value(checks[ev.best].config.describe()))
      .set("pick_slowdown", ev.pick_slowdown);
  json_value o = json_value::object();
  o.set("configurations", std::move(a)).set("summary", std::move(s));
  return o;
}

/// The ranked plan as a text table, at most `rows` rows (0: all).
inline std::string format_plan(const std::vector<plan_entry>& ranked, std::size_t rows = 0) {
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%4s  %-36s %12s %10s %12s  %s\n", "rank", "configuration", "s/iteration", "iterations", "time to target",
                "interval");
  out += buf;
  for (std::size_t k = 0; k < ranked.size() && (rows == 0 || k < rows); ++k) {
    const auto& e = ranked[k];
    if (e.reachable())
      std::snprintf(buf, sizeof buf, "%4zu  %-36s %12.4f %10.0f %12.2f s  [%.2f, %.2f]\n", k + 1, e.config.describe().c_str(),
                    e.seconds_per_iteration, e.iterations, e.seconds, e.seconds_lo, e.seconds_hi);
    else
      std::snprintf(buf, sizeof buf, "%4zu  %-36s %12.4f %10s %12s\n", k + 1, e.config.describe().c_str(), e.seconds_per_iteration,
                    "-", "unreachable");
    out += buf;
  }
  return out;
}

}  // namespace strata::cost
