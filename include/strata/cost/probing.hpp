#pragma once
/// \file The planner as one library call: `cost::plan(program, probe_grid, candidates, target,
/// options)` runs short probes of a program within a time budget, fits the system and convergence
/// models from their traces, and ranks the candidate configurations by predicted time to the
/// target, with bootstrap intervals. `strata_plan` is this call with a command line around it.
///
///     auto run = [&](const strata::cost::probe_point& p, std::uint32_t iterations) {
///       return my_trace_of(p, iterations);  // a cost::run_trace: the run's records and p
///     };
///     const auto r = strata::cost::plan<SystemF, ConvergenceF>(run, probe_grid, candidates, target, {.budget_s = 30});
///     for (const auto& e : r.ranked) ...  e.config.describe(), e.seconds, e.seconds_lo, e.seconds_hi
///
/// The probes: the cheapest candidate of the grid first (by s/min(m, cores): it prices the rest),
/// then, one at a time, the A-optimal design (cost/design.hpp) spends what is left of the budget,
/// pricing candidates by the calibration scaled by s/min(m, cores) until the system model can be
/// fitted, then by the models fitted so far (sequential design). A budget too small for the system
/// model still runs the probes it needs (`in_budget` says how many the budget bought). With a known
/// optimum (convergence_fit_options::optimum), progress points below 1e-12 of a probe's first value
/// above it are dropped as rounding (a numerical floor would dominate the fit's logarithms).
#include <strata/core/error.hpp>
#include <strata/cost/convergence_model.hpp>
#include <strata/cost/design.hpp>
#include <strata/cost/planner.hpp>
#include <strata/cost/probe.hpp>
#include <strata/cost/system_model.hpp>
#include <strata/cost/trace_fit.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace strata::cost {

/// Settings of plan(program, ...).
struct probing_options {
  double budget_s = 30;                   ///< seconds of probe runs (wall time of the program's calls)
  std::uint32_t probe_iterations = 10;    ///< iterations per probe
  /// How the traces are read (quantity, cores, warm-up: at least 1, the iteration the start-up
  /// model times; the time per iteration is measured from there).
  trace_fit_options fit{};
  convergence_fit_options convergence{};  ///< the optimum (NaN: estimated) and its lower bound
  planner_options planner{};              ///< bootstrap, level, seed, max_iterations (warmup: from fit)
  double target_quantile = 0;             ///< with a NaN target: this quantile of the probes' last values
};

/// What plan(program, ...) found: the probes, the fitted models and the ranking.
template <class SF, class CF>
struct probing_result {
  std::vector<run_trace> probes;
  std::vector<timing_point> timings;       ///< one per probe
  std::optional<system_model<SF>> system, startup;
  std::optional<convergence_model<CF>> convergence;
  std::vector<plan_entry> ranked;
  double probe_seconds = 0;
  std::size_t in_budget = 0;               ///< probes the budget bought (the rest: needed to fit)
  double target = 0;                       ///< the target ranked against (the given one, or the quantile's)
};

/// A program of the planner: runs a configuration for some iterations and returns its trace.
template <class P>
concept probe_program = requires(P& p, const probe_point& c, std::uint32_t iterations) {
  { p(c, iterations) } -> std::convertible_to<run_trace>;
};

/// The second half of plan(): fits the models on probe runs already made (by plan(), or read back
/// from their trace files: strata_plan --refit) and ranks the candidates. The same rules: a NaN
/// target is the target_quantile of the probes' last values; points at the numerical floor are
/// left out.
template <class SF, class CF>
probing_result<SF, CF> fit_and_rank(std::vector<run_trace> probes, std::span<const probe_point> candidates, double target,
                                    const probing_options& o) {
  if (probes.size() < SF::size)
    throw error(errc::bad_input, "plan: " + std::to_string(probes.size()) + " probe runs; the system model needs at least " +
                                     std::to_string(SF::size));
  if (std::isinf(target)) throw error(errc::bad_input, "plan: the target is not finite");
  if (o.fit.warmup < 1) throw error(errc::bad_input, "plan: fit.warmup must be >= 1 (the iteration the start-up model times)");
  probing_result<SF, CF> r;
  r.probes = std::move(probes);
  std::vector<timing_point> starts;
  for (const auto& t : r.probes) r.timings.push_back(timing_of(t, o.fit)), starts.push_back(startup_of(t, o.fit));
  std::vector<progress_point> pp;
  std::vector<double> finals;
  for (const auto& t : r.probes) {
    auto prog = progress_of(t);
    const double opt = o.convergence.optimum;
    if (std::isfinite(opt) && !prog.empty()) {
      const double first = prog.front().value - opt;
      std::erase_if(prog, [&](const progress_point& p) { return p.value - opt < 1e-12 * first; });
    }
    if (prog.empty()) throw error(errc::bad_input, t.file + ": every point is at the numerical floor (1e-12 of the first value above the optimum)");
    finals.push_back(prog.back().value);
    for (auto& p : prog) pp.push_back(std::move(p));
  }
  if (std::isnan(target)) {
    std::sort(finals.begin(), finals.end());
    target = finals[static_cast<std::size_t>(std::clamp(o.target_quantile, 0.0, 1.0) * static_cast<double>(finals.size() - 1))];
  }
  r.target = target;
  r.system = system_model<SF>::fit(r.timings);
  r.startup = system_model<SF>::fit(starts);
  r.convergence = convergence_model<CF>::fit(pp, o.convergence);
  auto po = o.planner;
  po.warmup = static_cast<double>(o.fit.warmup);
  r.ranked = plan(*r.system, *r.convergence, candidates, target, po, &*r.startup);
  return r;
}

