#pragma once
/// \file The settings and the outcome of the distributed MF trainer (trainers/mf_trainer.hpp), and
/// what decides the segments of a segmented run.
#include <strata/ml/mf_model.hpp>
#include <trainers/run_stats.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace strata::ml {

/// Settings of the distributed MF trainer (besides iterations, seed, prefetch, keep_model: run_options).
struct mf_trainer_options : run_options {
  mf_trainer_options() { iterations = 80; }
  std::uint32_t rank = 16;         ///< factor width (plus one bias column per row)
  double lr = 0.01;                ///< η0 of the schedule η_t = η0 / (1 + decay·t)
  double decay = 0.05;             ///< learning-rate decay per iteration
  double lambda = 5;               ///< λ of the loss (per-step λ/n_u, λ/n_i; weighted_lambda: λ per step)
  /// Inside an item block, visit the ratings in user order rather than in a fresh random order each
  /// epoch (the blocks' order stays random): LIBMF's "partial random" order. When a worker's user
  /// factors outgrow the cache (Netflix's 480k users: 62 MB per worker at rank 64) each random
  /// visit misses it; in user order the factor rows stream.
  bool user_order = false;
  bool weighted_lambda = false;    ///< the loss weighs each user's and item's norm by its rating count, so
                                   ///< every SGD step takes λ (ALS-WR's and LIBMF's form; ml::mf_regularise)
  std::uint32_t clocks_per_epoch = 4;  ///< each clock runs SGD over this fraction of the worker's ratings
                                       ///< (data-parallel mode; rotation: P clocks per epoch)
  bool rotation = false;           ///< DSGD-style block rotation (see the file comment) instead of data-parallel SGD
  /// Data-parallel mode: each worker's change to an item's row is divided by the number of workers
  /// that rate the item before it is pushed (the server's sum is then their average: parameter
  /// averaging for the items; users have one worker each). Without it the server adds P workers'
  /// steps on a popular item, each taken from the same stale value, and SGD diverges once many
  /// workers share items (strata_gen's 10m data: 16 workers, lr 0.01, RMSE 7.9 after 2 iterations).
  bool average_items = false;
  float init_scale = 0.1f;         ///< initial factors uniform in [−init_scale, init_scale] (biases 0)
  std::uint32_t block = 64;        ///< users / items per PS row. A row read, merged and sent costs a few µs
                                   ///< whatever its width, and a clock's slice touches a fixed share of the
                                   ///< item blocks, so wider rows send the same bytes in fewer rows: on
                                   ///< MovieLens (rank 16) 64 reached RMSE 0.90 15-25% sooner than 16 at 1, 2
                                   ///< and 4 workers and sooner than 32 or 128 (benchmarks/results/perf/REPORT.md)
  std::uint32_t work_repeat = 1;   ///< compute each iteration's SGD pass this many times (slows workers
                                   ///< down to emulate compute-dominated iterations; updates applied once)
  /// The iterations before this run (an elastic run's next segment, from `start`): the run is
  /// iterations first_iteration + 1 .. `iterations` of the learning-rate schedule and the slices,
  /// and its records are numbered so (no record 0). 0: a run from the beginning.
  std::uint32_t first_iteration = 0;
  const mf_biased_model* start = nullptr;  ///< start from this model (its rank and mean; rows it lacks get the
                                           ///< hashed init) instead of the hashed init; not owned
};

/// The outcome of a run (iterations, seconds, stats, bytes_sent: run_outcome).
struct mf_run : run_outcome {
  double final_rmse = 0;          ///< exact test RMSE of the final tables
  std::uint64_t sgd_updates = 0;  ///< SGD steps done (all workers)
  /// (iteration, item block) pairs that more than one worker trained (counted among the workers of
  /// this process, exactly under BSP): 0 in rotation mode, many in data-parallel mode.
  std::uint64_t block_conflicts = 0;
  /// Seconds this process spent setting up its workers' state before the clock started (each
  /// worker's ratings grouped by item block, its local model copies and their initial values);
  /// like the data partition, not in `iterations`' elapsed times nor in `seconds`.
  double setup_seconds = 0;
  mf_biased_model model;          ///< the final model, with keep_model, in the process of worker 0 (else empty)
};

/// What decides the segments of a segmented run (train_mf_segments): called before each
/// segment with the records so far (continuous iteration numbers and elapsed times) and the
/// iterations done; returns how many iterations the next segment runs (at least 1; it may change
/// the system's staleness bound first: basic_system::set_staleness). The run ends after o.iterations.
using segment_planner = std::function<std::uint32_t(const std::vector<iteration_stats>&, std::uint32_t)>;

}  // namespace strata::ml
