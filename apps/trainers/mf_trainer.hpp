#pragma once
/// \file Data-parallel SGD matrix factorisation on the parameter server.
///
/// Model: r̂_ui = μ + b_u + b_i + u·v (μ the training mean). User rows [u, b_u] live in table W,
/// item rows [v, b_i] in table H, both dense_row<float>; `block` users (items) share one PS row
/// of width block·(rank+1), so an iteration reads a few hundred rows rather than ten thousand.
/// The PS holds each parameter minus its initial value, which every worker derives from a hash
/// of (seed, table, index), so no initialisation clock is needed and stale reads never see an
/// uninitialised factor.
///
/// Training ratings are partitioned across workers by user block (block mod P). One iteration
/// (= one clock) of worker p: read its W blocks and every H block its ratings touch (the
/// requests are issued together), run one SGD epoch over its ratings in a fresh random order on
/// local copies, then `inc_row` the differences and `clock()`. Per-step regularisation is λ/n_u
/// and λ/n_i with the global training counts, so one epoch over all workers is a gradient pass
/// on the SEEDS loss Σ(r − r̂)² + λ(Σ‖[u,b_u]‖² + Σ‖[v,b_i]‖²).
///
/// Per iteration each worker reports its partial training loss (residuals summed during the
/// pass, plus λ‖·‖² of the rows it owns) and its partial test squared error (its users' test
/// ratings against its local copies); the test RMSE of iteration i is exact for BSP and a
/// stale-view estimate otherwise. The final RMSE (`mf_run::final_rmse`) is exact: after the last
/// iteration every worker waits until every update is in (run_reducer::settle), re-reads the rows
/// its test ratings need, and the partial squared errors are summed through a small PS table, so
/// it is the same whether the workers share one process or live in several (tcp). The
/// per-iteration statistics are merged over all workers the same way (run_reducer).
///
/// Rotation mode (`rotation`, DSGD as in Gemulla et al. and STRADS' block rotation for MF): the
/// item blocks are also split into P groups (greedily, so that every (worker, group) cell carries
/// about the same ratings), and an epoch is P clocks (sub-epochs); in sub-epoch s worker p runs
/// SGD over exactly its ratings whose item is in group (p + s) mod P. No two workers touch the
/// same item row in a clock, so under BSP every read sees the row's last writer's update (the run
/// is a serial SGD order: exact DSGD), and each clock moves 1/P of the item table per worker
/// instead of every item row the worker's users rated. Under SSP/ESSP a read may be up to s clocks
/// stale, as the model allows.
///
/// User rows have one writer in both modes (users are partitioned by block), so a worker reads its
/// W blocks once per run and then keeps them: after each push it adds the pushed difference to
/// its mirror of the server's value, which is exactly what a re-read would return under BSP (the
/// server adds the same float difference once per clock), so resumed and uninterrupted runs
/// still end with identical tables.
///
/// A run can start from a saved model (`mf_trainer_options::start`, ml/mf_model.hpp) instead of
/// the hashed initialisation, and can hand its final model back (`run_options::keep_model`):
/// worker 0 reads every row once the updates are in.
///
/// The bodies are compiled once, in the strata_apps library (apps/src/mf_trainer.cpp).
#include <strata/ml/io/ratings.hpp>
#include <strata/runtime/system.hpp>
#include <trainers/mf_options.hpp>
#include <trainers/run_stats.hpp>

#include <cstdint>
#include <functional>

namespace strata::ml {

/// Trains MF as a sequence of runs of `sys` (segments) that keep the tables and every worker's
/// state (its ratings' order, its random generator, the learning-rate schedule), so that the
/// segments together are one run of o.iterations iterations with the same updates; the records
/// are numbered and timed from the start of the first segment (the time between segments, and
/// re-planning, counts). `plan` chooses the segments; without it one segment runs everything
/// (that is train_mf). `on_iteration` (optional) is called once per completed iteration, from a
/// worker thread, with the continuous numbering.
mf_run train_mf_segments(system_base& sys, const io::rating_set& train, const io::rating_set& test, const mf_trainer_options& o,
                         const segment_planner& plan, std::function<void(const iteration_stats&)> on_iteration = {});

/// Trains MF on `train` with the parameter-server system `sys` (tables are added here; run once).
/// `on_iteration` (optional) is called once per completed iteration, from a worker thread.
mf_run train_mf(system_base& sys, const io::rating_set& train, const io::rating_set& test, const mf_trainer_options& o,
                std::function<void(const iteration_stats&)> on_iteration = {});

/// A plain single-threaded SGD loop over the same model and data (no parameter server): the
/// baseline for the per-thread throughput ratio. Returns SGD updates per second.
double mf_baseline_updates_per_s(const io::rating_set& train, const mf_trainer_options& o, std::uint32_t epochs);

}  // namespace strata::ml
