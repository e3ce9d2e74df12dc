// strata_plan: which configuration reaches the target fastest, from a few short probe runs
// (Hemingway / Ernest, include/strata/cost/). It chooses probes of the MF, LDA or Lasso trainer on data
// fractions and small worker counts by A-optimal design under a time budget, runs them in-process
// (delayed<inproc> with --delay), fits the system model (time per iteration) and the convergence
// model (objective per iteration) from their traces, predicts time to the target for held-out
// configurations (larger data, more workers, every consistency model and staleness), prints a
// ranked table and writes the fit as JSON; --measure also runs the held-out configurations and
// reports the prediction errors.
//
//   strata_plan --trainer mf --budget 30 --delay 200 --out plan.json --measure
//   strata_plan --trainer lda --data ~/.cache/strata/docword.spam.txt --max-docs 2000 --budget 40
//   strata_plan --trainer lasso --data ~/.cache/strata/spam.libsvm --lambda-fraction 0.01 --budget 30
//   strata_plan --trainer cocoa --data FILE --loss squared --lambda 1e-2 --optimum 0 --target 6e-6 --fractions 1 --probe-workers 1 2 3
//
// Lasso (STRADS rounds, apps/trainers/lasso_trainer.hpp): the consistency models do not apply, so
// every configuration is "bsp" and the plan is over data fractions and worker counts. One
// iteration is one evaluation of the trace, --evaluate-every rounds (their time includes the
// evaluation's pass over the data). A data fraction is a fixed random subset of the rows, its
// problem built from those rows alone (λ = --lambda-fraction × that problem's λ_max). The followed
// quantity is the duality gap (--quantity metric, the default), 0 at every subset's optimum;
// --quantity objective follows F(β) itself (per row already), whose optimum differs by subset.
//
// CoCoA+ (apps/trainers/cocoa_trainer.hpp; docs/cocoa.md): an iteration is a round, the followed
// quantity its true duality gap (optimum 0: pass --optimum 0), the plan over m and data fractions
// under BSP; its convergence model adds i·log m and i·[m = 1] (with_rate_log_m) to Hemingway's features. With
// --platform, m is m simulated hosts of one worker each.
//
// Every followed value is the true model's (MF and LDA probes evaluate a consistent snapshot every
// iteration, charged out of their timing), never a worker's stale view. With a known --optimum,
// points below 1e-12 of a probe's first value above it are dropped as rounding (the numerical floor).
#include <CLI/CLI.hpp>

#include <strata/core/atomic_file.hpp>
#include <strata/core/trace.hpp>
#include <strata/cost/design.hpp>
#include <strata/cost/evaluate.hpp>
#include <strata/cost/planner.hpp>
#include <strata/cost/probing.hpp>
#include <strata/cost/trace_fit.hpp>
#include <strata/ml/io/bag_of_words.hpp>
#include <strata/ml/io/libsvm.hpp>
#include <strata/ml/io/ratings.hpp>
#include <strata/ml/lasso.hpp>
#include <trainers/cocoa_trainer.hpp>
#include <trainers/lasso_trainer.hpp>
#include <trainers/lda_trainer.hpp>
#include <trainers/mf_trainer.hpp>

#include "common/cli.hpp"
#include "common/lasso_scheduler.hpp"
#include "common/metrics.hpp"
#include "common/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {
namespace ex = strata::examples;
namespace ml = strata::ml;
namespace cost = strata::cost;
using system_f = cost::with_sync<cost::with_push<cost::with_staleness<cost::with_cores<cost::ernest_features>>>>;
using convergence_f = cost::with_scale<cost::with_staleness_drag<cost::hemingway_features>>;
/// CoCoA+: the rate of decay also changes with m (σ' = m damps every worker's steps): linear in
/// log m, one worker apart (with_rate_log_m; i/m, with_rate_per_worker, failed the first blind
/// evaluation: benchmarks/results/cocoa/REPORT.md).
using cocoa_convergence_f = cost::with_rate_log_m<convergence_f>;

