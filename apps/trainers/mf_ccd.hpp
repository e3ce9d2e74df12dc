#pragma once
/// \file Matrix factorisation by cyclic coordinate descent, CCD++ style (Yu, Hsieh, Si, Dhillon,
/// ICDM 2012), as a STRADS program (sched/engine.hpp): the rank-partitioned MF app of SEEDS.md §2.
///
/// Model and loss: the SGD trainer's (mf_trainer.hpp), r̂_ui = μ + b_u + b_i + w_u·h_i, loss
/// Σ_Ω (r − r̂)² + λ(Σ_u ‖[w_u, b_u]‖² + Σ_i ‖[h_i, b_i]‖²), or with weighted_lambda each norm
/// weighed by the user's (item's) rating count n_u (n_i; at least 1). The biases are two more rank-1
/// columns: c = 0 is b_u (its item side fixed to 1), c = 1 is b_i (its user side fixed to 1),
/// c = 2 .. R+1 the factors; so W and H have C = R + 2 columns and r̂ = μ + Σ_c W_uc H_ic.
///
/// CCD++ updates one column c at a time against the residual e_ui = r_ui − r̂_ui without it:
///     w_uc ← Σ_{i∈Ω_u} e_ui h_ic / (λ + Σ_{i∈Ω_u} h_ic²),   h_ic ← Σ_{u∈Ω_i} e_ui w_uc / (λ + Σ_{u∈Ω_i} w_uc²),
/// each the exact minimiser of the loss in that coordinate.
///
/// Decomposition (the variables are the C columns; `sched::round_robin` over C × inner variables,
/// variable v meaning column v / inner, so each column gets `inner` consecutive rounds):
/// - users are split over the workers (greedily by rating count); a worker owns its users' rows
///   of W, their training ratings with their residuals, their test ratings, and a copy of H;
/// - push (round for column c): the worker adds column c back into its residuals, solves w_uc for
///   each of its users (local: all of a user's ratings are on its worker), and returns, per item,
///   the partial numerator Σ e_ui w_uc and denominator Σ w_uc² over its users;
/// - pull (coordinator): sums the partials and solves h_ic = num / (λ + den) for every item;
/// - sync (every worker): takes the new column h_·c and takes column c out of its residuals again.
/// One iteration is C × inner rounds (every column `inner` times); its result is the same for any
/// number of workers up to the order of floating-point sums.
///
/// Per iteration the trace records the test RMSE (metric "rmse") and the loss (objective) of the
/// state after the iteration: the workers add them up in the first push of the next iteration,
/// before its update (one extra, update-free round after the last iteration evaluates the final
/// state). Every figure is exact, whatever the transport.
#include <strata/core/error.hpp>
#include <strata/ml/io/ratings.hpp>
#include <strata/ml/partition.hpp>
#include <trainers/mf_trainer.hpp>
#include <trainers/run_stats.hpp>
#include <strata/runtime/system.hpp>
#include <strata/runtime/worker.hpp>
#include <strata/sched/engine.hpp>
#include <strata/sched/schedulers.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace strata::ml {

/// Settings of the CCD++ trainer (iterations = outer iterations, seed: run_options).
struct mf_ccd_options : run_options {
  mf_ccd_options() { iterations = 10; }
  std::uint32_t rank = 16;      ///< factor width R (plus the two bias columns)
  double lambda = 5;            ///< λ of the loss (the SGD trainer's)
  std::uint32_t inner = 1;      ///< rounds per column per iteration (CCD++'s inner iterations)
  float init_scale = 0.1f;      ///< initial item factors uniform in [−init_scale, init_scale] (the SGD trainer's hash); user factors and biases 0
  /// Weigh each user's and item's norm in the loss by its training-rating count (ALS-WR, Zhou et
  /// al. 2008; the SGD trainer's --weighted-lambda): λ(Σ_u n_u‖[w_u, b_u]‖² + Σ_i n_i‖[h_i, b_i]‖²),
  /// so a coordinate step divides by λ n_u + Σ h² (λ n_i + Σ w²). Try λ near 0.01–0.1 then.
  bool weighted_lambda = false;
};

/// The outcome (iterations [0] = initial state, [i] = after iteration i; seconds, stats, bytes_sent:
/// run_outcome). Filled in the coordinator's process (node 0's).
struct mf_ccd_run : run_outcome {
  double final_rmse = 0;            ///< test RMSE after the last iteration
  double final_loss = 0;            ///< the loss after the last iteration
  /// The final test RMSE recomputed from the factors (r − μ − Σ_c w_uc h_ic per test rating),
  /// where final_rmse comes from the test residuals kept column by column: the two agree.
  double final_rmse_recomputed = 0;
  std::uint64_t column_updates = 0; ///< rank-1 column updates (rounds that updated a column)
  sched::result engine;             ///< the engine's figures
};


/// Trains MF by CCD++ on `sys` (one `sys.run`; any consistency model: the run uses no table).
/// `on_iteration` (optional) is called once per iteration, on the coordinator's thread.
mf_ccd_run train_mf_ccd(system_base& sys, const io::rating_set& train, const io::rating_set& test, const mf_ccd_options& o,
                        std::function<void(const iteration_stats&)> on_iteration = {});

}  // namespace strata::ml
