#pragma once
/// \file Elastic m for any trainer: a run in segments of `every` iterations whose number of workers
/// changes between segments (Hemingway's named extension; Elastic CoCoA). Each segment is a new run
/// of a system with its m (the trainer's segment function makes it and carries the model from the
/// previous one); after each segment an elastic policy (cost/elastic.hpp) picks the next m from the
/// trace so far. The records are renumbered over the whole run and re-timed from its start; the
/// wall time a switch costs (between the segments, and the new segment's set-up and tear-down:
/// starting the workers, re-partitioning the data) is measured and added to the elapsed time when
/// `count_switches` (not for simulated runs, whose clock is the simulation's; the first segment's
/// set-up is not counted, as no fixed run's is).
///
///     ml::elastic_options eo{.workers = {1, 2, 4}, .every = 10};
///     cost::elastic_policy policy;
///     auto tr = ml::run_elastic<ml::mf_run>("mf elastic", eo, 200, policy, true, target_of, segment, on_iteration);
///     for (const auto& s : tr.segments) ... s.workers, s.first, s.last, s.switch_seconds, s.reason
#include <strata/core/clock.hpp>
#include <strata/core/error.hpp>
#include <strata/cost/adaptive.hpp>
#include <strata/cost/elastic.hpp>
#include <strata/cost/probe.hpp>
#include <trainers/run_stats.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace strata::ml {

/// Settings of an elastic run.
struct elastic_options {
  std::vector<std::uint32_t> workers;  ///< the candidate m; the first segment runs the largest
  std::uint32_t every = 10;            ///< iterations per segment (the last may be shorter)
  bool count_switches = true;          ///< add each switch's wall time to the trace (false: simulated runs)
};

/// One segment of an elastic run (iterations numbered over the whole run).
struct elastic_segment {
  std::uint32_t workers = 1, first = 1, last = 0;
  double switch_seconds = 0;  ///< wall time of the switch before it (0 for the first, and when switches are not counted)
  std::string reason;         ///< why the policy chose this m
};

/// What a segment function returns: its run (records numbered from 0, the state it started from,
/// or from 1; elapsed from its own start), the iterations it ran, and whether it reached the target.
template <class Run>
struct elastic_step {
  Run run;
  std::uint32_t iterations = 0;
  bool reached = false;
};

/// An elastic run's records, segments, and its last segment's run.
template <class Run>
struct elastic_outcome {
  std::vector<iteration_stats> iterations;
  std::vector<elastic_segment> segments;
  std::uint32_t iterations_run = 0;
  bool reached = false;
  double seconds = 0;  ///< wall time of the whole run
  std::uint64_t bytes_sent = 0;  ///< every segment's
  Run last;            ///< the last segment's run (its final model and sums)
};

/// What an elastic run adds to a trainer's outcome.
struct elastic_info {
  std::vector<elastic_segment> segments;
  std::uint32_t iterations_run = 0;
  bool reached = false;  ///< an iteration met the target
};

/// A trainer's elastic outcome `Out` (a Run and an elastic_info): the last segment's run with the
/// whole run's records, segments, wall time and bytes.
template <class Out, class Run>
Out elastic_result(elastic_outcome<Run>&& tr) {
  Out out;
  static_cast<Run&>(out) = std::move(tr.last);
  out.iterations = std::move(tr.iterations);
  out.segments = std::move(tr.segments);
  out.iterations_run = tr.iterations_run;
  out.reached = tr.reached;
  out.bytes_sent = tr.bytes_sent;
  out.seconds = tr.seconds;
  return out;
}

/// Runs segments until one reaches the target or `iterations` are done. `segment(m, done, count)`
/// runs `count` iterations after the first `done` with m workers, going on from the previous
/// segment's model; `target_of(trace)` is the value the policy follows toward (the metric when
/// `use_metric`, else the objective). `what` names the trainer in errors.
template <class Run, class Segment, class Target>
elastic_outcome<Run> run_elastic(const std::string& what, const elastic_options& eo, std::uint32_t iterations, cost::elastic_policy& policy,
                                 bool use_metric, Target&& target_of, Segment&& segment,
                                 const std::function<void(const iteration_stats&)>& on_iteration = {}) {
  using clock = strata::run_clock;  // in a simulated run, the simulation's (switches then cost nothing: count_switches false)
  auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  if (eo.workers.empty()) throw error(errc::bad_input, what + ": no candidate worker counts");
  if (eo.every == 0) throw error(errc::bad_input, what + ": segments of 0 iterations");
  std::vector<cost::probe_point> candidates;
  for (std::uint32_t m : eo.workers) {
    if (m == 0) throw error(errc::bad_input, what + ": a candidate of 0 workers");
    cost::probe_point p;
    p.workers = m;
    candidates.push_back(p);
  }
  elastic_outcome<Run> out;
  std::vector<cost::segment> segs;
  std::uint32_t m = *std::max_element(eo.workers.begin(), eo.workers.end());
  std::string reason = "start with the most workers";
  double offset = 0;
  const auto t_start = clock::now();
  auto last_end = t_start;
  while (out.iterations_run < iterations) {
    const std::uint32_t done = out.iterations_run;
    const std::uint32_t count = std::min(eo.every, iterations - done);
    const double gap_s = done > 0 ? since(last_end) : 0.0;
    const auto t_call = clock::now();
    elastic_step<Run> step = segment(m, done, count);
    last_end = clock::now();
    const double switch_s = eo.count_switches && done > 0 ? gap_s + std::max(0.0, since(t_call) - step.run.seconds) : 0.0;
    offset += switch_s;
    for (auto rec : step.run.iterations) {
      if (rec.iteration == 0 && done > 0) continue;
      rec.iteration += done;
      rec.elapsed_s += offset;
      for (auto& e : rec.worker_elapsed_s) e += offset;
      if (on_iteration) on_iteration(rec);
      out.iterations.push_back(std::move(rec));
    }
    if (!out.iterations.empty()) offset = out.iterations.back().elapsed_s;
    out.segments.push_back({m, done + 1, done + step.iterations, switch_s, reason});
    cost::segment sg;
    sg.config = candidates.front();
    sg.config.workers = m;
    sg.first = done + 1, sg.last = done + step.iterations, sg.reason = reason;
    segs.push_back(std::move(sg));
    out.iterations_run += step.iterations;
    out.bytes_sent += step.run.bytes_sent;
    out.reached = step.reached;
    out.last = std::move(step.run);
    if (out.reached || out.iterations_run >= iterations || step.iterations == 0) break;
    if (switch_s > 0) policy.switched(switch_s);
    cost::adaptive_input in;
    in.trace = out.iterations;
    in.segments = segs;
    in.candidates = candidates;
    in.use_metric = use_metric;
    in.target = target_of(out.iterations);
    const auto choice = policy.choose(in);
    m = static_cast<std::uint32_t>(choice.config.workers);
    reason = choice.reason;
  }
  out.seconds = since(t_start);
  return out;
}

}  // namespace strata::ml
