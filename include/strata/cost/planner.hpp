#pragma once
/// \file The planner: for each candidate configuration, the predicted time to reach a target
/// objective = (seconds per iteration, from the system model) × (iterations to the target, from
/// the convergence model), ranked fastest first. Runs whose first iterations cost more than the
/// rest (cold caches: every row's first fetch) can add a start-up model, a second system model of
/// the elapsed time at iteration w = `planner_options::warmup`: then time(i) = startup + (i − w)·t
/// for i ≥ w, and startup·i/w before. Each prediction comes with a bootstrap interval: the models are refit
/// on resampled runs (a seeded RNG, so a plan is repeatable), and the interval is the percentile
/// range of the refits' predictions. The bootstrap draws whole runs with replacement, not points: a
/// point's run is the file of its source ("file:line"), and a drawn run brings all its points to
/// every model (its timing, its start-up, its progress), because the points of one run share its
/// errors (its fraction's cache, its m's rate); drawn point by point, 56 intervals held 6 measured
/// values (benchmarks/results/cocoa/REPORT.md). Points without a "file:line" source count as runs
/// of their own.
#include <strata/core/error.hpp>
#include <strata/core/json.hpp>
#include <strata/cost/convergence_model.hpp>
#include <strata/cost/probe.hpp>
#include <strata/cost/system_model.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace strata::cost {

/// How plan() predicts and estimates its uncertainty.
struct planner_options {
  std::size_t bootstrap = 200;     ///< refits (0: no interval)
  double level = 0.9;              ///< the interval's coverage (0.9: the 5th to the 95th percentile)
  std::uint64_t seed = 1;          ///< the bootstrap's RNG
  double max_iterations = 100000;  ///< beyond this a target counts as unreachable
  double warmup = 0;               ///< w: the iteration the start-up model's time is measured at (with a start-up model)
};

/// One candidate's prediction.
struct plan_entry {
  probe_point config;
  double seconds_per_iteration = 0;
  double startup_seconds = 0;  ///< predicted elapsed time at the warm-up iteration (0 without a start-up model)
  double iterations = std::numeric_limits<double>::infinity();  ///< ∞ when the target is unreachable
  double seconds = std::numeric_limits<double>::infinity();     ///< predicted time to the target
  double seconds_lo = std::numeric_limits<double>::quiet_NaN(); ///< bootstrap interval of `seconds`
  double seconds_hi = std::numeric_limits<double>::quiet_NaN();
  double reachable_share = 1;  ///< share of bootstrap refits in which the target was reachable
  bool reachable() const noexcept { return std::isfinite(seconds); }
};

namespace detail {
inline double percentile(std::vector<double> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto i = static_cast<std::size_t>(pos);
  const double f = pos - static_cast<double>(i);
  return i + 1 < v.size() ? v[i] * (1 - f) + v[i + 1] * f : v[i];
}
/// Seconds to iteration i: t·i, or with a start-up time S at iteration w: S·i/w before w, S + (i − w)·t after.
inline double seconds_to(double i, double t, double startup, double w) {
  if (w <= 0) return t * i;
  return i <= w ? startup * i / w : startup + (i - w) * t;
}
/// The run a point belongs to: its source up to the last ':' ("file:line"), else the whole source
/// (with `index` making sources without a run their own).
inline std::string run_of(const std::string& source, std::size_t index) {
  const auto colon = source.rfind(':');
  return colon == std::string::npos || colon == 0 ? source + "#" + std::to_string(index) : source.substr(0, colon);
}
/// The points of `v` grouped by run: `by_run[r]` lists the indices of run `runs[r]`'s points
/// (`runs` grows with the runs first seen here).
template <class T>
std::vector<std::vector<std::size_t>> group_by_run(const std::vector<T>& v, std::vector<std::string>& runs) {
  std::vector<std::vector<std::size_t>> by_run(runs.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto r = run_of(v[i].source, i);
    const auto at = static_cast<std::size_t>(std::find(runs.begin(), runs.end(), r) - runs.begin());
    if (at == runs.size()) runs.push_back(r);
    if (by_run.size() < runs.size()) by_run.resize(runs.size());
    by_run[at].push_back(i);
  }
  return by_run;
}
/// Every point of each drawn run (indices into the runs), as often as it was drawn.
template <class T>
std::vector<T> points_of_runs(const std::vector<T>& v, const std::vector<std::vector<std::size_t>>& by_run, const std::vector<std::size_t>& drawn) {
  std::vector<T> out;
  for (std::size_t r : drawn)
    if (r < by_run.size())
      for (std::size_t i : by_run[r]) out.push_back(v[i]);
  return out;
}
}  // namespace detail

