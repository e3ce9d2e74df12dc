// strata_cocoa: CoCoA+ (distributed SDCA; apps/trainers/cocoa_trainer.hpp) for a linear SVM (hinge
// loss) or ridge / elastic-net regression (squared loss) on libsvm data, on every transport and
// consistency model. P(w) = (1/n) Σ φ(x_i·w; y_i) + λ(1−ρ)/2 ‖w‖² + λρ ‖w‖₁ (ρ = --l1-ratio).
//
//   strata_cocoa --data breast_cancer --loss hinge --lambda 1e-3 --workers 4 --tolerance 1e-6
//   strata_cocoa --data diabetes --loss squared --lambda 1e-2 --l1-ratio 0.5 --metrics cocoa.jsonl
//   strata_cocoa --data my.libsvm --binarize --bias 1 --normalize --out w.txt
//   scripts/launch.sh -n 3 -- strata_cocoa --transport tcp --data spam --binarize --workers 1
//
// --data: a libsvm file, or breast_cancer / diabetes / spam as scripts/fetch_data.sh caches them.
// The trace's objective is the primal P, its metric the duality gap P − D (the true model's, after
// every --eval-every rounds). Exit status 3: --tolerance set and not met after --iterations.
#include <CLI/CLI.hpp>

#include <strata/core/atomic_file.hpp>
#include <strata/core/trace.hpp>
#include <strata/ml/io/libsvm.hpp>
#include <trainers/cocoa_trainer.hpp>

#include "common/cli.hpp"
#include "common/metrics.hpp"
#include "common/trainer.hpp"

#include <cstdio>
#include <filesystem>
#include <string>

namespace {
namespace ex = strata::examples;
namespace ml = strata::ml;

struct flags {
  std::string loss = "hinge", aggregation = "adding", out;
  double lambda = 1e-3, l1_ratio = 0;
  ml::cocoa_preparation prep;
  std::vector<std::uint32_t> elastic;  // candidate m of an elastic run (empty: a fixed run)
  std::uint32_t elastic_every = 10;
};

/// The shared trainer flags CoCoA+ has no use for: refused, not silently ignored.
void refuse_unused_flags(const CLI::App& app) {
  const char* why[][2] = {{"--load", "CoCoA+ starts from alpha = 0 and has no saved state to load"},
                          {"--cache-rows", "every round reads all of v"}};
  for (const auto& [flag, reason] : why)
    if (app.count(flag) > 0) throw std::invalid_argument(std::string("strata_cocoa does not use ") + flag + ": " + reason);
}

std::string data_file(const std::string& data) {
  for (const char* named : {"breast_cancer", "diabetes", "spam"})
    if (data == named) return ex::default_data_dir() + "/" + data + ".libsvm";
  return data;
}
}  // namespace

