#pragma once
/// \file Data-parallel collapsed Gibbs LDA on the parameter server.
///
/// Tables: word-topic counts n_wk in a sparse_row<int32_t> table (one row per word, K columns),
/// topic totals n_k in one dense_row<int32_t> row. Documents are partitioned across workers
/// (greedily by token count); a document's topic counts n_dk and its tokens' topics stay with
/// the worker that owns it. Clock 0 assigns random topics; each later clock is one Gibbs sweep
/// over the worker's documents with the SparseLDA sampler (ml/lda.hpp): the worker reads the
/// topic totals once per clock and yields once per document (so pushed rows are taken in). It
/// reads each word row at the word's first use in the sweep into a local copy, samples every
/// later token of the word against that copy plus its own moves, and sends each word's net count
/// change once, at the end of the sweep: increments leave at the clock under every model but a
/// value bound, so this is what the per-token path would send, minus a row read and an `inc` per
/// (document, word) pair. Under a value bound (VAP), whose flushes follow the increments, the
/// worker reads the row for every (document, word) pair and sends that pair's changes at once.
/// The totals' changes go in one `inc_row` per clock. Under stale reads counts can be
/// transiently negative; the sampler reads them as 0.
///
/// Log-likelihood (SEEDS.md) of the state after clock i is summed from per-worker parts at the
/// start of clock i+1 (and after the last clock): each worker adds the doc parts of its
/// documents, the word parts of the words w with w mod P = its id (from its view of those rows),
/// and worker 0 the topic part. Under BSP this is the exact LL; under the other models it is the
/// LL of each worker's (possibly stale) view. The final LL (`lda_run::final_loglik`) is exact and
/// the invariants Σ_k n_dk = n_d, Σ_w n_wk = n_k = Σ_d n_dk, Σ_k n_k = tokens, no negative count,
/// are checked at the end of the worker program: after the last sweep every worker waits until
/// every update is in (run_reducer::settle), re-reads the totals and its share of the word rows
/// (w mod P = its id), and the partial sums (LL parts, Σ_w n_wk and Σ_d n_dk per topic, negative
/// counts, local violations) are added up through a small PS table, so the check is the same
/// whether the workers share one process or live in several (tcp).
///
/// With `run_options::keep_model` worker 0 then reads every word row into the outcome's
/// word-topic counts (ml/lda_model.hpp: their log p(w | z), top words and file format).
///
/// With `lda_trainer_options::sampler = lda_sampler::mh` a sweep uses the Metropolis–Hastings
/// sampler (ml/lda.hpp, mh_lda_sampler) instead: the worker reads each of its words' rows once per
/// sweep (its first use) into a dense local copy and an alias table (the word proposal), samples
/// its tokens against that copy plus its own moves, and sends each word's net count changes once,
/// at the end of the sweep (under a value bound too: the MH sampler has no per-pair path). The moves, and so the count
/// invariants, are the exact sampler's; the memory is 2 × K counts per word the worker's documents use.
///
/// Checkpoints (system_config::checkpoint): each worker saves its tokens' topics and its random
/// generator (worker::on_checkpoint); n_dk is recounted from the topics on restore. A checkpoint
/// at clock m holds the tables after clocks 0..m-1 (the initial counts and sweeps 1..m-1), so a
/// resumed run (basic_system::start_clock() = m) skips the initial push and runs sweeps
/// m..iterations; its trace starts with iteration m-1 (the checkpointed state, evaluated from the
/// tables) and goes on with the same iteration numbers as the uninterrupted run. Under BSP the
/// resumed run ends with exactly the uninterrupted run's counts and topics.
///
/// The bodies are compiled once, in the strata_apps library (apps/src/lda_trainer.cpp).
#include <strata/ml/lda.hpp>
#include <strata/runtime/system.hpp>
#include <trainers/lda_options.hpp>
#include <trainers/run_stats.hpp>

#include <cstdint>
#include <functional>

namespace strata::ml {

/// Trains LDA on `corpus` with the system `sys` (tables are added here; run once).
lda_run train_lda(system_base& sys, const lda_corpus& corpus, const lda_trainer_options& o,
                  std::function<void(const iteration_stats&)> on_iteration = {});

/// Throughput of a plain single-threaded collapsed Gibbs loop over the same corpus (lda_reference,
/// no parameter server), in tokens per second, for the given sampler: `sweeps` sweeps, timed
/// without the initialisation and the log-likelihood evaluations.
double lda_baseline_tokens_per_s(const lda_corpus& corpus, const lda_trainer_options& o, std::uint32_t sweeps,
                                 lda_sampler sampler);

}  // namespace strata::ml