struct flags {
  std::string trainer = "mf", data, out = "plan.json", trace_dir, quantity;
  double optimum = std::numeric_limits<double>::quiet_NaN();  // f* of the followed quantity (NaN: estimate)
  std::string platform, sim_cpu = "measured";  // --platform: probes on a simulated cluster (--transport sim)
  std::string refit;                            // --refit DIR: fit on probe_*.jsonl already there, run no probe
  double budget = 30, delay_us = 0, quantile = 0.0, target = std::numeric_limits<double>::quiet_NaN(), unbounded = 8;
  std::uint32_t warmup = 0, probe_iterations = 10, measure_iterations = 30, max_docs = 2000, topics = 20, rank = 16, work_repeat = 1;
  std::uint64_t seed = 1;
  double lambda_fraction = 0.01;                  // lasso
  std::uint32_t batch = 64, evaluate_every = 50;  // lasso
  bool standardize = false;                       // lasso
  ex::lasso_scheduler_options sched;              // lasso
  std::string loss = "squared";                   // cocoa
  double cocoa_lambda = 1e-2, local_passes = 1;   // cocoa
  bool binarize = false;                          // cocoa
  std::vector<double> fractions{0.1, 0.2, 0.3}, probe_workers{1, 2, 3}, heldout_fractions{1.0}, heldout_workers{1, 2, 3, 4};
  std::vector<std::string> probe_models{"bsp", "ssp:2", "essp:2"}, heldout_models{"bsp", "ssp:1", "ssp:3", "essp:1", "essp:3", "vap", "async"};
  bool measure = false;
};

/// The first max(1, s·n) indices of a fixed shuffle of 0..n-1: the same subset for every run of a
/// fraction s, and a larger fraction's subset holds a smaller one's.
std::vector<std::size_t> subset(std::size_t n, double s, std::uint64_t seed) {
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::mt19937_64 rng(seed);
  std::shuffle(idx.begin(), idx.end(), rng);
  idx.resize(std::max<std::size_t>(1, static_cast<std::size_t>(s * static_cast<double>(n))));
  return idx;
}

/// The data of one trainer, and a run of it on a fraction of the data with one configuration.
struct workload {
  ml::io::rating_set train, test;  // mf
  ml::lda_corpus corpus;           // lda
  ml::io::libsvm_data rows;        // lasso, cocoa
  const flags* f = nullptr;

  /// Runs `p` for `iterations` and writes its trace to `file`.
  void run(const cost::probe_point& p, std::uint32_t iterations, const std::filesystem::path& file) const {
    ex::system_options so;
    so.consistency = p.consistency;
    so.staleness = static_cast<int>(p.consistency == "ssp" || p.consistency == "essp" ? p.staleness : 0);
    so.workers = static_cast<std::uint32_t>(p.workers);
    so.delay_us = f->delay_us;
    so.value_bound = f->trainer == "mf" ? 1000 : 20000;
    so.seed = f->seed;
    if (!f->platform.empty()) {  // the probes' workers on host 0 of the simulated cluster; simulated times
      so.transport = "sim";
      so.platform = f->platform;
      so.sim_cpu = f->sim_cpu;
      if (f->trainer == "cocoa") so = so.with_machines(so.workers);  // CoCoA+'s m is machines: one worker on each of m hosts
    }
    so.resolve();
    auto cfg = ex::run_config(so, f->trainer, iterations);
    cfg.set("scale", p.scale).set("cores", p.cores);
    const auto its = f->trainer == "mf"      ? run_mf(so, p.scale, iterations, cfg)
                     : f->trainer == "lda"   ? run_lda(so, p.scale, iterations, cfg)
                     : f->trainer == "cocoa" ? run_cocoa(so, p.scale, iterations, cfg)
                                             : run_lasso(so, p.scale, iterations, cfg);
    strata::trace_writer tw(file, cfg);
    tw.write(its);
    tw.close();
  }

 private:
  std::vector<strata::iteration_record> run_mf(const ex::system_options& so, double scale, std::uint32_t iterations, strata::json_value& cfg) const {
    auto sub = train;
    sub.ratings.clear();
    for (auto i : subset(train.size(), scale, f->seed)) sub.ratings.push_back(train.ratings[i]);
    ml::mf_trainer_options o;
    o.iterations = iterations, o.seed = f->seed, o.rank = f->rank, o.work_repeat = f->work_repeat;
    o.eval_every = 1;  // the true model's RMSE every iteration (a consistent snapshot, charged out of the timing), not a worker's view
    cfg.set("train_ratings", sub.size()).set("rank", o.rank).set("work_repeat", o.work_repeat);
    return ex::with_system(so, [&](auto& sys) { return ml::train_mf(sys, sub, test, o); }).iterations;
  }

