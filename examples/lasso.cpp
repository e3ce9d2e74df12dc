// strata_lasso: Lasso by STRADS parallel coordinate descent (apps/trainers/lasso_trainer.hpp):
// the coordinator schedules coefficients, the workers push partial sums over their rows, the
// coordinator pulls and applies the exact coordinate steps. F(β) = 1/(2n)‖y − Xβ‖² + λ‖β‖₁.
//
//   strata_lasso --data diabetes --lambda-fraction 0.01 --scheduler priority --workers 2
//   strata_lasso --data spam --lambda-fraction 0.01 --scheduler filtered --batch 8 --metrics lasso.jsonl
//   strata_lasso --data my.libsvm --standardize --lambda 0.5 --out beta.txt
//   scripts/launch.sh -n 2 -- strata_lasso --transport tcp --data diabetes --workers 1
//
// --data: a libsvm file, or `diabetes` / `spam` as scripts/fetch_data.sh caches them
// (diabetes.libsvm: standardised; spam.libsvm: log1p counts, target 1 = spam centred).
#include <CLI/CLI.hpp>

#include <strata/core/trace.hpp>
#include <strata/core/atomic_file.hpp>
#include <strata/ml/io/libsvm.hpp>
#include <strata/ml/lasso.hpp>
#include <trainers/lasso_trainer.hpp>
#include <strata/sched/schedulers.hpp>

#include "common/cli.hpp"
#include "common/lasso_scheduler.hpp"
#include "common/metrics.hpp"
#include "common/trainer.hpp"

#include <cstdio>
#include <fstream>
#include <string>

namespace {
namespace ex = strata::examples;
namespace ml = strata::ml;

struct flags {
  ml::lasso_trainer_options lo;
  ex::lasso_scheduler_options sched;
  bool standardize = false, log1p = false;
  std::string out;
  std::string steps = "parallel";
};

/// Exit status of a run that reached --rounds before the gap met --tolerance (outputs are written).
constexpr int not_converged_status = 3;

/// Flags of the shared trainer set that Lasso does not use: refused, not silently ignored.
void refuse_unused_flags(const CLI::App& app) {
  const char* why[][2] = {{"--load", "Lasso starts from beta = 0 and has no saved state to load"},
                          {"--iterations", "use --rounds"},
                          {"--eval-every", "use --evaluate-every"},
                          {"--consistency", "the coordinator applies every step itself (no parameter-server reads)"},
                          {"--staleness", "the coordinator applies every step itself (no parameter-server reads)"}};
  for (const auto& [flag, reason] : why)
    if (app.count(flag) > 0) throw std::invalid_argument(std::string("strata_lasso does not use ") + flag + ": " + reason);
}

}  // namespace

