#pragma once
/// \file The command line every example trainer shares: the system flags (dispatch.hpp), the run
/// flags (--iterations --data --metrics --save --load --quiet --bench-baseline --no-prefetch
/// --cache-rows),
/// building the system the flags chose, and main's error handling. A trainer's main adds its
/// model's flags between `add_flags` and `finish_flags`:
///
///     strata::examples::trainer_cli cli("mf", "strata_mf: ...");
///     cli.add_flags(options, "V of VAP ...", "iterations", "folder with ...");
///     cli.app.add_option("--rank", options.rank, "factor rank");
///     cli.finish_flags();
///     CLI11_PARSE(cli.app, argc, argv);
///     return cli.guard([&] { ...; return 0; });   // exceptions: "strata_mf: <what>", status 1
#include <CLI/CLI.hpp>
#include "cli.hpp"
#include <trainers/run_stats.hpp>
#include <strata/strata.hpp>

#include "common/dispatch.hpp"
#include "common/metrics.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata::examples {

/// Where scripts/fetch_data.sh puts the data: $STRATA_DATA, else ~/.cache/strata.
inline std::string default_data_dir() {
  if (const char* d = std::getenv("STRATA_DATA"); d && *d) return d;
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/strata";
  return ".cache/strata";
}

/// The flags and the parsed settings an example trainer shares with the others.
struct trainer_cli {
  std::string name;  ///< "mf", "lda": the program is strata_<name>
  CLI::App app;
  system_options so;
  std::string data;     ///< --data
  std::string metrics;  ///< --metrics FILE: the run's trace (JSON Lines)
  std::string save;     ///< --save FILE: the trained model
  std::string load;     ///< --load FILE: a saved model
  bool quiet = false;   ///< --quiet: no progress line
  bool bench = false;   ///< --bench-baseline
  std::string phase = "setting up";  ///< what main is doing, for an out-of-memory message ("reading the data", "training")
  double read_seconds = 0;            ///< reading and preparing the data (the summary's read_seconds)

