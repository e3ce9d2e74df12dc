#pragma once
/// \file Per-iteration statistics of a data-parallel trainer run, gathered from every worker
/// without any parameter-server traffic during the run: each worker writes its own slot per iteration
/// (time, partial objective and metric, staleness histogram of its reads, blocking time), and the
/// worker that completes an iteration's last slot merges the slots and calls the progress
/// callback. The recorder sees only the workers of its own process; `run_reducer` then brings
/// every worker's slots (and a trainer's final partial sums) together through the parameter server
/// runtime's collectives, so the merged statistics are the same whether the workers share one process or not.
#include <strata/core/clock.hpp>
#include <strata/consistency/model.hpp>
#include <strata/core/error.hpp>
#include <strata/core/ids.hpp>
#include <strata/core/trace.hpp>
#include <strata/runtime/task.hpp>
#include <strata/runtime/worker.hpp>
#include <strata/table/dense_row.hpp>
#include <strata/table/table.hpp>

#include <algorithm>
#include <ranges>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace strata::ml {

/// One iteration of a run, merged over all workers: the library's trace record
/// (core/trace.hpp), which also keeps every worker's own elapsed time.
using iteration_stats = iteration_record;
using ::strata::mean_staleness;

/// What every trainer's outcome holds besides its own figures.
struct run_outcome {
  std::vector<iteration_stats> iterations;  ///< [0] = the initial state, [i] = after iteration i
  double seconds = 0;                       ///< wall time of system::run (in this process)
  worker_stats stats;                       ///< this process's workers' statistics merged (all workers inproc)
  std::uint64_t bytes_sent = 0;             ///< transport bytes until the last iteration, all processes
};

/// The settings every trainer shares.
struct run_options {
  std::uint32_t iterations = 20;  ///< clocks after the initial state
  std::uint64_t seed = 1;         ///< every random choice of the run derives from it
  bool prefetch = true;           ///< request an iteration's rows together rather than one at a time
  bool keep_model = false;        ///< gather the final model into the outcome (in the process of worker 0)
  /// 0: every iteration's objective and metric are each worker's share computed from its own view
  /// (cheap, but stale under SSP/ESSP/VAP/async). k > 0: the true model's, from a consistent
  /// snapshot of the tables (snapshot_begin / snapshot_end), after every k-th iteration and the
  /// last; the other iterations' objective and metric are NaN (`null` in the trace).
  std::uint32_t eval_every = 0;
  /// True when iteration `it` of `last` is evaluated on a snapshot.
  bool snapshot_due(std::uint32_t it, std::uint32_t last) const noexcept {
    return eval_every > 0 && (it % eval_every == 0 || it == last);
  }
};

/// Opens a consistent snapshot of the tables for evaluation: every worker's increments so far are
/// applied (worker::barrier) and cached rows dropped, and the worker's statistics are paused. Every
/// worker must call it, then read what it evaluates, then `snapshot_end` (a second meeting, so no
/// worker's next increments reach a shard while another still reads the snapshot). The time from
/// snapshot_begin's return to snapshot_end's belongs to the evaluation (charge it with
/// run_recorder::charge_eval); the meeting in snapshot_begin does not: it is the wait for the
/// other workers' clocks and the flush of this one's increments, which the next iteration's
/// reads would have waited for without an evaluation (under BSP, at every clock).
inline task<worker::stats_mark> snapshot_begin(worker& w) {
  auto mark = w.pause_stats();
  co_await w.barrier();
  co_return mark;
}
/// Closes the snapshot opened by snapshot_begin, drops the rows its reads cached (the next
/// iteration fetches its rows itself, as it would have without the evaluation) and resumes the
/// worker's statistics.
inline task<> snapshot_end(worker& w, worker::stats_mark mark) {
  (void)co_await w.all_gather(std::uint8_t{0});
  w.drop_cached_rows();
  w.resume_stats(mark);
}

/// Collects per-worker, per-iteration slots of this process's workers (`workers` of them, global
/// ids first .. first + workers - 1). An iteration is complete when every one of them has
/// delivered both its timing part (`end_iteration`) and its value part (`add_values`); then
/// `on_iteration` is called once, on the thread of the worker that completed it, with the merge
/// of this process's workers (all workers when the run is in one process).
class run_recorder {
 public:
  using clock = strata::run_clock;

