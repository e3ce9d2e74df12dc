// The word-rotation LDA trainer's body (apps/trainers/lda_rotation.hpp declares it), compiled once into
// strata_apps instead of in every program and test that runs it.
#include <strata/core/clock.hpp>
#include <trainers/detail/lda_rotation_program.hpp>

namespace strata::ml {

lda_rotation_run train_lda_rotation(system_base& sys, const lda_corpus& corpus, const lda_rotation_options& o,
                                    std::function<void(const iteration_stats&)> on_iteration) {
  const std::uint32_t P = sys.config().nodes * sys.config().workers_per_node;
  lda_rotation_program prog(corpus, o, P);
  prog.on_iteration = std::move(on_iteration);
  sched::rotation rot;
  sched::options so;
  so.rounds = prog.rounds();
  so.depth = 1;
  lda_rotation_run out;
  out.blocks = prog.vars();
  iteration_stats first;
  first.iteration = 0;
  first.objective = first.metric = prog.initial_loglik();
  first.metric_name = "loglik";
  if (prog.on_iteration) prog.on_iteration(first);
  if (o.iterations == 0) {  // the initial state only: nothing to run
    out.iterations.push_back(first);
    out.final_loglik = first.metric;
    out.invariants_ok = true;
    return out;
  }
  const auto t0 = strata::run_clock::now();
  prog.start();
  out.engine = sched::run(sys, prog, rot, so);
  out.seconds = std::chrono::duration<double>(strata::run_clock::now() - t0).count();
  out.stats = sys.total_stats();
  out.bytes_sent = sys.bytes_sent();
  if (out.engine.per_round.empty()) {  // not the coordinator's process
    out.invariant_error = "checked in the coordinator's process (node 0)";
    return out;
  }
  out.iterations.push_back(first);
  for (const auto& r : prog.iterations()) out.iterations.push_back(r);
  out.rounds = prog.pulled();
  out.block_conflicts = prog.conflicts();
  out.holds = prog.holds();
  out.tokens_sampled = prog.draws();
  out.final_loglik = prog.final_loglik();
  if (out.iterations.size() > 1) out.sampling_s = out.iterations.back().elapsed_s - out.iterations.front().elapsed_s;
  std::string err = prog.checked() ? prog.final_error() : "the final check did not run";
  bool local = true;
  for (node_id n = 0; n < sys.config().nodes; ++n) local = local && sys.is_local(n);
  if (err.empty() && local) err = prog.recount();
  if (local && o.keep_model) out.model = prog.model();
  if (local && o.keep_assignments) out.assignments = prog.assignments();
  if (err.empty() && out.block_conflicts > 0) err = std::to_string(out.block_conflicts) + " block(s) held by two workers in a round";
  out.invariants_ok = err.empty();
  out.invariant_error = err;
  return out;
}

}  // namespace strata::ml
