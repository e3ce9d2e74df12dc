#pragma once
/// \file An adaptive policy over the number of workers m (an elastic run: Hemingway's named
/// extension; Elastic CoCoA, Kaufmann et al. 2018). It satisfies `adaptive_policy`
/// (cost/adaptive.hpp): after each segment it sees the run's own trace and segments and picks the
/// next segment's m among the candidates (probe_point::workers), refitting on the trace only:
///
/// - time per round of each m: measured on m's latest segment (its second record to its last, so
///   the segment's start is left out); for an m never run, t(m) = θ0 + θ1/m (θ >= 0, NNLS: the
///   serial part and the part split among the workers) once two m have been timed, else the
///   current m's time scaled by m_cur/m (pure compute);
/// - progress per round: the followed value (the duality gap, whose optimum is 0) falls linearly
///   in log per round, at a rate ρ(m) = −Δ log f / Δ round measured on m's latest segment; for an
///   m never run, ρ(m) = a + b/m (a, b >= 0, NNLS: CoCoA+'s rate, cost/convergence_model.hpp's
///   with_rate_per_worker) once two m have been seen, else the current rate times m_cur/m for a
///   larger m (σ' = m damps steps: the worst case) and the current rate for a smaller one;
/// - for each candidate, the seconds to bring f from its last value to the target:
///   (log f − log target) / ρ(m) · t(m), plus the time the last switch of m took (re-partitioning
///   and restarting the workers) when m changes. It keeps the current m unless another is
///   predicted faster by more than `margin`.
/// - exploration: until two distinct m have been run, it picks the next smaller candidate (scaling
///   in, as Elastic CoCoA: start wide, where rounds are cheap, and shrink as progress per round
///   starts to matter).
///
/// Bad input: check_adaptive_input's, a followed value <= 0 (the logarithm), and no finite target.
#include <strata/core/error.hpp>
#include <strata/cost/adaptive.hpp>
#include <strata/cost/nnls.hpp>
#include <strata/cost/probe.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace strata::cost {

/// How elastic_policy decides (see the file comment).
struct elastic_options {
  double margin = 0.05;        ///< switch only when another m is predicted this much faster
  double switch_seconds = 0;   ///< what changing m costs, until a switch has been timed (then the last one's)
};

class elastic_policy {
 public:
  explicit elastic_policy(elastic_options o = {}) : o_(o) {}

  /// The seconds the last change of m took (the trainer reports it after each switch).
  void switched(double seconds) { o_.switch_seconds = seconds; }

