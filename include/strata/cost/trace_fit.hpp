#pragma once
/// \file From run traces (core/trace.hpp, the trainers' `--metrics` JSON Lines files) to the cost
/// models' fit points, so the models can be fitted offline on any run's trace.
///
/// The configuration line gives the probe point: `workers`, `consistency`, `staleness`,
/// `delay_us` (the injected latency), and when present `scale` (the data fraction; 1 without it)
/// and `cores`. The objective is normalised per data item (`size`, else `train_ratings`, else
/// `tokens`, else 1) so runs on different data fractions compare, and negated for a trainer that
/// maximises it (LDA's log-likelihood), so the convergence model always sees a value to minimise.
/// With `fit_quantity::metric` the metric (MF: test RMSE; LDA: log-likelihood, negated) is followed
/// instead, as it is.
///
/// A trace written with `--eval-every K` (the configuration's `eval_every` > 0) has the objective
/// and the metric only on the evaluated iterations (every K-th, and the last; `null` elsewhere):
/// the time per iteration is taken from every line as usual, and the convergence model's points
/// (progress_of, time_to) from the evaluated lines only.
///
/// Bad input is an error, never a silent fit: a malformed line, non-increasing iteration numbers,
/// a non-finite or decreasing elapsed time, a non-finite objective where the run evaluates it
/// (every line without `eval_every`; with it, iterations that are multiples of K and the configured
/// last one), too few iterations, or, for the convergence model, no evaluated line at all, all as
/// strata::error(bad_input) whose message starts "FILE:LINE:".
#include <strata/core/error.hpp>
#include <strata/core/json.hpp>
#include <strata/core/trace.hpp>
#include <strata/cost/convergence_model.hpp>
#include <strata/cost/probe.hpp>
#include <strata/cost/system_model.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

