// The CCD++ MF trainer's body (apps/trainers/mf_ccd.hpp declares it), compiled once into strata_apps.
#include <strata/core/clock.hpp>
#include <trainers/detail/mf_ccd_program.hpp>

namespace strata::ml {

mf_ccd_run train_mf_ccd(system_base& sys, const io::rating_set& train, const io::rating_set& test, const mf_ccd_options& o,
                        std::function<void(const iteration_stats&)> on_iteration) {
  const std::uint32_t P = sys.config().nodes * sys.config().workers_per_node;
  mf_ccd_program prog(train, test, o, P);
  prog.on_iteration = std::move(on_iteration);
  sched::round_robin rr;
  sched::options so;
  so.rounds = prog.rounds();
  so.depth = 1;
  mf_ccd_run out;
  const auto t0 = strata::run_clock::now();
  prog.start();
  out.engine = sched::run(sys, prog, rr, so);
  out.seconds = std::chrono::duration<double>(strata::run_clock::now() - t0).count();
  out.stats = sys.total_stats();
  out.bytes_sent = sys.bytes_sent();
  if (out.engine.per_round.empty()) return out;  // not the coordinator's process
  out.iterations = prog.iterations();
  out.column_updates = prog.column_updates();
  out.final_rmse_recomputed = prog.final_rmse_recomputed();
  if (!out.iterations.empty()) out.final_rmse = out.iterations.back().metric, out.final_loss = out.iterations.back().objective;
  return out;
}

}  // namespace strata::ml