  /// One worker's part of one iteration.
  struct part {
    double elapsed_s = 0, objective = 0, metric_a = 0, metric_b = 0, wait_s = 0;
    std::uint64_t bytes_sent = 0;
    std::map<std::int64_t, std::uint64_t> staleness, writer_staleness;
    template <class Ar>
    void serialize(Ar& ar) { ar(elapsed_s, objective, metric_a, metric_b, wait_s, bytes_sent, staleness, writer_staleness); }
  };

  run_recorder(std::uint32_t workers, std::uint32_t iterations, std::function<std::uint64_t()> bytes_sent,
               std::function<void(const iteration_stats&)> on_iteration, worker_id first = 0)
      : P_(workers), first_(first), N_(iterations), bytes_(std::move(bytes_sent)), on_iteration_(std::move(on_iteration)),
        slots_(std::size_t{workers} * (iterations + 1)), pending_(iterations + 1), last_hist_(workers), last_whist_(workers),
        last_wait_(workers, 0.0), eval_s_(workers, 0.0) {
    for (auto& p : pending_) p.store(static_cast<int>(2 * workers));
  }

  /// Marks the start of the run (call before system::run).
  void start() { t0_ = clock::now(); }
  /// Marks the start again, once, from the first worker program that calls it (so the time a
  /// transport spends connecting to its peers is not counted); the others wait for that call.
  void start_once() {
    std::call_once(started_, [this] { t0_ = clock::now(); });
  }
  /// When the run started (start() or start_once()).
  clock::time_point start_time() const noexcept { return t0_; }
  /// Seconds since start().
  double since_start() const { return std::chrono::duration<double>(clock::now() - t0_).count(); }

  /// Worker `w` has finished iteration `it` (call just before its clock()): records the time
  /// (minus the evaluation time charged so far), the reads and blocking of the iteration.
  void end_iteration(const worker& w, std::uint32_t it) {
    const worker_id p = w.id();
    slot& s = at(p, it);
    s.elapsed_s = since_start() - eval_s_[p - first_];
    s.bytes_sent = bytes_ ? bytes_() : 0;
    const auto& st = w.stats();
    auto delta = [](std::map<std::int64_t, std::uint64_t> bins, std::map<std::int64_t, std::uint64_t>& last,
                    std::map<std::int64_t, std::uint64_t>& into) {
      for (auto [v, c] : bins) {
        const std::uint64_t before = last.count(v) ? last[v] : 0;
        if (c > before) into[v] = c - before;
      }
      last = std::move(bins);
    };
    delta(st.min_clock_staleness.bins(), last_hist_[p - first_], s.staleness);
    delta(st.writer_staleness.bins(), last_whist_[p - first_], s.writer_staleness);
    s.wait_s = w.stats().wait_s - last_wait_[p - first_];
    last_wait_[p - first_] = w.stats().wait_s;
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
  void charge_eval(worker_id w, double seconds) { eval_s_[w - first_] += seconds; }

  /// How the merged metric is made from the summed parts (default: a + b), and its name in the trace.
  void set_metric(std::function<double(double, double)> f, std::string name = {}) {
    metric_ = std::move(f);
    metric_name_ = std::move(name);
  }
  /// The metric's name in the trace (set_metric).
  void set_metric_name(std::string name) { metric_name_ = std::move(name); }

  /// Worker w's (a local worker's) part of iteration `it`; read it on w's thread or after the run.
  const part& part_of(worker_id w, std::uint32_t it) const { return at(w, it); }
  std::uint32_t iterations_planned() const noexcept { return N_; }

  /// Every iteration merged over this process's workers (after the run; incomplete iterations are left out).
  std::vector<iteration_stats> iterations() const {
    std::vector<iteration_stats> out;
    for (std::uint32_t it = 0; it <= N_; ++it)
      if (pending_[it].load() == 0) out.push_back(merge(it));
    return out;
  }

 private:
  using slot = part;
  slot& at(worker_id w, std::uint32_t it) { return slots_[std::size_t{it} * P_ + (w - first_)]; }
  const slot& at(worker_id w, std::uint32_t it) const { return slots_[std::size_t{it} * P_ + (w - first_)]; }
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
    r.metric_name = metric_name_;
    r.worker_elapsed_s.reserve(P_);
    double a = 0, b = 0;
    for (worker_id w = first_; w < first_ + P_; ++w) {
      const slot& s = at(w, it);
      r.elapsed_s = std::max(r.elapsed_s, s.elapsed_s);
      r.worker_elapsed_s.push_back(s.elapsed_s);
      r.objective += s.objective;
      a += s.metric_a;
      b += s.metric_b;
      r.wait_s += s.wait_s;
      r.bytes_sent = std::max(r.bytes_sent, s.bytes_sent);
      for (auto [v, c] : s.staleness) r.staleness[v] += c;
      for (auto [v, c] : s.writer_staleness) r.writer_staleness[v] += c;
    }
    r.metric = metric_ ? metric_(a, b) : a + b;
    return r;
  }