  adaptive_choice choose(const adaptive_input& in) const {
    check_adaptive_input(in);
    if (!(in.target > 0) || !std::isfinite(in.target)) throw error(errc::bad_input, "elastic: the target must be finite and > 0");
    const segment& cur = in.segments.back();
    std::map<double, seen_m> seen;  // by m, from each m's latest segment
    for (const auto& s : in.segments) {
      auto m = measure(in, s);
      if (m.rounds >= 2) seen[s.config.workers] = m;
    }
    const double f_now = value(in, in.trace.back());
    if (!(f_now > 0)) throw error(errc::bad_input, "elastic: the followed value is not > 0 (a gap of 0 is done; log is undefined)");
    if (seen.size() < 2) {  // explore: the next smaller candidate
      const probe_point* next = nullptr;
      for (const auto& c : in.candidates)
        if (c.workers < cur.config.workers && (!next || c.workers > next->workers)) next = &c;
      if (next) return {*next, "explore: scale in from m=" + num(cur.config.workers) + " to m=" + num(next->workers), {}};
    }
    const auto t_fit = fit_inverse(seen, [](const seen_m& s) { return s.seconds_per_round; });
    const auto r_fit = fit_inverse(seen, [](const seen_m& s) { return s.rate; });
    const seen_m* now = seen.count(cur.config.workers) ? &seen.at(cur.config.workers) : nullptr;
    adaptive_choice best;
    double best_s = std::numeric_limits<double>::infinity(), cur_s = best_s;
    const double need = std::log(f_now) - std::log(in.target);
    for (const auto& c : in.candidates) {
      adaptive_estimate e;
      e.config = c;
      const double m = c.workers;
      if (auto it = seen.find(m); it != seen.end()) {
        e.seconds_per_iteration = it->second.seconds_per_round, e.rate = it->second.rate, e.timed = true;
      } else {
        e.seconds_per_iteration = t_fit ? (*t_fit)[0] + (*t_fit)[1] / m : (now ? now->seconds_per_round * cur.config.workers / m : NAN);
        e.rate = r_fit ? (*r_fit)[0] + (*r_fit)[1] / m
                       : (now ? (m > cur.config.workers ? now->rate * cur.config.workers / m : now->rate) : NAN);
      }
      e.iterations = need <= 0 ? 0.0 : (e.rate > 0 ? need / e.rate : std::numeric_limits<double>::infinity());
      e.seconds = e.iterations * e.seconds_per_iteration + (m == cur.config.workers ? 0.0 : o_.switch_seconds);
      if (!std::isfinite(e.seconds)) e.seconds = std::numeric_limits<double>::infinity();
      if (m == cur.config.workers) cur_s = e.seconds;
      if (e.seconds < best_s) best_s = e.seconds, best.config = c;
      best.estimates.push_back(e);
    }
    if (!(best_s < std::numeric_limits<double>::infinity()) || best.config.workers == cur.config.workers || !(best_s < (1 - o_.margin) * cur_s)) {
      best.config = cur.config;
      best.reason = "keep m=" + num(cur.config.workers) + " (predicted " + secs(cur_s) + " to the target; no m more than " +
                    num(100 * o_.margin) + "% faster)";
      return best;
    }
    best.reason = "m=" + num(best.config.workers) + ": predicted " + secs(best_s) + " to the target against " + secs(cur_s) + " at m=" +
                  num(cur.config.workers);
    return best;
  }

 private:
  struct seen_m {
    double seconds_per_round = 0, rate = 0;
    std::uint32_t rounds = 0;
  };
  static double value(const adaptive_input& in, const iteration_record& r) { return in.use_metric ? r.metric : r.objective; }
  /// Time per round and rate of segment s, from its second record to its last.
  static seen_m measure(const adaptive_input& in, const segment& s) {
    const iteration_record *a = nullptr, *b = nullptr;
    for (const auto& r : in.trace)
      if (r.iteration > s.first && r.iteration <= s.last) {
        if (!a) a = &r;
        b = &r;
      }
    seen_m out;
    if (!a || a == b || !(value(in, *a) > 0) || !(value(in, *b) > 0)) return out;
    const double n = static_cast<double>(b->iteration - a->iteration);
    out.seconds_per_round = (b->elapsed_s - a->elapsed_s) / n;
    out.rate = (std::log(value(in, *a)) - std::log(value(in, *b))) / n;
    out.rounds = b->iteration - a->iteration + 1;
    return out;
  }
  /// y(m) = θ0 + θ1/m, θ >= 0 by NNLS over the m seen; nullopt with fewer than two m.
  template <class Get>
  static std::optional<std::vector<double>> fit_inverse(const std::map<double, seen_m>& seen, Get get) {
    if (seen.size() < 2) return std::nullopt;
    xt::xtensor<double, 2> A = xt::zeros<double>({seen.size(), std::size_t{2}});
    xt::xtensor<double, 1> y = xt::zeros<double>({seen.size()});
    std::size_t i = 0;
    for (const auto& [m, s] : seen) A(i, 0) = 1.0, A(i, 1) = 1.0 / m, y(i) = get(s), ++i;
    const auto r = nnls(A, y);
    return std::vector<double>{r.x(0), r.x(1)};
  }
  static std::string num(double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", x);
    return b;
  }
  static std::string secs(double s) { return std::isfinite(s) ? num(s) + " s" : std::string("never"); }

  elastic_options o_;
};

static_assert(adaptive_policy<elastic_policy>);

}  // namespace strata::cost