  /// Runs `read` (reading and preparing the data) and adds its wall time to read_seconds.
  template <class F>
  decltype(auto) timed_read(F&& read) {
    phase = "reading the data";
    const auto t0 = std::chrono::steady_clock::now();
    struct add_on_exit {
      double& to;
      std::chrono::steady_clock::time_point t0;
      ~add_on_exit() { to += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
    } add{read_seconds, t0};
    return std::forward<F>(read)();
  }

  trainer_cli(std::string trainer, const std::string& description) : name(std::move(trainer)), app(description) {}

  /// Registers the system flags and the run flags; `run` receives --iterations, --seed and
  /// --no-prefetch (after `resolve`).
  void add_flags(ml::run_options& run, const std::string& value_bound_help, const std::string& iterations_help,
                 const std::string& data_help) {
    run_ = &run;
    add_system_flags(app, so, value_bound_help);
    app.add_option("--iterations", run.iterations, iterations_help + " (given twice: the last counts)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
        ->capture_default_str();
    app.add_option("--data", data, data_help)->capture_default_str();
    app.add_option("--metrics", metrics, "write the run's trace (JSON Lines, one line per iteration) to FILE");
    app.add_option("--save", save, "write the trained model to FILE (text; README describes the format)");
    app.add_option("--load", load, "read a model saved with --save from FILE");
    app.add_flag("--no-prefetch{false}", run.prefetch, "request rows one at a time");
    app.add_option("--cache-rows", so.cache_rows,
                   "rows each worker caches per table, evicted CLOCK-wise (rows with pending increments or requests "
                   "stay, so a cache may briefly hold more); 0: unbounded")
        ->check(CLI::NonNegativeNumber)  // "-1" would otherwise wrap to an unbounded 2^64 - 1
        ->capture_default_str();
    app.add_option("--eval-every", run.eval_every,
                   "K > 0: objective and metric of the true model (a consistent snapshot of the tables) after every K-th "
                   "iteration and the last, null in between; 0: each worker's own view, every iteration")
        ->capture_default_str();
    app.add_flag("--quiet", quiet, "no progress display");
    app.add_flag("--bench-baseline", bench,
                 "also time a plain single-threaded loop over the same epochs/sweeps, best of 3 interleaved with 2 more "
                 "runs of the trainer (one process), and print the per-thread ratio");
  }
  /// Registers --checkpoint-dir, --checkpoint-every, --checkpoint-keep and --resume (trainers whose workers checkpoint
  /// their own state: worker::on_checkpoint). The trainer sets so.checkpoint.run_tag to what must
  /// match for a checkpoint to be resumed (data, model settings; not --iterations).
  void add_checkpoint_flags() {
    strata::add_checkpoint_options(app, so.checkpoint);
    app.get_option("--checkpoint-every")->check(strata::examples::positive);
    app.get_option("--checkpoint-dir")->needs(app.get_option("--checkpoint-every"));
    app.get_option("--checkpoint-every")->needs(app.get_option("--checkpoint-dir"));
    app.get_option("--checkpoint-keep")->needs(app.get_option("--checkpoint-dir"))->check(CLI::Range(0, 1 << 20));
  }
  /// Prints where a resumed run started and why newer checkpoints were refused (lead process).
  /// Call it after the trainer has added its tables (they are part of a checkpoint's signature).
  template <class System>
  void report_resume(System& sys) const {
    const auto* r = sys.resumed();
    if (!r || !lead()) return;
    for (const auto& why : r->refused) std::fprintf(stderr, "strata_%s: %s\n", name.c_str(), why.c_str());
    std::printf("%s: resumed from the checkpoint at iteration %lld in %s\n", name.c_str(), static_cast<long long>(r->clock),
                so.checkpoint.resume.c_str());
  }
  /// Registers the cluster flags: last, so that a name the trainer took becomes --node-<name>.
  void finish_flags() { add_cluster_flags(app, so.cluster_flags); }

  /// After parsing: copies the seed into the run options and resolves the cluster (tcp: rank
  /// and world size; nodes = processes).
  void resolve() {
    if (run_) run_->seed = so.seed;
    so.nodes_given = app.count("--nodes") > 0;
    so.resolve();
    check_memory("--workers", std::uint64_t{so.workers} * (so.is_distributed() ? 1 : so.nodes) * worker_bytes,
                 so.is_distributed() ? "worker threads" : "worker threads x --nodes");
  }
  /// True in the process that writes the trace, the model and the full summary (rank 0).
  bool lead() const noexcept { return so.rank() == 0; }

  /// Runs main's body after resolve(): an exception becomes "strata_<name>: what" on stderr and
  /// exit status 1; otherwise the body's status.
  template <class F>
  int guard(F&& body) {
    try {
      resolve();
      return std::forward<F>(body)();
    } catch (const std::bad_alloc&) {  // an estimate the checks before allocating did not catch
      std::fprintf(stderr, "strata_%s: out of memory (std::bad_alloc) while %s: lower --workers, --nodes or the model's size flags\n",
                   name.c_str(), phase.c_str());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "strata_%s: %s\n", name.c_str(), e.what());
      return 1;
    }
  }

 private:
  ml::run_options* run_ = nullptr;
};

/// --bench-baseline's timing: `reps` runs of the plain single-threaded loop interleaved with
/// `reps` - 1 further runs of the trainer after the one main already did (trainer, loop, trainer,
/// loop, ...), so that both see the same machine; each side's best rate counts.
struct bench_rates {
  std::vector<double> trainer;   ///< per-thread rate of each trainer run, the main run first
  std::vector<double> baseline;  ///< rate of each plain-loop run
  double best_trainer() const { return trainer.empty() ? 0.0 : *std::max_element(trainer.begin(), trainer.end()); }
  double best_baseline() const { return baseline.empty() ? 0.0 : *std::max_element(baseline.begin(), baseline.end()); }
  double ratio() const { return best_trainer() / std::max(best_baseline(), 1e-300); }
  /// "a b c" with the given printf format.
  static std::string list(const std::vector<double>& v, const char* f) {
    std::string out;
    for (double x : v) {  // appended piecewise: GCC 12's -O3 -Wrestrict misfires on ("" or " ") + string
      if (!out.empty()) out += ' ';
      out += fmt(f, x);
    }
    return out;
  }
};

/// Runs the interleaving above: `again()` runs the trainer once more and returns its per-thread
/// rate; `loop()` runs the plain loop once and returns its rate. `first` is the main run's rate.
template <class Again, class Loop>
bench_rates bench_interleaved(double first, std::uint32_t reps, Again&& again, Loop&& loop) {
  bench_rates b;
  b.trainer.push_back(first);
  for (std::uint32_t i = 0; i < reps; ++i) {
    b.baseline.push_back(loop());
    if (i + 1 < reps) b.trainer.push_back(again());
  }
  return b;
}

/// Builds the system the flags chose (the transport's type from dispatch; the consistency model
/// as run-time data, so train is compiled once per transport) and returns train(system).
/// `mp`: the consistency model (default: the one --consistency names; STRADS trainers, which use
/// no table, pass model_params{}). Under --transport sim, prints what the simulation cost on stderr.
template <class F>
decltype(auto) with_system(const system_options& so, strata::model_params mp, F&& train) {
  return dispatch(so, [&]<class T>(std::type_identity<T>, typename T::config tc) {
    strata::basic_system<T> sys(so.system_config(), mp, std::move(tc));
#if STRATA_HAVE_SIMGRID
    if constexpr (std::is_same_v<T, strata::simulated>) {
      // What the simulation cost, on stderr (stdout stays the trainer's own).
      const auto t0 = std::chrono::steady_clock::now();
      struct report {
        strata::simulated& t;
        std::chrono::steady_clock::time_point t0;
        ~report() {
          if (std::uncaught_exceptions() > 0) return;  // the run failed: its error says what happened
          const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          const double simulated = t.simulated_seconds();
          std::fprintf(stderr, "sim: platform %s, %.6f simulated s in %.3f s of wall time (%.1fx), %llu messages, %.1f MB, %zu lanes, %llu waits for a lane\n",
                       t.platform().name.c_str(), simulated, wall, simulated > 0 ? wall / simulated : 0.0,
                       static_cast<unsigned long long>(t.messages()), static_cast<double>(t.bytes_sent()) / 1e6, t.lanes_used(),
                       static_cast<unsigned long long>(t.lane_waits()));
        }
      } r{sys.transport(), t0};
      return train(sys);
    } else {
      return train(sys);
    }
#else
    return train(sys);
#endif
  });
}
template <class F>
decltype(auto) with_system(const system_options& so, F&& train) {
  return with_system(so, so.model(), std::forward<F>(train));
}

}  // namespace strata::examples
