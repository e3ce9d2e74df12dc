#pragma once
/// \file Per-iteration statistics of a data-parallel trainer run, gathered from every worker
/// without any extra parameter-server traffic: each worker writes its own slot per iteration
/// (time, partial objective and metric, staleness histogram of its reads, blocking time), and the
/// worker that completes an iteration's last slot merges the slots and calls the progress
/// callback. Everything here is in-process (the trainers run all workers in one process).
#include <strata/core/ids.hpp>
#include <strata/runtime/worker.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace strata::ml {

/// One iteration of a run, merged over all workers.
struct iteration_stats {
  std::uint32_t iteration = 0;  ///< 0 = the initial state, i = after iteration (clock) i
  double elapsed_s = 0;         ///< seconds from the start until the slowest worker ended this iteration
                                ///< (evaluation time excluded)
  double objective = 0;         ///< the trainer's objective (MF: training loss, LDA: joint log-likelihood)
  double metric = 0;            ///< the named metric (MF: test RMSE, LDA: joint log-likelihood)
  std::map<std::int64_t, std::uint64_t> staleness;  ///< observed staleness of this iteration's reads -> count
  double wait_s = 0;            ///< seconds workers spent blocked in this iteration (summed over workers)
  std::uint64_t bytes_sent = 0; ///< transport bytes sent since the start, at the end of the iteration

  /// Number of reads recorded in the staleness histogram.
  std::uint64_t reads() const noexcept {
    std::uint64_t n = 0;
    for (auto [v, c] : staleness) n += c;
    return n;
  }
  /// Mean observed staleness (0 when there were no reads).
  double staleness_mean() const noexcept {
    double s = 0;
    std::uint64_t n = 0;
    for (auto [v, c] : staleness) s += static_cast<double>(v) * static_cast<double>(c), n += c;
    return n ? s / static_cast<double>(n) : 0.0;
  }
  /// Largest observed staleness (0 when there were no reads).
  std::int64_t staleness_max() const noexcept { return staleness.empty() ? 0 : staleness.rbegin()->first; }
};

/// Mean observed staleness over a set of iterations (weighted by reads).
inline double mean_staleness(const std::vector<iteration_stats>& its) {
  double s = 0;
  std::uint64_t n = 0;
  for (const auto& it : its)
    for (auto [v, c] : it.staleness) s += static_cast<double>(v) * static_cast<double>(c), n += c;
  return n ? s / static_cast<double>(n) : 0.0;
}

/// Collects per-worker, per-iteration slots. An iteration is complete when every worker has
/// delivered both its timing part (`end_iteration`) and its value part (`add_values`); then
/// `on_iteration` is called once, on the thread of the worker that completed it.
class run_recorder {
 public:
  using clock = std::chrono::steady_clock;

  run_recorder(std::uint32_t workers, std::uint32_t iterations, std::function<std::uint64_t()> bytes_sent,
               std::function<void(const iteration_stats&)> on_iteration)
      : P_(workers), N_(iterations), bytes_(std::move(bytes_sent)), on_iteration_(std::move(on_iteration)),
        slots_(std::size_t{workers} * (iterations + 1)), pending_(iterations + 1), last_hist_(workers),
        last_wait_(workers, 0.0), eval_s_(workers, 0.0) {
    for (auto& p : pending_) p.store(static_cast<int>(2 * workers));
  }

  /// Marks the start of the run (call before system::run).
  void start() { t0_ = clock::now(); }
  /// Seconds since start().
  double since_start() const { return std::chrono::duration<double>(clock::now() - t0_).count(); }

  /// Worker `w` has finished iteration `it` (call just before its clock()): records the time
  /// (minus the evaluation time charged so far), the reads and blocking of the iteration.
  void end_iteration(const worker& w, std::uint32_t it) {
    const worker_id p = w.id();
    slot& s = at(p, it);
    s.elapsed_s = since_start() - eval_s_[p];
    s.bytes_sent = bytes_ ? bytes_() : 0;
    const auto& bins = w.stats().staleness.bins();
    auto& last = last_hist_[p];
    for (auto [v, c] : bins) {
      const std::uint64_t before = last.count(v) ? last[v] : 0;
      if (c > before) s.staleness[v] = c - before;
    }
    last = bins;
    s.wait_s = w.stats().wait_s - last_wait_[p];
    last_wait_[p] = w.stats().wait_s;
    arrive(it);
  }
  /// Worker `w`'s partial objective and metric terms for iteration `it` (summed over workers).
  void add_values(worker_id w, std::uint32_t it, double objective, double metric_a, double metric_b = 0) {
    slot& s = at(w, it);
    s.objective = objective;
    s.metric_a = metric_a;
    s.metric_b = metric_b;
    arrive(it);
  }
  /// Charges `seconds` of evaluation to worker w: excluded from the elapsed times it records next.
  void charge_eval(worker_id w, double seconds) { eval_s_[w] += seconds; }

  /// How the merged metric is made from the summed parts (default: a + b).
  void set_metric(std::function<double(double, double)> f) { metric_ = std::move(f); }

  /// Every iteration merged (after the run; incomplete iterations are left out).
  std::vector<iteration_stats> iterations() const {
    std::vector<iteration_stats> out;
    for (std::uint32_t it = 0; it <= N_; ++it)
      if (pending_[it].load() == 0) out.push_back(merge(it));
    return out;
  }

 private:
  struct slot {
    double elapsed_s = 0, objective = 0, metric_a = 0, metric_b = 0, wait_s = 0;
    std::uint64_t bytes_sent = 0;
    std::map<std::int64_t, std::uint64_t> staleness;
  };
  slot& at(worker_id w, std::uint32_t it) { return slots_[std::size_t{it} * P_ + w]; }
  const slot& at(worker_id w, std::uint32_t it) const { return slots_[std::size_t{it} * P_ + w]; }
  void arrive(std::uint32_t it) {
    if (pending_[it].fetch_sub(1) == 1 && on_iteration_) {
      const auto st = merge(it);
      std::lock_guard lk(mu_);
      on_iteration_(st);
    }
  }
  iteration_stats merge(std::uint32_t it) const {
    iteration_stats r;
    r.iteration = it;
    double a = 0, b = 0;
    for (worker_id w = 0; w < P_; ++w) {
      const slot& s = at(w, it);
      r.elapsed_s = std::max(r.elapsed_s, s.elapsed_s);
      r.objective += s.objective;
      a += s.metric_a;
      b += s.metric_b;
      r.wait_s += s.wait_s;
      r.bytes_sent = std::max(r.bytes_sent, s.bytes_sent);
      for (auto [v, c] : s.staleness) r.staleness[v] += c;
    }
    r.metric = metric_ ? metric_(a, b) : a + b;
    return r;
  }

  std::uint32_t P_, N_;
  std::function<std::uint64_t()> bytes_;
  std::function<void(const iteration_stats&)> on_iteration_;
  std::function<double(double, double)> metric_;
  std::vector<slot> slots_;
  std::vector<std::atomic<int>> pending_;
  std::vector<std::map<std::int64_t, std::uint64_t>> last_hist_;  // per worker, touched by it only
  std::vector<double> last_wait_, eval_s_;                         // per worker, touched by it only
  std::mutex mu_;
  clock::time_point t0_ = clock::now();
};

/// Sends a request for row r now if the worker's cached copy is not fresh enough, without
/// waiting: issuing these for every row an iteration needs turns one round trip per row into
/// about one per iteration. (See worker::prefetch; it is not counted as a read.)
template <class R>
void prefetch(worker& w, table_handle<R> t, row_id r) {
  w.prefetch(t, r);
}

}  // namespace strata::ml