  std::uint32_t P_;
  worker_id first_;
  std::uint32_t N_;
  std::function<std::uint64_t()> bytes_;
  std::function<void(const iteration_stats&)> on_iteration_;
  std::function<double(double, double)> metric_;
  std::string metric_name_;
  std::vector<slot> slots_;
  std::vector<std::atomic<int>> pending_;
  std::vector<std::map<std::int64_t, std::uint64_t>> last_hist_, last_whist_;  // per worker, touched by it only
  std::vector<double> last_wait_, eval_s_;                         // per worker, touched by it only
  std::mutex mu_;
  std::once_flag started_;
  clock::time_point t0_ = clock::now();
};

/// Brings a run's results together with the runtime's collectives, from inside the worker
/// program, so that a trainer gives the same figures whether its workers share one process
/// (inproc) or live in several (tcp): a run_recorder sees only its own process's workers.
///
/// The tail of a worker program:
///
///     co_await red.settle(w);                 // every worker's updates are in every read from here on
///     ... read the final rows, compute this worker's final partial sums ...
///     co_await red.publish(w, rec, partials); // all-gathers every worker's per-iteration parts and partials
///     if (red.collects(w)) co_await red.collect(w, metric);  // one worker per process merges them
///
/// `settle` is `worker::barrier()`: every worker arrives, each one's increments made before it are
/// applied at their shards (under BSP: those of clocks every worker has completed, which at the end
/// of a run is all of them), and cached rows are dropped, so later reads see the final values.
class run_reducer {
 public:
  template <class System>
  run_reducer(System& sys, std::uint32_t iterations, std::size_t final_width)
      : nodes_(sys.config().nodes), wpn_(sys.config().workers_per_node), P_(nodes_ * wpn_), N_(iterations),
        final_width_(final_width) {
    bool any = false;
    all_local_ = true;
    for (node_id n = 0; n < nodes_; ++n) {
      const bool local = sys.is_local(n);
      if (local && !any) first_local_ = n * wpn_, any = true;
      if (local) local_count_ += wpn_;
      all_local_ = all_local_ && local;
    }
  }

  /// The first global worker id of this process and how many workers it hosts (local nodes are
  /// contiguous: all of them in one process, one per process over tcp).
  worker_id first_local() const noexcept { return first_local_; }
  std::uint32_t local_workers() const noexcept { return local_count_; }
  /// True when every node is in this process.
  bool single_process() const noexcept { return all_local_; }

  /// See the class comment. Every worker of the run must call it the same number of times.
  task<> settle(worker& w) { co_await w.barrier(); }

  /// Every worker's per-iteration parts (from the recorder of its process) and final partial sums
  /// (`final_values`, at most final_width of them), gathered on every worker; the collecting
  /// worker of each process keeps them for `collect`. Every worker must call it.
  task<> publish(worker& w, const run_recorder& rec, std::span<const double> final_values) {
    report mine;
    mine.parts.reserve(N_ + 1);
    for (std::uint32_t it = 0; it <= N_; ++it) mine.parts.push_back(rec.part_of(w.id(), it));
    mine.finals.assign(final_values.begin(), final_values.begin() + static_cast<std::ptrdiff_t>(std::min(final_values.size(), final_width_)));
    auto all = co_await w.all_gather(mine);
    if (collects(w)) reports_ = std::move(all);
  }

  /// True for the one worker per process that should `collect`.
  bool collects(const worker& w) const noexcept { return w.id() == first_local_; }