  std::vector<strata::iteration_record> run_lda(const ex::system_options& so, double scale, std::uint32_t iterations, strata::json_value& cfg) const {
    ml::lda_corpus sub;
    sub.vocab_size = corpus.vocab_size;
    for (auto d : subset(corpus.words.size(), scale, f->seed)) sub.words.push_back(corpus.words[d]), sub.counts.push_back(corpus.counts[d]);
    ml::lda_trainer_options o;
    o.iterations = iterations, o.seed = f->seed, o.topics = f->topics;
    o.eval_every = 1;  // the true model's log-likelihood every iteration, not a worker's view
    cfg.set("tokens", sub.tokens()).set("topics", o.topics);
    return ex::with_system(so, [&](auto& sys) { return ml::train_lda(sys, sub, o); }).iterations;
  }

  /// The rows of a fraction `scale` of `rows` (the same subset for every run of that fraction).
  ml::io::libsvm_data row_subset(double scale) const {
    ml::io::libsvm_data sub;
    sub.num_features = rows.num_features;  // every column, some perhaps empty in a small subset
    auto keep = subset(rows.num_rows(), scale, f->seed);
    std::sort(keep.begin(), keep.end());  // the file's order: the full fraction is the trainer's own data, row for row
    for (auto i : keep) {
      const auto idx = rows.row_indices(i);
      const auto val = rows.row_values(i);
      sub.labels.push_back(rows.labels[i]);
      sub.indices.insert(sub.indices.end(), idx.begin(), idx.end());
      sub.values.insert(sub.values.end(), val.begin(), val.end());
      sub.row_offsets.push_back(sub.indices.size());
    }
    return sub;
  }

  /// CoCoA+: one round per iteration, the true model's duality gap after every round.
  std::vector<strata::iteration_record> run_cocoa(const ex::system_options& so, double scale, std::uint32_t iterations, strata::json_value& cfg) const {
    ml::cocoa_trainer_options o;
    o.objective.loss = f->loss == "hinge" ? ml::cocoa_loss::hinge : ml::cocoa_loss::squared;
    o.objective.lambda2 = f->cocoa_lambda;
    o.iterations = iterations, o.seed = f->seed, o.local_passes = f->local_passes, o.eval_every = 1;
    const auto data = ml::cocoa_prepare(row_subset(scale), o.objective, {.binarize = f->binarize}, f->data);
    cfg.set("examples", data.size()).set("features", data.d).set("loss", f->loss).set("lambda", f->cocoa_lambda).set("local_passes", o.local_passes);
    return ex::with_system(so, [&](auto& sys) { return ml::train_cocoa(sys, data, o); }).iterations;
  }

  /// Lasso: `iterations` trace points after the first, `evaluate_every` rounds apart (no early
  /// stop); the trace's iteration k is round k × evaluate_every. F is per row already (no "size").
  std::vector<strata::iteration_record> run_lasso(const ex::system_options& so, double scale, std::uint32_t iterations, strata::json_value& cfg) const {
    const auto prob = ml::lasso_problem::from(row_subset(scale), {.center_y = true, .standardize_x = f->standardize});
    ml::lasso_trainer_options o;
    o.lambda_fraction = f->lambda_fraction, o.batch = f->batch, o.evaluate_every = f->evaluate_every, o.tolerance = 0;
    o.rounds = std::uint64_t{iterations} * f->evaluate_every + 1;  // evaluations at rounds 0, E, ..., iterations × E
    const auto res = ex::with_system(so, strata::model_params{}, [&](auto& sys) {
      return ex::with_lasso_scheduler(f->sched, f->seed, [&](auto s) { return ml::train_lasso(sys, prob, s, o); });
    });
    cfg.set("rows", prob.n).set("columns", prob.d).set("lambda", res.lambda).set("scheduler", f->sched.name).set("batch", o.batch)
        .set("evaluate_every", o.evaluate_every);
    auto its = res.trace();
    for (auto& r : its) r.iteration /= f->evaluate_every;
    return its;
  }
};

