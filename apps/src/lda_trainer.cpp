// The LDA trainer's bodies (apps/trainers/lda_trainer.hpp declares them), compiled once into
// strata_apps instead of in every program and test that trains LDA.
#include <trainers/lda_trainer.hpp>

#include <strata/ml/lda.hpp>
#include <strata/runtime/system.hpp>
#include <trainers/detail/lda_training.hpp>
#include <trainers/detail/lda_worker.hpp>
#include <trainers/lda_options.hpp>
#include <trainers/run_stats.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace strata::ml {

/// Trains LDA on `corpus` with the system `sys` (tables are added here; run once).
lda_run train_lda(system_base& sys, const lda_corpus& corpus, const lda_trainer_options& o,
                  std::function<void(const iteration_stats&)> on_iteration) {
  detail::lda_training t(sys, corpus, o);
  // The recorder's slots are numbered from `base`; the callback sees the run's iteration numbers.
  std::function<void(const iteration_stats&)> on_slot;
  if (on_iteration)
    on_slot = [base = t.base, cb = std::move(on_iteration)](const iteration_stats& r) {
      iteration_stats c = r;
      c.iteration += base;
      cb(c);
    };
  run_recorder rec = make_recorder(sys, *t.red, t.slots, std::move(on_slot));
  rec.set_metric_name("loglik");
  t.rec = &rec;
  auto program = [&t](worker& w) { return detail::lda_worker_program(t, w); };
  lda_run out;
  const auto& f = run_program(sys, rec, *t.red, program, out, t.f_docs + t.K, "train_lda");
  if (t.final_nk.size() != t.K) throw strata::error(errc::bad_input, "train_lda: the final topic totals were not read");
  for (auto& r : out.iterations) r.iteration += t.base;
  if (out.iterations.size() > 1) out.sampling_s = out.iterations.back().elapsed_s - out.iterations.front().elapsed_s;
  out.model = std::move(t.model);
  out.assignments = std::move(t.assignments);
  out.tokens_sampled = static_cast<std::uint64_t>(f[detail::lda_training::f_draws] + 0.5);
  // Global invariants from the summed parts, and the exact final LL.
  out.invariant_error = t.global_error(f);
  out.final_loglik = f[detail::lda_training::f_ll] + lda_topic_loglik(t.final_nk, t.lp);
  out.invariants_ok = out.invariant_error.empty();
  return out;
}

/// Throughput of a plain single-threaded collapsed Gibbs loop over the same corpus (lda_reference,
/// no parameter server), in tokens per second, for the given sampler: `sweeps` sweeps, timed
/// without the initialisation and the log-likelihood evaluations.
double lda_baseline_tokens_per_s(const lda_corpus& corpus, const lda_trainer_options& o, std::uint32_t sweeps,
                                        lda_sampler sampler) {
  std::vector<std::vector<std::uint32_t>> docs(corpus.words.size());
  for (std::size_t d = 0; d < docs.size(); ++d)
    for (std::size_t e = 0; e < corpus.words[d].size(); ++e) docs[d].insert(docs[d].end(), corpus.counts[d][e], corpus.words[d][e]);
  lda_options lo;
  lo.num_topics = o.topics;
  lo.alpha = o.alpha;
  lo.beta = o.beta;
  lo.seed = o.seed;
  lo.sampler = sampler;
  lo.mh_steps = o.mh_steps;
  lo.loglik_every = 0;
  lo.iterations = sweeps;
  const auto r = lda_reference(docs, corpus.vocab_size, lo);
  return static_cast<double>(corpus.tokens()) * sweeps / std::max(r.sweep_seconds, 1e-9);
}

}  // namespace strata::ml