/// Predicts time to `target` (a value of the convergence model's objective) for each candidate
/// and returns them fastest first (unreachable ones last, in candidate order). `startup`
/// (optional, with opt.warmup ≥ 1) predicts the elapsed time at iteration opt.warmup.
template <class SF, class CF>
std::vector<plan_entry> plan(const system_model<SF>& sys, const convergence_model<CF>& conv, std::span<const probe_point> candidates,
                             double target, const planner_options& opt = {}, const system_model<SF>* startup = nullptr) {
  if (!std::isfinite(target)) throw error(errc::bad_input, "plan: the target is not finite");
  if (startup && !(opt.warmup >= 1)) throw error(errc::bad_input, "plan: a start-up model needs planner_options::warmup >= 1");
  const double w = startup ? opt.warmup : 0.0;
  std::vector<plan_entry> out;
  for (const auto& c : candidates) {
    plan_entry e;
    e.config = c;
    e.seconds_per_iteration = sys.predict(c);
    e.startup_seconds = startup ? startup->predict(c) : 0.0;
    if (auto it = conv.iterations_to(target, c, opt.max_iterations)) {
      e.iterations = *it;
      e.seconds = detail::seconds_to(*it, e.seconds_per_iteration, e.startup_seconds, w);
    }
    out.push_back(e);
  }
  if (opt.bootstrap > 0) {
    std::mt19937_64 rng(opt.seed);
    std::vector<std::vector<double>> samples(out.size());
    std::vector<std::size_t> unreachable(out.size(), 0);
    std::size_t done = 0;
    std::vector<std::string> runs;
    const auto sys_runs = detail::group_by_run(sys.points(), runs);
    const auto conv_runs = detail::group_by_run(conv.points(), runs);
    const auto up_runs = startup ? detail::group_by_run(startup->points(), runs) : std::vector<std::vector<std::size_t>>{};
    std::uniform_int_distribution<std::size_t> pick(0, runs.size() - 1);
    std::vector<std::size_t> drawn(runs.size());
    for (std::size_t b = 0; b < opt.bootstrap; ++b) {
      try {
        for (auto& d : drawn) d = pick(rng);
        const auto s = system_model<SF>::fit(detail::points_of_runs(sys.points(), sys_runs, drawn), sys.options());
        const auto g = convergence_model<CF>::fit(detail::points_of_runs(conv.points(), conv_runs, drawn), conv.options());
        std::optional<system_model<SF>> u;
        if (startup) u = system_model<SF>::fit(detail::points_of_runs(startup->points(), up_runs, drawn), startup->options());
        for (std::size_t k = 0; k < out.size(); ++k) {
          if (auto it = g.iterations_to(target, out[k].config, opt.max_iterations))
            samples[k].push_back(detail::seconds_to(*it, s.predict(out[k].config), u ? u->predict(out[k].config) : 0.0, w));
          else
            ++unreachable[k];
        }
        ++done;
      } catch (const error&) {
        // A resample too degenerate to fit (too few distinct points): skip it.
      }
    }
    const double tail = (1 - opt.level) / 2;
    for (std::size_t k = 0; k < out.size(); ++k) {
      out[k].seconds_lo = detail::percentile(samples[k], tail);
      out[k].seconds_hi = detail::percentile(samples[k], 1 - tail);
      out[k].reachable_share = done ? 1.0 - static_cast<double>(unreachable[k]) / static_cast<double>(done) : 0.0;
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const plan_entry& a, const plan_entry& b) {
    if (a.reachable() != b.reachable()) return a.reachable();
    return a.reachable() && a.seconds < b.seconds;
  });
  return out;
}

/// A plan as JSON: an array of {"rank", "config", "seconds_per_iteration", "iterations", "seconds",
/// "seconds_lo", "seconds_hi", "reachable_share"} (unreachable: iterations and seconds null).
inline json_value to_json(const std::vector<plan_entry>& ranked) {
  json_value a = json_value::array();
  for (std::size_t k = 0; k < ranked.size(); ++k) {
    const auto& e = ranked[k];
    json_value o = json_value::object();
    o.set("rank", k + 1).set("config", to_json(e.config)).set("label", e.config.describe())
        .set("seconds_per_iteration", e.seconds_per_iteration).set("startup_seconds", e.startup_seconds).set("iterations", e.iterations).set("seconds", e.seconds)
        .set("seconds_lo", e.seconds_lo).set("seconds_hi", e.seconds_hi).set("reachable_share", e.reachable_share);
    a.push_back(std::move(o));
  }
  return a;
}

}  // namespace strata::cost
