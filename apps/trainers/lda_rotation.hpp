#pragma once
/// \file Model-parallel collapsed Gibbs LDA by word rotation (STRADS, SEEDS.md §2), on the STRADS
/// engine (sched/engine.hpp) with the `sched::rotation` scheduler.
///
/// Documents are split over the P workers as in the data-parallel trainer (lda_trainer.hpp:
/// greedily by token count); a document's topic counts n_dk and its tokens' topics stay with its
/// worker. The vocabulary is split into B = P blocks of words (greedily by token count, so every
/// block carries about the same sampling work). One iteration (one Gibbs sweep) is B STRADS
/// rounds (sub-rounds); in round r the rotation scheduler gives block b to worker (b + r) mod P,
/// and that worker samples exactly the tokens of its documents whose word is in block b. No two
/// workers hold the same block in a round, so every word-topic row has one writer at a time and
/// the sampler reads exact word-topic counts; only the K topic totals n_k are shared.
///
/// Where the word-topic rows live: with their block, in app messages. A worker holds the rows of
/// the one block it owns (sparse, non-zeros only); after its push for round r it sends them to the
/// block's owner in round r + 1, worker (p + 1) mod P (the ring of `sched::rotation`), which
/// receives them at the start of its next push. We chose messages over the parameter-server table
/// because (a) the rows are then exact under every consistency model (a PS table would be fresh
/// only under BSP and only if every worker clocked once per sub-round), (b) a block moves once
/// per sub-round point to point, with no server round trip and no cache, and (c) the run has no
/// table at all, so the transport's byte counter is the rotation's traffic. A received block
/// must carry the id and round the plan says, or the push throws (a ring out of step).
///
/// Sampling: `sampler = sparse`, SparseLDA, exact draws against the held rows; `sampler = mh`, the
/// Metropolis–Hastings sampler (ml/lda_mh_sampler.hpp) whose word proposals are alias tables built
/// from the held block's rows at the start of the sub-round (exact then: the block has one writer),
/// the block's most frequent words (K/8 tokens or more) in dense (current, snapshot) rows up to
/// mh_dense_mb MiB per worker, the rest sparse. A document's topic counts are not stored: they are
/// recounted from its tokens' topics when the sub-round reaches it and checked against them after
/// its draws (no documents × K table; the samplers bind a document in O(n_d), not O(K)). A block
/// is handed on in parts of rotation_part_entries entries, each under the message limit.
///
/// Topic totals: every push starts from the totals the last pull published, samples against its
/// own view (the global totals plus its own moves, as in STRADS) and reports its net change; the
/// pull adds the changes up and the sync hands every worker the new totals before its next push.
///
/// Log-likelihood (the same formula and parts as lda_trainer.hpp, ml/lda.hpp): at the last
/// sub-round of every sweep each worker adds, after sampling, the doc parts of its documents and
/// the word parts of the block it holds (the blocks partition the vocabulary), and the pull adds
/// the topic part of the new totals: the exact LL of the state after that sweep. Iteration 0 is
/// the random initial state, drawn before the run from the same random streams as the
/// data-parallel trainer (same seed: same initial state and LL).
///
/// Invariants: every document's n_dk, as the sampler edited them, equal the recount of its tokens'
/// new topics after each of its sub-rounds; at the last sub-round no negative count, Σ_w n_wk =
/// n_k = Σ_d n_dk per topic, Σ_k n_k = tokens; and every n_wk equals a recount from the
/// assignments, checked two ways: a fingerprint
/// (Σ over the blocks' counts of n_wk·h(w, k) against Σ over every token of h(w, z), mod 2^64, with
/// h a 64-bit hash: equal when the tables agree, and a difference escapes with probability 2^-64),
/// which works across processes, and, when every worker is in this process, a full recount word
/// by word.
/// Who held which block in every round is recorded by the pull (`block_conflicts`, `holds`).
#include <strata/core/error.hpp>
#include <strata/ml/lda.hpp>
#include <strata/ml/partition.hpp>
#include <trainers/lda_trainer.hpp>
#include <trainers/run_stats.hpp>
#include <strata/runtime/system.hpp>
#include <strata/runtime/task.hpp>
#include <strata/runtime/worker.hpp>
#include <strata/sched/engine.hpp>
#include <strata/sched/schedulers.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace strata::ml {

/// Settings of the word-rotation trainer: those of the data-parallel trainer (topics, alpha,
/// beta, iterations = sweeps, seed, sampler, mh_steps, mh_dense_mb; keep_model: the final counts
/// into the outcome's `model` and keep_assignments the final topics into `assignments` when every
/// worker is in this process; rotation_part_entries;
/// prefetch is not used).
using lda_rotation_options = lda_trainer_options;

/// The outcome: what `train_lda` returns (iterations [0] = initial state, [i] = after sweep i;
/// final_loglik, tokens_sampled, invariants) plus the rotation's own figures.
struct lda_rotation_run : lda_run {
  std::uint32_t blocks = 0;               ///< B (= workers)
  std::uint64_t rounds = 0;               ///< sub-rounds pulled (iterations × B)
  std::uint64_t block_conflicts = 0;      ///< (round, block) pairs held by more than one worker (0 when correct)
  /// holds[p * B + b]: rounds in which worker p sampled block b (each = iterations when correct).
  std::vector<std::uint64_t> holds;
  sched::result engine;                   ///< the engine's figures
};


/// Trains LDA on `corpus` by word rotation on `sys` (one `sys.run`; any consistency model: the
/// run uses no table). The outcome's figures are filled in the coordinator's process (node 0's);
/// elsewhere only `blocks`, `seconds`, `stats` and `bytes_sent` are (and `invariants_ok` is false:
/// the check ran on node 0). With `keep_model` and every worker in this process, `model`
/// holds the final word-topic counts. `on_iteration` (optional) is called after every sweep, on the
/// coordinator's thread.
lda_rotation_run train_lda_rotation(system_base& sys, const lda_corpus& corpus, const lda_rotation_options& o,
                                    std::function<void(const iteration_stats&)> on_iteration = {});

}  // namespace strata::ml