  /// Merges what `publish` gathered into `iterations()` and `final_values()`; `metric(a, b)` makes
  /// the metric from the summed metric parts, `metric_name` names it in the trace. Every
  /// worker's own elapsed time is kept (iteration_record::worker_elapsed_s, by worker id). (A
  /// coroutine for the trainers' tails; it does not wait.)
  task<> collect(worker&, const std::function<double(double, double)>& metric, std::string metric_name = {}) {
    iterations_.clear();
    for (std::uint32_t it = 0; it <= N_; ++it) {
      iteration_stats st;
      st.iteration = it;
      st.metric_name = metric_name;
      st.worker_elapsed_s.assign(P_, 0.0);
      double a = 0, b = 0, bytes = 0;
      for (node_id n = 0; n < nodes_; ++n) {
        double node_bytes = 0;
        for (std::uint32_t i = 0; i < wpn_; ++i) {
          const auto& s = reports_.at(n * wpn_ + i).parts.at(it);
          st.elapsed_s = std::max(st.elapsed_s, s.elapsed_s);
          st.worker_elapsed_s[n * wpn_ + i] = s.elapsed_s;
          st.objective += s.objective;
          a += s.metric_a;
          b += s.metric_b;
          st.wait_s += s.wait_s;
          for (auto [v, c] : s.staleness) st.staleness[v] += c;
          for (auto [v, c] : s.writer_staleness) st.writer_staleness[v] += c;
          node_bytes = std::max(node_bytes, static_cast<double>(s.bytes_sent));
        }
        // One transport per process: in one process every worker reports the same counter.
        bytes = all_local_ ? std::max(bytes, node_bytes) : bytes + node_bytes;
      }
      st.metric = metric ? metric(a, b) : a + b;
      st.bytes_sent = static_cast<std::uint64_t>(bytes);
      iterations_.push_back(std::move(st));
    }
    final_.assign(final_width_, 0.0);
    for (const auto& r : reports_)
      for (std::size_t i = 0; i < r.finals.size() && i < final_width_; ++i) final_[i] += r.finals[i];
    collected_ = true;
    co_return;
  }

  /// After the run: every worker's statistics per iteration (0..iterations), and the final sums.
  const std::vector<iteration_stats>& iterations() const noexcept { return iterations_; }
  const std::vector<double>& final_values() const noexcept { return final_; }
  bool collected() const noexcept { return collected_; }

 private:
  struct report {
    std::vector<run_recorder::part> parts;  // iterations 0..N
    std::vector<double> finals;
    template <class Ar>
    void serialize(Ar& ar) { ar(parts, finals); }
  };

  std::uint32_t nodes_, wpn_, P_, N_;
  std::size_t final_width_;
  worker_id first_local_ = 0;
  std::uint32_t local_count_ = 0;
  bool all_local_ = true;
  std::vector<report> reports_;
  std::vector<iteration_stats> iterations_;
  std::vector<double> final_;
  bool collected_ = false;
};

/// The recorder of a trainer's run: this process's workers (as `red` sees them), with the
/// transport's byte counter.
template <class System>
run_recorder make_recorder(System& sys, const run_reducer& red, std::uint32_t iterations,
                           std::function<void(const iteration_stats&)> on_iteration) {
  return run_recorder(red.local_workers(), iterations, [&sys] { return sys.bytes_sent(); },
                      std::move(on_iteration), red.first_local());
}

/// Runs a trainer's worker program on `sys` and fills the part of the outcome every trainer
/// shares; returns the final sums the program published. Throws strata::error when fewer than
/// `final_width` were collected (`trainer` names the caller in the message).
template <class System, class Program>
const std::vector<double>& run_program(System& sys, run_recorder& rec, const run_reducer& red, Program& program,
                                       run_outcome& out, std::size_t final_width, const char* trainer) {
  rec.start();
  sys.run(program);
  out.seconds = rec.since_start();
  out.iterations = red.iterations();
  out.stats = sys.total_stats();
  out.bytes_sent = out.iterations.empty() ? sys.bytes_sent() : out.iterations.back().bytes_sent;
  if (red.final_values().size() < final_width)
    throw strata::error(errc::bad_input, std::string(trainer) + ": the final sums were not collected");
  return red.final_values();
}

/// Sends a request for row r now if the worker's cached copy is not fresh enough, without
/// waiting: issuing these for every row an iteration needs turns one round trip per row into
/// about one per iteration. (See worker::prefetch; it is not counted as a read.)
template <class R>
void prefetch(worker& w, table_handle<R> t, row_id r) {
  w.prefetch(t, r);
}
/// The same for several rows, as one batched request per shard (worker::prefetch of a range).
template <class R, class Rows>
  requires std::ranges::input_range<const Rows&>
void prefetch(worker& w, table_handle<R> t, const Rows& rows) {
  w.prefetch(t, rows);
}

}  // namespace strata::ml
