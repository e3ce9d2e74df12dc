#pragma once
/// \file Adaptive mode of the trainers: every k iterations the run re-plans from its own trace with
/// an adaptive policy (cost/adaptive.hpp) and goes on with the staleness bound it picks, on the
/// same system and tables (a segmented run: train_mf_segments).
///
///     strata::basic_system<T> sys(cfg, strata::model_params::named("ssp", cfg), tc);
///     ml::adaptive_options ao{.every = 10, .staleness = {0, 1, 2, 4}};
///     strata::cost::refit_policy policy;
///     const auto res = ml::train_mf_adaptive(sys, train, test, options, ao, policy);
///     for (const auto& s : res.segments) ... s.first, s.last, s.config.staleness, s.reason
///
/// The consistency model must have a dynamic staleness bound (ssp or essp by name, or
/// ssp<dynamic_bound> / essp<dynamic_bound>). The first segment runs with the system's bound.
#include <strata/core/error.hpp>
#include <strata/cost/adaptive.hpp>
#include <strata/cost/probe.hpp>
#include <trainers/mf_trainer.hpp>
#include <trainers/run_stats.hpp>
#include <strata/runtime/system.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace strata::ml {

/// Settings of the adaptive mode.
struct adaptive_options {
  std::uint32_t every = 10;        ///< k: iterations per segment (the last one may be shorter)
  std::vector<int> staleness;      ///< candidate staleness bounds (empty: only the system's own)
  double target = std::numeric_limits<double>::quiet_NaN();  ///< the metric aimed at, for the policy (NaN: none)
};

/// A trainer's outcome with the segments it ran (their bounds and the policy's reasons).
template <class Run>
struct adaptive_run : Run {
  std::vector<cost::segment> segments;
};

/// The candidate configurations of a system: its shape and consistency model with each bound.
inline std::vector<cost::probe_point> adaptive_candidates(const system_base& sys, const std::vector<int>& staleness) {
  std::vector<cost::probe_point> out;
  auto add = [&](int s) {
    cost::probe_point p;
    p.workers = sys.config().nodes * sys.config().workers_per_node;
    p.consistency = sys.model().name;
    p.staleness = s;
    p.eager = p.consistency == "essp";
    p.bounded = true;
    out.push_back(std::move(p));
  };
  if (staleness.empty()) add(sys.model().staleness);
  for (int s : staleness) {
    if (s < 0) throw error(errc::bad_input, "adaptive: candidate staleness bound " + std::to_string(s) + " (want >= 0)");
    add(s);
  }
  return out;
}

/// The segment planner (mf_trainer.hpp's segment_planner) of an adaptive run: segments of
/// `ao.every` iterations; before each one after the first, `policy` chooses its configuration from
/// the trace so far and the system's bound is set to it. `segments` receives every segment.
template <cost::adaptive_policy Policy>
segment_planner adaptive_planner(system_base& sys, const adaptive_options& ao, Policy& policy, std::vector<cost::segment>& segments,
                                 bool maximise = false) {
  if (ao.every == 0) throw error(errc::bad_input, "adaptive: segments of 0 iterations");
  if (!sys.model().dynamic_staleness)
    throw error(errc::bad_input, std::string("adaptive: the consistency model ") + sys.model().name +
                                     " has no dynamic staleness bound (use ssp or essp)");
  auto candidates = adaptive_candidates(sys, ao.staleness);
  return [&sys, &policy, &segments, ao, maximise, candidates = std::move(candidates)](const std::vector<iteration_stats>& trace,
                                                                                      std::uint32_t done) -> std::uint32_t {
    cost::probe_point next = adaptive_candidates(sys, {sys.model().staleness}).back();
    std::string reason = "initial";
    if (done > 0) {
      cost::adaptive_input in;
      in.trace = trace;
      in.segments = segments;
      in.candidates = candidates;
      in.maximise = maximise;
      in.target = ao.target;
      cost::adaptive_choice c = policy.choose(in);
      next = std::move(c.config);
      reason = std::move(c.reason);
      if (!(next.staleness >= 0) || next.staleness != std::floor(next.staleness))
        throw error(errc::bad_input, "adaptive: the policy chose staleness " + std::to_string(next.staleness) + " (want an integer >= 0)");
      if (static_cast<int>(next.staleness) != sys.model().staleness) sys.set_staleness(static_cast<int>(next.staleness));
    }
    cost::segment s;
    s.config = std::move(next);
    s.first = done + 1;
    s.last = done + ao.every;  // trimmed by the caller's iteration count below
    s.reason = std::move(reason);
    segments.push_back(std::move(s));
    return ao.every;
  };
}

/// MF in adaptive mode (see the file comment): train_mf_segments with adaptive_planner. Segments
/// are `ao.every` iterations (the last one what is left).
template <cost::adaptive_policy Policy>
adaptive_run<mf_run> train_mf_adaptive(system_base& sys, const io::rating_set& train, const io::rating_set& test,
                                       const mf_trainer_options& o, const adaptive_options& ao, Policy& policy,
                                       std::function<void(const iteration_stats&)> on_iteration = {}) {
  adaptive_run<mf_run> out;
  auto plan = adaptive_planner(sys, ao, policy, out.segments);
  segment_planner trimmed = [&](const std::vector<iteration_stats>& trace, std::uint32_t done) {
    const std::uint32_t n = std::min(plan(trace, done), o.iterations - done);
    out.segments.back().last = done + n;
    return n;
  };
  static_cast<mf_run&>(out) = train_mf_segments(sys, train, test, o, trimmed, std::move(on_iteration));
  return out;
}

}  // namespace strata::ml