namespace strata::cost {

/// What the convergence model follows: the trainer's objective (normalised per data item), or its
/// metric (MF's test RMSE, LDA's log-likelihood), which is often comparable across data fractions.
enum class fit_quantity { objective, metric };

/// How traces become fit points.
struct trace_fit_options {
  fit_quantity quantity = fit_quantity::objective;
  double unbounded_staleness = 8;  ///< effective staleness of async and vap (effective_staleness)
  double cores = 0;                ///< cores, when the trace does not say (0: one per worker)
  std::uint32_t warmup = 1;        ///< time per iteration is measured from this iteration on (the
                                   ///< first includes connecting and cold caches)
  /// Follow the sustained value: at iteration i, the worst value from i on (max over j ≥ i of the
  /// minimised value). Removes dips that do not last, e.g. a log-likelihood summed over stale,
  /// incomplete views in the first clocks under SSP, which reads better than the truth.
  bool sustained = true;
};

/// One run's trace, checked, with its probe point.
struct run_trace {
  std::string file;
  probe_point config;
  std::vector<iteration_record> iterations;
  std::vector<std::size_t> lines;  ///< the line of each record in the file
  double size = 1;                 ///< data items the objective is divided by
  bool maximise = false;           ///< the followed quantity is maximised (negated for the models)
  fit_quantity quantity = fit_quantity::objective;
  bool sustained = true;
  json_value raw_config;
  std::uint32_t eval_every = 0;    ///< the configuration's `eval_every` (0: every line evaluated)
  /// Whether record k holds the followed quantity (objective or metric): false on the iterations a
  /// run with `eval_every` did not evaluate (`null` in the trace).
  bool evaluated(std::size_t k) const {
    const auto& r = iterations.at(k);
    return std::isfinite(quantity == fit_quantity::metric ? r.metric : r.objective);
  }
};

namespace detail {
inline double config_number(const json_value& c, const char* key, double fallback) {
  const json_value* v = c.find(key);
  return v && v->is_number() ? v->as_number() : fallback;
}
inline std::string config_string(const json_value& c, const char* key, const std::string& fallback) {
  const json_value* v = c.find(key);
  return v && v->is_string() ? v->as_string() : fallback;
}
[[noreturn]] inline void trace_fail(const std::string& file, std::size_t line, const std::string& what) {
  throw error(errc::bad_input, file + ":" + std::to_string(line) + ": " + what);
}
}  // namespace detail

/// A run's configuration object (a trace's first line) as a probe point; `file` labels errors.
inline probe_point probe_from_config(const json_value& c, const trace_fit_options& opt = {}, const std::string& file = "<config>") {
  probe_point p;
  p.workers = detail::config_number(c, "workers", 0);
  if (!(p.workers >= 1)) detail::trace_fail(file, 1, "the configuration has no \"workers\" >= 1");
  p.scale = detail::config_number(c, "scale", 1);
  if (!(p.scale > 0 && std::isfinite(p.scale))) detail::trace_fail(file, 1, "\"scale\" must be a positive number");
  p.consistency = detail::config_string(c, "consistency", "bsp");
  try {
    p.staleness = effective_staleness(p.consistency, detail::config_number(c, "staleness", 0), opt.unbounded_staleness);
  } catch (const error& e) {
    detail::trace_fail(file, 1, e.what());
  }
  p.eager = p.consistency == "essp";
  p.bounded = clock_bounded(p.consistency);
  p.latency_s = detail::config_number(c, "delay_us", 0) * 1e-6;
  p.cores = detail::config_number(c, "cores", opt.cores);
  return p;
}

/// Reads and checks one trace file (see the file comment).
inline run_trace read_run_trace(const std::filesystem::path& path, const trace_fit_options& opt = {}) {
  run_trace t;
  t.file = path.string();
  try {
    trace_reader r(path);
    t.raw_config = r.config();
    // With --eval-every K, only these iterations must carry the objective and the metric; the
    // others' are null (not evaluated). Every line must without it.
    const double every = detail::config_number(t.raw_config, "eval_every", 0);
    if (every >= 1 && every <= std::numeric_limits<std::uint32_t>::max() && every == std::floor(every))
      t.eval_every = static_cast<std::uint32_t>(every);
    const double last = detail::config_number(t.raw_config, "iterations", -1);
    auto due = [&](std::uint32_t it) { return t.eval_every == 0 || it % t.eval_every == 0 || it == last; };
    while (auto rec = r.next()) {
      const std::size_t line = r.line_number();
      if (!t.iterations.empty() && rec->iteration <= t.iterations.back().iteration)
        detail::trace_fail(t.file, line, "iteration " + std::to_string(rec->iteration) + " follows iteration " +
                                             std::to_string(t.iterations.back().iteration) + " (iterations must increase)");
      if (!std::isfinite(rec->elapsed_s)) detail::trace_fail(t.file, line, "\"elapsed_s\" is not a finite number");
      if (!t.iterations.empty() && rec->elapsed_s < t.iterations.back().elapsed_s)
        detail::trace_fail(t.file, line, "\"elapsed_s\" decreases");
      const bool must = due(rec->iteration);
      const std::string when = t.eval_every == 0 ? "" : " at an evaluated iteration (eval_every " + std::to_string(t.eval_every) + ")";
      if (must && !std::isfinite(rec->objective))
        detail::trace_fail(t.file, line, "\"objective\" is not a finite number" + when + " (a diverged run?)");
      if (must && opt.quantity == fit_quantity::metric && !std::isfinite(rec->metric))
        detail::trace_fail(t.file, line, "the metric \"" + rec->metric_name + "\" is not a finite number" + when + " (a diverged run?)");
      t.iterations.push_back(std::move(*rec));
      t.lines.push_back(line);
    }
  } catch (const trace_error& e) {
    throw error(errc::bad_input, e.what());
  }
  t.config = probe_from_config(t.raw_config, opt, t.file);
  const double size = detail::config_number(t.raw_config, "size",
                                            detail::config_number(t.raw_config, "train_ratings", detail::config_number(t.raw_config, "tokens", 1)));
  t.size = size > 0 ? size : 1;
  t.quantity = opt.quantity;
  t.sustained = opt.sustained;
  if (opt.quantity == fit_quantity::metric) {
    t.size = 1;
    t.maximise = !t.iterations.empty() && t.iterations.front().metric_name == "loglik";
  } else {
    t.maximise = detail::config_string(t.raw_config, "trainer", "") == "lda" ||
                 detail::config_string(t.raw_config, "objective", "") == "maximise";
  }
  return t;
}

/// The run's mean seconds per iteration, from iteration `opt.warmup` to the last. Throws when the
/// trace has no two records from there on.
inline timing_point timing_of(const run_trace& t, const trace_fit_options& opt = {}) {
  std::size_t first = 0;
  while (first < t.iterations.size() && t.iterations[first].iteration < opt.warmup) ++first;
  if (first + 1 >= t.iterations.size())
    detail::trace_fail(t.file, t.lines.empty() ? 1 : t.lines.back(),
                       std::to_string(t.iterations.size()) + " iteration record(s); need two from iteration " +
                           std::to_string(opt.warmup) + " on to measure the time per iteration");
  const auto& a = t.iterations[first];
  const auto& b = t.iterations.back();
  timing_point p;
  p.at = t.config;
  p.seconds_per_iteration = (b.elapsed_s - a.elapsed_s) / static_cast<double>(b.iteration - a.iteration);
  p.source = t.file + ":" + std::to_string(t.lines.back());
  if (!(p.seconds_per_iteration > 0)) detail::trace_fail(t.file, t.lines.back(), "no time elapsed between iterations");
  return p;
}

/// The value the convergence model sees for one record of the run: the objective per data item, or
/// the metric; negated when it is maximised.
inline double value_of(const run_trace& t, const iteration_record& r) {
  const double v = t.quantity == fit_quantity::metric ? r.metric : r.objective / t.size;
  return t.maximise ? -v : v;
}

/// The run's elapsed seconds at iteration `opt.warmup` (the first record from there on): the point
/// of a start-up model (planner.hpp). Throws when the trace has no record from there on but the last.
inline timing_point startup_of(const run_trace& t, const trace_fit_options& opt = {}) {
  std::size_t k = 0;
  while (k < t.iterations.size() && t.iterations[k].iteration < opt.warmup) ++k;
  if (k + 1 >= t.iterations.size())
    detail::trace_fail(t.file, t.lines.empty() ? 1 : t.lines.back(),
                       "no iteration record from iteration " + std::to_string(opt.warmup) + " on before the last");
  timing_point p;
  p.at = t.config;
  p.seconds_per_iteration = t.iterations[k].elapsed_s;
  p.source = t.file + ":" + std::to_string(t.lines[k]);
  if (!(p.seconds_per_iteration > 0)) detail::trace_fail(t.file, t.lines[k], "no time elapsed by the warm-up iteration");
  return p;
}

namespace detail {
/// The records that hold the followed quantity (run_trace::evaluated), in order; throws, naming the
/// file, when there is none (a convergence fit has nothing to follow).
inline std::vector<std::size_t> evaluated_records(const run_trace& t) {
  std::vector<std::size_t> ks;
  for (std::size_t k = 0; k < t.iterations.size(); ++k)
    if (t.evaluated(k)) ks.push_back(k);
  if (ks.empty()) {
    const std::string what = t.quantity == fit_quantity::metric
                                 ? "the metric" + (t.iterations.empty() ? std::string() : " \"" + t.iterations.front().metric_name + "\"")
                                 : std::string("\"objective\"");
    trace_fail(t.file, t.lines.empty() ? 1 : t.lines.back(),
               "no iteration record has " + what + " (" + std::to_string(t.iterations.size()) +
                   " record(s), every one null or absent): nothing to fit the convergence model to");
  }
  return ks;
}
}  // namespace detail

/// The run's value (value_of) at each evaluated iteration (iteration 0 included; the convergence
/// model leaves out what it cannot use): every record, or with `eval_every` the records that hold
/// the value. Throws when no record does.
inline std::vector<progress_point> progress_of(const run_trace& t) {
  const auto ks = detail::evaluated_records(t);
  std::vector<progress_point> out(ks.size());
  double worst = -std::numeric_limits<double>::infinity();
  for (std::size_t i = ks.size(); i-- > 0;) {
    const std::size_t k = ks[i];
    auto& p = out[i];
    p.at = t.config;
    p.at.iteration = t.iterations[k].iteration;
    const double v = value_of(t, t.iterations[k]);
    worst = std::max(worst, v);
    p.value = t.sustained ? worst : v;
    p.source = t.file + ":" + std::to_string(t.lines[k]);
  }
  return out;
}

/// The first (evaluated) iteration at which the run's value (value_of; sustained, see trace_fit_options) is ≤ target, and the elapsed
/// seconds then; {-1, -1} when the run never gets there. Throws when no record holds the value.
struct reached {
  double iteration = -1, seconds = -1;
  bool ok() const noexcept { return iteration >= 0; }
};
inline reached time_to(const run_trace& t, double target) {
  const auto ks = detail::evaluated_records(t);
  const auto pts = progress_of(t);  // sustained values when the run asks for them; one per ks
  for (std::size_t i = 0; i < pts.size(); ++i)
    if (pts[i].value <= target) return {pts[i].at.iteration, t.iterations[ks[i]].elapsed_s};
  return {};
}

}  // namespace strata::cost