int main(int argc, char** argv) {
  ex::trainer_cli cli("lasso", "strata_lasso: Lasso by STRADS parallel coordinate descent");
  flags fl;
  cli.data = "diabetes";
  ml::run_options run;
  cli.add_flags(run, "(unused by Lasso)", "(refused by Lasso: see --rounds)", "a libsvm file, or diabetes / spam (scripts/fetch_data.sh)");
  auto& app = cli.app;
  app.add_option("--lambda", fl.lo.lambda, "λ (0: --lambda-fraction × λ_max)")->capture_default_str();
  app.add_option("--lambda-fraction", fl.lo.lambda_fraction, "λ as a fraction of λ_max")->capture_default_str();
  app.add_option("--rounds", fl.lo.rounds, "at most this many rounds")->capture_default_str();
  app.add_option("--batch", fl.lo.batch, "coefficients per round")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--batch-steps", fl.steps,
                 "parallel: the batch steps from the same partial sums (STRADS, Shotgun); sequential: the workers also push "
                 "the batch's Gram entries and the coordinator steps it one coefficient after another (any batch is safe)")
      ->check(CLI::IsMember({"parallel", "sequential"}))->capture_default_str();
  app.add_option("--sweeps", fl.lo.sweeps, "sequential batch steps: passes over the batch per round")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--depth", fl.lo.depth, "pipelining: rounds in flight (1: none)")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--evaluate-every", fl.lo.evaluate_every, "rounds between objective/gap evaluations (0: one pass)")->capture_default_str();
  app.add_option("--tolerance", fl.lo.tolerance, "stop when the duality gap <= tolerance × F")->capture_default_str();
  app.add_option("--scheduler", fl.sched.name, "round_robin|random|priority|filtered|random-filtered")
      ->check(CLI::IsMember({"round_robin", "random", "priority", "filtered", "random-filtered"}))->capture_default_str();
  app.add_option("--rho", fl.sched.rho, "dependency filter: reject |correlation| >= rho")->capture_default_str();
  app.add_option("--oversample", fl.sched.oversample, "dependency filter: candidates per accepted coefficient")->capture_default_str();
  app.add_option("--p", fl.sched.p, "priority: |Δβ|^p")->capture_default_str();
  app.add_option("--eta", fl.sched.eta, "priority: floor, fraction of the mean non-zero priority")->capture_default_str();
  app.add_flag("--standardize", fl.standardize, "centre and scale each column (kept sparse); the named datasets set this themselves");
  app.add_flag("--log1p", fl.log1p, "log(1 + value) of each stored value (counts)");
  app.add_option("--out", fl.out, "write the coefficients to FILE, one per line (as --save)");
  cli.finish_flags();
  CLI11_PARSE(app, argc, argv);
  return cli.guard([&] {
    refuse_unused_flags(app);
    fl.lo.steps = fl.steps == "sequential" ? ml::lasso_trainer_options::batch_steps::sequential
                                           : ml::lasso_trainer_options::batch_steps::parallel;
    ml::check_lasso_options(fl.lo);
    std::string file = cli.data;
    if (cli.data == "diabetes" || cli.data == "spam") file = ex::default_data_dir() + "/" + cli.data + ".libsvm";
    if (cli.data == "diabetes") fl.standardize = true;
    std::error_code ec;
    if (!std::filesystem::exists(file, ec))
      throw std::runtime_error(file + " does not exist (run scripts/fetch_data.sh for diabetes / spam)");
    // Columns past what one evaluation message holds are refused at the line that names them.
    const std::size_t max_message = cli.so.system_config().max_message;
    const auto prob = cli.timed_read([&] {
      const auto raw = ml::io::read_libsvm(file, {ml::lasso_max_columns(max_message), ml::lasso_columns_why(max_message)});
      if (raw.num_rows() == 0 || raw.nnz() == 0)
        throw strata::error(strata::errc::refused, file + ": no examples with features (the file is empty, or holds only blank and '#' lines, or labels alone)");
      return ml::lasso_problem::from(raw, {.center_y = true, .standardize_x = fl.standardize, .log1p_x = fl.log1p});
    });
    const auto res = ex::with_system(cli.so, strata::model_params{}, [&](auto& sys) {
      return ex::with_lasso_scheduler(fl.sched, cli.so.seed, [&](auto s) { return ml::train_lasso(sys, prob, s, fl.lo); });
    });
    if (!cli.lead()) return 0;
    auto config = ex::run_config(cli.so, "lasso", 0);
    config.set("scheduler", fl.sched.name).set("lambda", res.lambda).set("batch", fl.lo.batch).set("batch_steps", fl.steps).set("sweeps", fl.lo.sweeps).set("depth", fl.lo.depth)
        .set("rho", fl.sched.rho).set("p", fl.sched.p).set("eta", fl.sched.eta).set("rows", prob.n).set("columns", prob.d).set("data", cli.data);
    strata::trace_writer tw(cli.metrics, config);
    const auto trace = res.trace();
    for (std::size_t i = 0; i < trace.size(); ++i) tw.write(trace[i], {{"nnz", res.points[i].nnz}});
    tw.close();
    std::string model;
    for (double b : res.beta) model += ex::fmt("%.17g", b) + '\n';
    for (const auto& path : {fl.out, cli.save})
      if (!path.empty()) strata::write_file_atomic(path, model);
    std::printf("lasso summary: scheduler=%s workers=%u n=%u d=%u lambda=%.6g rounds=%llu updates=%llu seconds=%.3f "
                "objective=%.10g gap=%.3g nnz=%llu pipeline_staleness_max=%.0f read_seconds=%.3f peak_rss_mb=%.0f\n",
                fl.sched.name.c_str(), cli.so.workers * cli.so.nodes, prob.n, prob.d, res.lambda,
                static_cast<unsigned long long>(res.rounds.rounds), static_cast<unsigned long long>(res.updates),
                res.rounds.seconds, res.final_eval.objective, res.final_eval.gap, static_cast<unsigned long long>(res.nnz),
                res.rounds.staleness.stats().max(), cli.read_seconds, ex::peak_rss_mb());
    if (res.converged || fl.lo.tolerance == 0) return 0;
    std::fprintf(stderr, "strata_lasso: not converged: gap %.3g > tolerance %.3g x F = %.3g after --rounds %llu (raise --rounds or --tolerance)\n",
                 res.final_eval.gap, fl.lo.tolerance, fl.lo.tolerance * res.final_eval.objective,
                 static_cast<unsigned long long>(res.rounds.rounds));
    return not_converged_status;
  });
}
