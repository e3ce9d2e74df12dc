#pragma once
/// \file CoCoA+ on the parameter server: distributed SDCA for linear SVMs (hinge loss) and ridge /
/// elastic-net regression (squared loss); ml/cocoa.hpp holds the kernels and the mathematics.
///
/// The shared vector v = (1/(λ2 n)) Σ α_i x_i lives in one table of dense_row<double> rows of
/// `block` coordinates. The examples are shuffled with the seed and split evenly among the K
/// workers; a worker's α stays with it. One iteration (= one clock = one CoCoA+ round) of worker
/// k: read every row of v (one batched request), w = soft(v, κ), H = ceil(local_passes × n_k)
/// SDCA steps on its local subproblem with σ', then `inc_row` its Δv_k (γ times it) and `clock()`.
/// Under BSP that is CoCoA+ exactly; under SSP/ESSP a worker may start a round from a v up to s
/// clocks old (the model's bound), and α and v stay consistent because v is always the sum of
/// every pushed Δv.
///
/// Evaluation: with eval_every = k > 0 (the default 1), after every k-th round the true model's
/// primal P(w), dual D(α) and duality gap (a consistent snapshot: every worker's pushes in,
/// w recomputed from the server's v); a run with `tolerance` stops after the first snapshot whose
/// gap is at most tolerance × P (all workers learn the gap through an all-reduce, so they stop at
/// the same clock). With eval_every = 0 each worker reports its own view (its v read plus its own
/// push): an estimate. The trace's objective is P, its metric ("gap") P − D. The final P, D and
/// gap are always exact (after every update is in).
///
/// The bodies are compiled once, in the strata_apps library (apps/src/cocoa_trainer.cpp).
#include <strata/cost/elastic.hpp>
#include <trainers/elastic.hpp>
#include <strata/ml/cocoa.hpp>
#include <strata/ml/io/libsvm.hpp>
#include <strata/runtime/system.hpp>
#include <trainers/run_stats.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace strata::ml {

/// Settings of the CoCoA+ trainer (besides iterations, seed, prefetch, keep_model, eval_every: run_options).
struct cocoa_trainer_options : run_options {
  cocoa_trainer_options() {
    iterations = 100;
    eval_every = 1;
  }
  cocoa_objective objective;
  double local_passes = 1;    ///< H = ceil(local_passes × the worker's examples) SDCA steps per round
  bool averaging = false;     ///< CoCoA (γ = 1/K, σ' = 1) instead of CoCoA+ (γ = 1, σ' = K)
  double sigma = 0;           ///< σ' of the local subproblem (0: K when adding, 1 when averaging)
  double tolerance = 0;       ///< stop after the first snapshot with gap <= tolerance × P (0: run every round)
  std::uint32_t block = 4096; ///< coordinates of v per parameter-server row
  /// A run that goes on from another's state (an elastic run's next segment, with another number of
  /// workers): α by example (size n) and v (size d), as `keep_state` returned them; not owned.
  /// The table holds v minus start_v (as MF's tables hold the change from the initial model).
  const std::vector<double>* start_alpha = nullptr;
  const std::vector<double>* start_v = nullptr;
  bool keep_state = false;    ///< return α and v (cocoa_run::alpha, ::v); every worker in this process only
};

/// Refuses settings no run can honour (naming the setting).
void check_cocoa_options(const cocoa_trainer_options& o);

/// Examples from a libsvm file's rows: optionally labels binarised, standardised, each row scaled to unit norm, a constant bias
/// feature appended (its value `bias`, regularised like the others, as liblinear's -B), and for
/// the hinge loss labels checked to be ±1 (0 / 1 labels are refused naming the first other one).
struct cocoa_preparation {
  bool binarize = false;     ///< labels > 0 become +1, the others -1 (0/1 or regression data for the hinge loss)
  bool standardize = false;  ///< centre every column and scale it to variance 1 (dense), centre the target (squared loss)
  bool normalize_rows = false;
  double bias = 0;  ///< 0: no bias feature
};
cocoa_data cocoa_prepare(const io::libsvm_data& raw, const cocoa_objective& o, const cocoa_preparation& prep, const std::string& name);

/// The outcome of a run (iterations, seconds, stats, bytes_sent: run_outcome).
struct cocoa_run : run_outcome {
  double primal = 0, dual = 0;  ///< exact P(w) and D(α) of the final model
  double gap() const noexcept { return primal - dual; }
  std::uint32_t rounds = 0;     ///< rounds run (fewer than iterations when the tolerance stopped it)
  bool converged = false;       ///< a snapshot's gap met the tolerance
  std::uint64_t steps = 0;      ///< SDCA coordinate steps, all workers
  double setup_seconds = 0;     ///< this process's workers' partition copies (not in `seconds`)
  std::vector<double> w;        ///< the final primal model, with keep_model, in the process of worker 0
  std::vector<double> alpha, v; ///< the final state, with keep_state (α by example, v = (1/(λ2 n)) Σ α_i x_i)
};

/// Trains CoCoA+ on `data` with the parameter-server system `sys` (its table is added here).
/// `on_iteration` (optional) is called once per completed round, from a worker thread.
cocoa_run train_cocoa(system_base& sys, const cocoa_data& data, const cocoa_trainer_options& o,
                      std::function<void(const iteration_stats&)> on_iteration = {});

/// Elastic m: a run in segments of `every` rounds whose number of workers changes between
/// segments. α (by example) and v are kept; the examples are re-partitioned among the new workers
/// (the same seeded split every run of that m uses). Each segment is a new run of a system with
/// its m (the runner makes it: threads in this process, or simulated hosts); the wall time a
/// switch costs (between the segments, and the new segment's set-up and tear-down: starting the
/// workers, re-partitioning) is measured and added to the trace's elapsed time when
/// `count_switches` (not for simulated runs, whose clock is the simulation's: there switches cost
/// nothing; the first segment's set-up is not counted, as no fixed run's is).
/// After each segment the policy (cost/elastic.hpp) picks the next m from the trace; the run
/// stops when a round's gap meets o.tolerance × P or after o.iterations rounds.
using cocoa_elastic_options = elastic_options;
using cocoa_segment = elastic_segment;
struct cocoa_elastic_run : cocoa_run, elastic_info {};  ///< (rounds, converged: iterations_run, reached)
/// Runs one segment with `workers` workers (o has the start state and keep_state set).
using cocoa_segment_runner = std::function<cocoa_run(std::uint32_t workers, const cocoa_trainer_options& o)>;

cocoa_elastic_run train_cocoa_elastic(const cocoa_data& data, const cocoa_trainer_options& o, const cocoa_elastic_options& eo,
                                      cost::elastic_policy& policy, const cocoa_segment_runner& run,
                                      std::function<void(const iteration_stats&)> on_iteration = {});

}  // namespace strata::ml