/// --refit: the probe traces of an earlier plan, probe_0.jsonl, probe_1.jsonl, ... in order.
std::vector<cost::run_trace> read_probes(const std::filesystem::path& dir, const cost::trace_fit_options& to) {
  std::vector<cost::run_trace> out;
  for (std::size_t k = 0;; ++k) {
    const auto file = dir / ("probe_" + std::to_string(k) + ".jsonl");
    if (!std::filesystem::exists(file)) break;
    out.push_back(cost::read_run_trace(file, to));
  }
  if (out.empty()) throw std::invalid_argument("--refit " + dir.string() + ": no probe_0.jsonl there");
  return out;
}

std::vector<cost::model_choice> parse_models(const std::vector<std::string>& names) {
  std::vector<cost::model_choice> m;
  for (const auto& n : names) m.push_back(cost::model_choice::parse(n));
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("strata_plan: predict the fastest configuration from short probe runs (Hemingway/Ernest cost models)");
  flags f;
  app.add_option("--trainer", f.trainer, "mf|lda|lasso|cocoa")->check(CLI::IsMember({"mf", "lda", "lasso", "cocoa"}))->capture_default_str();
  app.add_option("--data", f.data, "mf: folder with ratings.train/test.txt; lda: a docword file; lasso: a libsvm file "
                 "(default: ~/.cache/strata, lasso: spam.libsvm)");
  app.add_option("--budget", f.budget, "seconds of probe runs (the design's budget)")->check(ex::positive)->capture_default_str();
  app.add_option("--delay", f.delay_us, "injected latency per message, microseconds (delayed<inproc>)")->check(ex::non_negative)->capture_default_str();
  app.add_option("--platform", f.platform,
                 "run the probes on a simulated cluster (--transport sim; a platform file, examples/platforms/*.txt): their "
                 "workers on its host 0, their times simulated")
      ->check(CLI::ExistingFile);
  app.add_option("--sim-cpu", f.sim_cpu,
                 "with --platform: what compute costs; measured only (a probe's parties share one node, whose messages "
                 "cost no transfer: with compute free too its iterations would take no simulated time)")
      ->check(CLI::IsMember({"measured"}))
      ->capture_default_str();
  app.add_option("--warmup", f.warmup, "iterations of the start-up phase, timed apart (default: mf 5, one epoch + 1; lda 1)");
  app.add_option("--probe-iterations", f.probe_iterations, "iterations per probe")->check(CLI::Range(3u, 100000u))->capture_default_str();
  app.add_option("--fractions", f.fractions, "data fractions the probes may use")->check(ex::fraction)->capture_default_str();
  app.add_option("--probe-workers", f.probe_workers, "worker counts the probes may use")->check(ex::positive)->capture_default_str();
  auto* probe_models = app.add_option("--probe-models", f.probe_models, "consistency models the probes may use (bsp, ssp:S, essp:S, vap, async)")->capture_default_str();
  app.add_option("--heldout-fractions", f.heldout_fractions, "data fractions to predict")->check(ex::fraction)->capture_default_str();
  app.add_option("--heldout-workers", f.heldout_workers, "worker counts to predict")->check(ex::positive)->capture_default_str();
  auto* heldout_models = app.add_option("--heldout-models", f.heldout_models, "consistency models to predict")->capture_default_str();
  app.add_option("--unbounded-staleness", f.unbounded, "staleness the models assume for async and vap")->check(ex::non_negative)->capture_default_str();
  app.add_option("--target", f.target, "target value of the followed quantity (minimised; LDA's loglik is negated)");
  app.add_option("--optimum", f.optimum, "the followed quantity's optimum f*, when known (default: estimated by profile search)");
  app.add_option("--target-quantile", f.quantile, "without --target: this quantile of the probes' final values")->capture_default_str();
  app.add_option("--quantity", f.quantity, "what the convergence model follows: objective (per data item) or metric (default: mf metric = test "
                 "RMSE, lda objective = -loglik per token, lasso metric = duality gap)")->check(CLI::IsMember({"objective", "metric"}));
  app.add_flag("--measure", f.measure, "also run every held-out configuration and report the prediction errors");
  app.add_option("--measure-iterations", f.measure_iterations, "iterations of each measured run")->capture_default_str();
  app.add_option("--out", f.out, "the fit, the ranking and the checks as JSON")->capture_default_str();
  app.add_option("--trace-dir", f.trace_dir, "where the runs' traces go (default: OUT's name + .traces)");
  app.add_option("--refit", f.refit, "run no probe: fit on the probe traces of an earlier plan (DIR/probe_0.jsonl, probe_1.jsonl, ...) and rank")
      ->check(CLI::ExistingDirectory);
  app.add_option("--max-docs", f.max_docs, "lda: documents of the full data (0: all)")->capture_default_str();
  app.add_option("--topics", f.topics, "lda: topics")->capture_default_str();
  app.add_option("--rank", f.rank, "mf: factor rank")->capture_default_str();
  app.add_option("--work-repeat", f.work_repeat, "mf: repeat each SGD pass (heavier compute)")->capture_default_str();
  app.add_option("--lambda-fraction", f.lambda_fraction, "lasso: λ as a fraction of each subset's λ_max")->capture_default_str();
  app.add_option("--batch", f.batch, "lasso: coefficients per round")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--evaluate-every", f.evaluate_every, "lasso: rounds per iteration (one trace point)")->check(strata::examples::positive)
      ->capture_default_str();
  app.add_option("--scheduler", f.sched.name, "lasso: round_robin|random|priority|filtered|random-filtered")
      ->check(CLI::IsMember({"round_robin", "random", "priority", "filtered", "random-filtered"}))->capture_default_str();
  app.add_option("--rho", f.sched.rho, "lasso, filtered schedulers: reject |correlation| >= rho")->capture_default_str();
  app.add_flag("--standardize", f.standardize, "lasso: centre and scale each column (kept sparse)");
  app.add_option("--loss", f.loss, "cocoa: hinge (labels +1/-1; see --binarize) or squared")->check(CLI::IsMember({"hinge", "squared"}))->capture_default_str();
  app.add_option("--lambda", f.cocoa_lambda, "cocoa: λ, the L2 weight")->check(ex::positive)->capture_default_str();
  app.add_option("--local-passes", f.local_passes, "cocoa: SDCA steps per round, as passes over a worker's examples")->check(ex::positive)->capture_default_str();
  app.add_flag("--binarize", f.binarize, "cocoa: labels > 0 become +1, the others -1");
  app.add_option("--seed", f.seed, "random seed (runs, data subsets, bootstrap)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    const double cores = std::max(1u, std::thread::hardware_concurrency());
    workload w;
    w.f = &f;
    if (f.data.empty())
      f.data = ex::default_data_dir() + (f.trainer == "lda" ? "/docword.spam.txt" : f.trainer == "lasso" ? "/spam.libsvm" : f.trainer == "cocoa" ? "/breast_cancer.libsvm" : "");
    if (f.trainer == "mf") {
      w.train = ml::io::read_ratings(std::filesystem::path(f.data) / "ratings.train.txt");
      w.test = ml::io::read_ratings(std::filesystem::path(f.data) / "ratings.test.txt");
      ml::io::share_ids(w.train, w.test);  // one id space (sparse ids are remapped per file)
    } else if (f.trainer == "lda") {
      w.corpus = ml::lda_corpus::from(ml::io::read_bag_of_words(std::filesystem::path(f.data)), f.max_docs);
      ex::check_memory(f.data, static_cast<long double>(w.corpus.tokens()) * 4,
                       std::to_string(w.corpus.tokens()) + " tokens' topic assignments (4 bytes per token)");
    } else if (f.trainer == "cocoa") {
      w.rows = ml::io::read_libsvm(std::filesystem::path(f.data));
      // CoCoA+ is a synchronous algorithm: the plan is over m (and data fractions) under BSP unless asked.
      if (probe_models->count() == 0) f.probe_models = {"bsp"};
      if (heldout_models->count() == 0) f.heldout_models = {"bsp"};
    } else {
      const std::size_t max_message = strata::system_config{}.max_message;
      w.rows = ml::io::read_libsvm(std::filesystem::path(f.data), {ml::lasso_max_columns(max_message), ml::lasso_columns_why(max_message)});
      // STRADS rounds have no consistency model: every Lasso configuration is "bsp".
      const std::vector<std::string> bsp{"bsp"};
      if (probe_models->count() == 0) f.probe_models = bsp;
      if (heldout_models->count() == 0) f.heldout_models = bsp;
      if (f.probe_models != bsp || f.heldout_models != bsp)
        throw std::invalid_argument("--trainer lasso: the consistency models do not apply to STRADS rounds (use bsp only)");
    }
    // --out is created (as a temporary beside it) before any probe runs, so a path that cannot be
    // written fails now, naming it; the fit replaces it whole at the end, or not at all.
    strata::atomic_file out_file(f.out);
    const std::filesystem::path dir = f.trace_dir.empty() ? f.out + ".traces" : f.trace_dir;
    if (f.refit.empty() || f.measure) std::filesystem::create_directories(dir);  // --refit runs nothing, unless --measure
    const double latency = f.delay_us * 1e-6;
    // Lasso follows its duality gap: 0 at the optimum of every subset's problem, where F(β*) differs
    // from subset to subset (fewer rows fit better) and one fitted f* cannot serve them all.
    if (f.quantity.empty()) f.quantity = f.trainer == "lda" ? "objective" : "metric";
    cost::trace_fit_options to{.quantity = f.quantity == "metric" ? cost::fit_quantity::metric : cost::fit_quantity::objective,
                                     .unbounded_staleness = f.unbounded, .cores = cores};

    if (f.warmup == 0) f.warmup = f.trainer == "mf" ? 5 : 1;
    to.warmup = f.warmup;
    if (f.probe_iterations < f.warmup + 2) throw std::invalid_argument("--probe-iterations must be at least --warmup + 2");

    // The probes, the fits and the ranking: cost::plan (cost/probing.hpp), which runs each probe
    // through `program` (a trace file per probe, read back as the models read any trace).
    auto grid = cost::grid(f.probe_workers, f.fractions, parse_models(f.probe_models), latency, cores, f.unbounded);
    if (grid.size() < system_f::size)
      throw std::invalid_argument(std::to_string(grid.size()) + " probe candidates (fractions x workers x models); the system model needs at least " +
                                  std::to_string(system_f::size));
    const auto heldout = cost::grid(f.heldout_workers, f.heldout_fractions, parse_models(f.heldout_models), latency, cores, f.unbounded);
    std::size_t probe_count = 0;
    auto program = [&](const cost::probe_point& p, std::uint32_t iterations) {
      const auto file = dir / ("probe_" + std::to_string(probe_count) + ".jsonl");
      std::printf("probe %zu: %s\n", probe_count++, p.describe().c_str());
      std::fflush(stdout);
      w.run(p, iterations, file);
      return cost::read_run_trace(file, to);
    };
    // Every quantity followed is >= 0 (RMSE, per-item loss, -loglik per token, Lasso's and CoCoA+'s gap): f* too.
    const cost::probing_options po{.budget_s = f.budget,
                                   .probe_iterations = f.probe_iterations,
                                   .fit = to,
                                   .convergence = {.optimum = f.optimum, .lower_bound = 0.0},
                                   .planner = {.seed = f.seed, .max_iterations = 50.0 * f.measure_iterations},
                                   .target_quantile = f.quantile};
    std::vector<cost::plan_entry> ranked;
    std::vector<cost::run_trace> probes;
    std::vector<cost::timing_point> tp;
    strata::json_value conv_json, sys_json, startup_json;
    double optimum = 0, probe_s = 0;
    std::size_t in_budget = 0;
    // CoCoA+'s convergence model has its own features (cocoa_convergence_f).
    auto plan_with = [&]<class CF>(std::type_identity<CF>) {
      auto r = f.refit.empty() ? cost::plan<system_f, CF>(program, grid, heldout, f.target, po)
                               : cost::fit_and_rank<system_f, CF>(read_probes(f.refit, to), heldout, f.target, po);
      ranked = std::move(r.ranked), probes = std::move(r.probes), tp = std::move(r.timings);
      conv_json = r.convergence->to_json(), sys_json = r.system->to_json(), startup_json = r.startup->to_json();
      optimum = r.convergence->optimum(), probe_s = r.probe_seconds, in_budget = r.in_budget, f.target = r.target;
    };
    if (f.trainer == "cocoa")
      plan_with(std::type_identity<cocoa_convergence_f>{});
    else
      plan_with(std::type_identity<convergence_f>{});
    if (probes.size() > in_budget)
      std::printf("strata_plan: --budget %g s bought %zu probe(s), too few for the system model (it needs %zu); ran %zu in %.1f s\n", f.budget,
                  in_budget, system_f::size, probes.size(), probe_s);
    std::printf("\nstrata_plan: %s, %zu probes in %.1f s (budget %g s), target %.6g (f* %.6g)\n%s", f.trainer.c_str(), probes.size(),
                probe_s, f.budget, f.target, optimum, cost::format_plan(ranked).c_str());

    strata::json_value probes_json = strata::json_value::array();
    for (std::size_t k = 0; k < probes.size(); ++k)
      probes_json.push_back(strata::json_value::object()
                                .set("config", cost::to_json(probes[k].config))
                                .set("seconds_per_iteration", tp[k].seconds_per_iteration)
                                .set("trace", probes[k].file));
    auto out = strata::json_value::object();
    out.set("trainer", f.trainer).set("quantity", f.quantity).set("target", f.target).set("probe_seconds", probe_s).set("budget", f.budget)
        .set("probes", std::move(probes_json)).set("warmup", f.warmup).set("system_model", std::move(sys_json)).set("startup_model", std::move(startup_json)).set("convergence_model", std::move(conv_json))
        .set("ranking", cost::to_json(ranked));

    if (f.measure) {
      std::vector<cost::heldout_check> checks;
      for (const auto& e : ranked) {
        const auto file = dir / ("heldout_" + std::to_string(checks.size()) + ".jsonl");
        w.run(e.config, f.measure_iterations, file);
        const auto r = cost::read_run_trace(file, to);
        const auto reach = cost::time_to(r, f.target);
        checks.push_back({e.config, e.seconds_per_iteration, cost::timing_of(r, to).seconds_per_iteration, e.seconds, reach.seconds,
                          e.iterations, reach.iteration});
        const auto& c = checks.back();
        std::printf("measured %-36s s/it %.4f (predicted %.4f)  time to target %s (predicted %.2f s)\n", c.config.describe().c_str(),
                    c.measured_seconds_per_iteration, c.predicted_seconds_per_iteration,
                    c.measured_seconds >= 0 ? ex::fmt("%.2f s", c.measured_seconds).c_str() : "not reached", c.predicted_seconds);
      }
      const auto ev = cost::evaluate(checks);
      // Every case in words: no NaN or inf percentages (a target none reached once printed "nan% slower").
      const std::string to_target = ev.timed > 0 ? ex::fmt("time to target %.1f%% (%zu configs)", 100 * ev.median_error_seconds, ev.timed)
                                                 : std::string("time to target: no configuration both predicted and measured to reach it");
      const bool any_reached = std::any_of(checks.begin(), checks.end(), [](const auto& c) { return c.measured_seconds >= 0; });
      const bool any_predicted = std::any_of(checks.begin(), checks.end(), [](const auto& c) { return std::isfinite(c.predicted_seconds); });
      std::string verdict;
      if (!any_reached)
        verdict = ex::fmt("no measured configuration reached the target %g in %u iterations: the pick cannot be judged", f.target, f.measure_iterations);
      else if (!any_predicted)
        verdict = "the model predicted no configuration to reach the target: there is no pick; the measured best is " + checks[ev.best].config.describe();
      else if (!std::isfinite(ev.pick_slowdown))
        verdict = "pick " + checks[ev.pick].config.describe() + " did not reach the target in the measured run; the measured best is " +
                  checks[ev.best].config.describe();
      else
        verdict = ex::fmt("pick %s is %.1f%% slower than the measured best %s", checks[ev.pick].config.describe().c_str(), 100 * ev.pick_slowdown,
                          checks[ev.best].config.describe().c_str());
      std::printf("strata_plan: median relative error: time/iteration %.1f%%, %s; %s\n", 100 * ev.median_error_seconds_per_iteration,
                  to_target.c_str(), verdict.c_str());
      out.set("heldout", cost::to_json(checks, ev));
    }
    out_file.write(out.dump() + '\n');
    out_file.commit();
    std::printf("strata_plan: fit written to %s\n", f.out.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_plan: %s\n", e.what());
    return 1;
  }
}
