#pragma once
/// \file Elastic m for MF (trainers/elastic.hpp): segments of `every` iterations, each a new run
/// of a system with the m an elastic policy picked from the trace so far, going on from the
/// previous segment's model (mf_trainer_options::start) and its place in the learning-rate schedule
/// (mf_trainer_options::first_iteration); the ratings are re-partitioned among the new workers. The
/// policy follows the true model's test RMSE (eval_every 1) toward `target_rmse`; the run stops
/// after the segment that reaches it, or after o.iterations.
///
/// What a segment does not keep: the workers' SGD order and random generators (a new run draws
/// them), so an elastic run at one m is not the same run as a fixed one.
#include <strata/cost/elastic.hpp>
#include <trainers/elastic.hpp>
#include <trainers/mf_trainer.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace strata::ml {

/// An elastic run's outcome: the last segment's sums and final RMSE, the whole run's records, its
/// segments, and whether an iteration's test RMSE met the target (elastic_info::reached).
struct mf_elastic_run : mf_run, elastic_info {};
/// Runs one segment with `workers` workers (o has its start model, first iteration and keep_model set).
using mf_segment_runner = std::function<mf_run(std::uint32_t workers, const mf_trainer_options& o)>;

mf_elastic_run train_mf_elastic(const mf_trainer_options& o, double target_rmse, const elastic_options& eo, cost::elastic_policy& policy,
                                const mf_segment_runner& run, std::function<void(const iteration_stats&)> on_iteration = {});

}  // namespace strata::ml