int main(int argc, char** argv) {
  ex::trainer_cli cli("cocoa", "strata_cocoa: CoCoA+ (distributed SDCA) for linear SVMs and ridge / elastic-net regression");
  flags fl;
  ml::cocoa_trainer_options co;
  cli.data = "breast_cancer";
  cli.so.consistency = "bsp";  // CoCoA+ is a synchronous algorithm; --consistency ssp/essp/... relax it
  cli.add_flags(co, "V of VAP (total un-propagated update mass)", "rounds (one clock each)",
                "a libsvm file, or breast_cancer / diabetes / spam (scripts/fetch_data.sh)");
  auto& app = cli.app;
  app.add_option("--loss", fl.loss, "hinge (linear SVM, labels +1/-1) or squared (ridge / elastic net)")
      ->check(CLI::IsMember({"hinge", "squared"}))->capture_default_str();
  app.add_option("--lambda", fl.lambda, "λ: the regulariser's weight")->check(ex::positive)->capture_default_str();
  app.add_option("--l1-ratio", fl.l1_ratio, "ρ in [0, 1): the L1 share of λ (elastic net; scikit-learn's l1_ratio)")
      ->check(CLI::Range(0.0, 0.999999))->capture_default_str();
  app.add_option("--local-passes", co.local_passes, "SDCA steps per round, as passes over the worker's examples (H)")
      ->check(ex::positive)->capture_default_str();
  app.add_option("--aggregation", fl.aggregation, "adding (CoCoA+: σ' = K) or averaging (CoCoA: changes / K, σ' = 1)")
      ->check(CLI::IsMember({"adding", "averaging"}))->capture_default_str();
  app.add_option("--sigma", co.sigma, "σ' of the local subproblem (0: the aggregation's)")->check(ex::non_negative)->capture_default_str();
  app.add_option("--tolerance", co.tolerance, "stop after the first evaluated round with gap <= tolerance × P (0: never)")
      ->check(ex::non_negative)->capture_default_str();
  app.add_option("--block", co.block, "coordinates of v per parameter-server row")->check(ex::positive)->capture_default_str();
  app.add_flag("--standardize", fl.prep.standardize, "centre and scale every column (dense), centre the target (squared loss); diabetes sets it");
  app.add_flag("--normalize", fl.prep.normalize_rows, "scale each example to unit norm");
  app.add_option("--bias", fl.prep.bias, "append a constant feature of this value (0: none; regularised, as liblinear's -B)")
      ->capture_default_str();
  app.add_flag("--binarize", fl.prep.binarize, "labels > 0 become +1, the others -1 (0/1 data for the hinge loss)");
  app.add_option("--out", fl.out, "write w to FILE, one coordinate per line (as --save)");
  app.add_option("--elastic", fl.elastic,
                 "an elastic run over these worker counts (one process: --transport inproc or sim, one worker per host): segments of "
                 "--elastic-every rounds, the next m chosen from the trace (cost/elastic.hpp); needs --tolerance, --eval-every 1")
      ->check(ex::positive)->delimiter(',');
  app.add_option("--elastic-every", fl.elastic_every, "rounds per segment of an elastic run")->check(ex::positive)->capture_default_str();
  cli.finish_flags();
  CLI11_PARSE(app, argc, argv);
  return cli.guard([&] {
    refuse_unused_flags(app);
    if (cli.data == "diabetes") fl.prep.standardize = true;
    co.objective.loss = fl.loss == "hinge" ? ml::cocoa_loss::hinge : ml::cocoa_loss::squared;
    co.objective.lambda2 = fl.lambda * (1 - fl.l1_ratio);
    co.objective.lambda1 = fl.lambda * fl.l1_ratio;
    co.averaging = fl.aggregation == "averaging";
    co.keep_model = !fl.out.empty() || !cli.save.empty();
    ml::check_cocoa_options(co);
    const std::string file = data_file(cli.data);
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) throw std::runtime_error(file + " does not exist (scripts/fetch_data.sh lasso makes the named data sets)");
    const auto data = cli.timed_read([&] {
      const auto raw = ml::io::read_libsvm(file);
      if (raw.num_rows() == 0) throw strata::error(strata::errc::refused, file + ": no examples (the file is empty or holds only blank and '#' lines)");
      return ml::cocoa_prepare(raw, co.objective, fl.prep, file);
    });
    auto config = ex::run_config(cli.so, "cocoa", co.iterations);
    config.set("loss", fl.loss).set("lambda", fl.lambda).set("l1_ratio", fl.l1_ratio).set("local_passes", co.local_passes)
        .set("aggregation", fl.aggregation).set("sigma", co.sigma).set("tolerance", co.tolerance).set("eval_every", co.eval_every)
        .set("examples", data.size()).set("features", data.d).set("data", cli.data);
    if (!fl.elastic.empty()) {
      strata::json_value c = strata::json_value::array();
      for (auto m : fl.elastic) c.push_back(strata::json_value(m));
      config.set("elastic", std::move(c)).set("elastic_every", fl.elastic_every);
    }
    strata::trace_writer trace(cli.lead() ? cli.metrics : std::string(), config);
    ex::progress_line line(cli.quiet || !cli.lead());
    const auto progress = ex::progress_printer(line, cli.so, "cocoa", co.iterations, [](double gap) { return ex::fmt("gap %.3e", gap); });
    cli.phase = "training";
    ml::cocoa_elastic_run res;
    if (fl.elastic.empty()) {
      static_cast<ml::cocoa_run&>(res) = ex::with_system(cli.so, [&](auto& sys) { return ml::train_cocoa(sys, data, co, progress); });
    } else {
      if (cli.so.is_distributed()) throw std::runtime_error("--elastic runs in one process: --transport inproc or sim");
      const bool sim = cli.so.transport == "sim";
      strata::cost::elastic_policy policy;
      const auto segment = [&](std::uint32_t m, const ml::cocoa_trainer_options& o) {
        return ex::with_system(cli.so.with_machines(m), [&](auto& sys) { return ml::train_cocoa(sys, data, o); });
      };
      res = ml::train_cocoa_elastic(data, co, {fl.elastic, fl.elastic_every, !sim}, policy, segment, progress);
    }
    line.done();
    strata::json_value::object_type none;
    for (const auto& it : res.iterations) {  // elastic: each line says its segment's m
      auto extra = none;
      for (std::size_t k = 0; k < res.segments.size(); ++k)
        if (it.iteration <= res.segments[k].last) {
          extra.emplace_back("segment", strata::json_value(k));
          extra.emplace_back("segment_workers", strata::json_value(res.segments[k].workers));
          break;
        }
      trace.write(it, extra);
    }
    trace.close();
    for (const auto& sg : res.segments)
      if (cli.lead())
        std::printf("cocoa elastic: rounds %u-%u m=%u (switch %.3f s): %s\n", sg.first, sg.last, sg.workers, sg.switch_seconds, sg.reason.c_str());
    auto so_summary = cli.so;  // an elastic run's last m
    if (!res.segments.empty()) so_summary.nodes = 1, so_summary.workers = res.segments.back().workers;
    ex::summary s("cocoa", so_summary, res.rounds);
    if (!res.segments.empty()) s.add("segments", std::to_string(res.segments.size()));
    s.add("loss", fl.loss).add("n", std::to_string(data.size())).add("d", std::to_string(data.d)).add("lambda", ex::fmt("%.6g", fl.lambda));
    s.add("seconds", ex::fmt("%.3f", res.seconds), true).add("primal", ex::fmt("%.12g", res.primal)).add("dual", ex::fmt("%.12g", res.dual));
    s.add("gap", ex::fmt("%.3e", res.gap())).add("rel_gap", ex::fmt("%.3e", res.gap() / std::abs(res.primal)));
    s.add("steps", std::to_string(res.steps)).add_run(res).add("setup_seconds", ex::fmt("%.3f", res.setup_seconds), true);
    s.add("read_seconds", ex::fmt("%.3f", cli.read_seconds), true);
    s.print();
    if (cli.lead() && !res.w.empty()) {
      std::string model;
      for (double x : res.w) model += ex::fmt("%.17g", x) + '\n';
      for (const auto& path : {fl.out, cli.save})
        if (!path.empty()) strata::write_file_atomic(path, model);
    }
    if (co.tolerance > 0 && !res.converged) {
      std::fprintf(stderr, "strata_cocoa: not converged: gap %.3g > tolerance %.3g x P after %u rounds (raise --iterations or --tolerance)\n",
                   res.gap(), co.tolerance, res.rounds);
      return 3;
    }
    return 0;
  });
}