/// See the file comment. A NaN target is the `target_quantile` of the probes' last values (a value
/// the probes reached, so one the fit can see). Throws strata::error(bad_input) for a grid smaller
/// than the system model's terms, an infinite target, a budget not > 0, and what the fits refuse.
template <class SF, class CF, probe_program Program>
probing_result<SF, CF> plan(Program&& program, std::vector<probe_point> grid, std::span<const probe_point> candidates, double target,
                            const probing_options& o) {
  if (!(o.budget_s > 0) || !std::isfinite(o.budget_s)) throw error(errc::bad_input, "plan: the budget must be finite and > 0 seconds");
  if (std::isinf(target)) throw error(errc::bad_input, "plan: the target is not finite");
  if (grid.size() < SF::size)
    throw error(errc::bad_input, "plan: " + std::to_string(grid.size()) + " probe candidates; the system model needs at least " +
                                     std::to_string(SF::size));
  if (o.fit.warmup < 1) throw error(errc::bad_input, "plan: fit.warmup must be >= 1 (the iteration the start-up model times)");
  if (o.probe_iterations < o.fit.warmup + 2) throw error(errc::bad_input, "plan: probe_iterations must be at least fit.warmup + 2");
  using clock = std::chrono::steady_clock;
  const auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  const std::uint32_t N = o.probe_iterations, W = o.fit.warmup;
  probing_result<SF, CF> r;
  std::vector<probe_point> made;
  std::vector<timing_point> starts;
  const auto t0 = clock::now();
  auto probe = [&](std::size_t k) {
    r.probes.push_back(program(grid[k], N));
    r.timings.push_back(timing_of(r.probes.back(), o.fit));
    starts.push_back(startup_of(r.probes.back(), o.fit));
    made.push_back(grid[k]);
    grid.erase(grid.begin() + static_cast<std::ptrdiff_t>(k));
  };
  const auto work = [](const probe_point& p) { return p.scale / std::min(p.workers, p.cores > 0 ? p.cores : p.workers); };
  const auto cheapest = static_cast<std::size_t>(
      std::min_element(grid.begin(), grid.end(), [&](const auto& a, const auto& b) { return work(a) < work(b); }) - grid.begin());
  const probe_point calib = grid[cheapest];
  probe(cheapest);
  const double calib_s = since(t0);
  const double setup_s = std::max(0.0, calib_s - starts[0].seconds_per_iteration - r.timings[0].seconds_per_iteration * (N - W));
  while (!grid.empty()) {
    std::function<double(const probe_point&)> price = [&](const probe_point& p) { return calib_s * std::max(0.5, work(p) / work(calib)); };
    if (r.probes.size() > SF::size)
      price = [=, sys = system_model<SF>::fit(r.timings), up = system_model<SF>::fit(starts)](const probe_point& p) {
        return std::max(1e-3, setup_s + up.predict(p) + sys.predict(p) * (N - W));
      };
    const auto design = a_optimal_design<SF>(grid, price, {.budget = o.budget_s - since(t0)}, made);
    if (design.chosen.empty()) break;
    probe(design.chosen.front());
  }
  r.in_budget = r.probes.size();
  while (r.probes.size() <= SF::size && !grid.empty()) probe(0);  // too small a budget: enough to fit
  r.probe_seconds = since(t0);

  auto fitted = fit_and_rank<SF, CF>(std::move(r.probes), candidates, target, o);
  fitted.in_budget = r.in_budget;
  fitted.probe_seconds = r.probe_seconds;
  return fitted;
}

}  // namespace strata::cost
