// strata_mf: data-parallel SGD matrix factorisation on the parameter server (see
// apps/trainers/mf_trainer.hpp for the algorithm). Trains on MovieLens small as
// scripts/fetch_data.sh caches it (ratings.train.txt / ratings.test.txt, a fixed 90/10 split)
// and reports test RMSE per iteration. The model file format is in include/strata/ml/mf_model.hpp.
// --mode rotation runs the same SGD by DSGD-style block rotation (workers own disjoint item groups
// each clock and rotate them: P clocks per epoch; see mf_trainer.hpp).
// --mode ccd trains by STRADS coordinate descent instead (CCD++, apps/trainers/mf_ccd.hpp:
// --iterations are passes over every column, --inner rounds per column; no table, so --consistency
// does not matter; --lr, --decay, --block, --save, --load, --predict do not apply).
//
//   strata_mf --consistency essp --staleness 2 --workers 4 --iterations 30 --metrics mf.jsonl --save mf.model
//   strata_mf --mode rotation --workers 2 --consistency bsp --iterations 40
//   strata_mf --mode ccd --workers 2 --rank 16 --lambda 5 --iterations 10
//   strata_mf --load mf.model --iterations 0 --predict pairs.txt --predictions predicted.txt
//   strata_mf --consistency ssp --staleness 0 --adaptive 10 --adaptive-candidates 0,1,2,4 --delay 200
//     (adaptive mode: every 10 iterations re-plan the staleness bound from the run's own trace,
//      include/strata/cost/adaptive.hpp; the trace's lines carry "staleness_bound" and "segment")
//   scripts/launch.sh -n 2 -- strata_mf --transport tcp --workers 2 --consistency essp   (2 processes)
#include <CLI/CLI.hpp>

#include <strata/core/trace.hpp>
#include <strata/ml/io/ratings.hpp>
#include <strata/ml/mf_model.hpp>
#include <strata/cost/adaptive.hpp>
#include <trainers/adaptive.hpp>
#include <trainers/mf_elastic.hpp>
#include <trainers/mf_ccd.hpp>
#include <trainers/mf_trainer.hpp>

#include "common/cli.hpp"
#include "common/metrics.hpp"
#include "common/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {
namespace ex = strata::examples;
namespace ml = strata::ml;
using pairs = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

/// --predict IN --predictions OUT, --mode / --inner, and --adaptive K / --adaptive-candidates.
struct prediction_flags {
  std::string in, out;
  std::string mode = "sgd";
  std::uint32_t inner = 1;
  std::uint32_t adaptive = 0;       ///< 0: off
  std::vector<int> candidates;      ///< staleness bounds the adaptive mode chooses from
  double target = std::numeric_limits<double>::quiet_NaN();
  double min_gap = 0;               ///< refit_options::min_gap
  std::uint32_t repeat = 1;         ///< runs of the whole training in this process (the last one is reported)
  std::vector<std::uint32_t> elastic;  ///< candidate m of an elastic run (empty: a fixed run)
  std::uint32_t elastic_every = 10;
};

void add_model_flags(CLI::App& app, ml::mf_trainer_options& mo, prediction_flags& pf) {
  app.add_option("--rank", mo.rank, "factor rank (with --load: the model's)")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--lr", mo.lr, "initial learning rate")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--decay", mo.decay, "learning-rate decay: lr/(1+decay*t)")->check(strata::examples::non_negative)->capture_default_str();
  app.add_option("--lambda", mo.lambda, "regularisation weight of the loss")->check(strata::examples::non_negative)->capture_default_str();
  app.add_flag("--user-order", mo.user_order,
               "visit each item block's ratings in user order (blocks in random order: LIBMF's partial random order), "
               "not shuffled: far fewer cache misses once the users' factors outgrow the cache");
  app.add_flag("--weighted-lambda", mo.weighted_lambda,
               "weigh each user's and item's norm in the loss by its rating count (ALS-WR; LIBMF's per-step lambda): every SGD step "
               "takes lambda, so try --lambda near LIBMF's 0.01-0.1");
  app.add_option("--clocks-per-epoch", mo.clocks_per_epoch, "clocks per pass over the data")->check(strata::examples::positive)->capture_default_str();
  app.add_flag("--average-items", mo.average_items,
               "data-parallel SGD: divide each worker's change to an item by the number of workers that rate it (parameter averaging; "
               "without it, many workers' steps on a popular item add up and SGD diverges)");
  app.add_option("--block", mo.block, "users/items per parameter-server row")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--work-repeat", mo.work_repeat, "repeat each SGD pass (emulates heavier compute)")->capture_default_str();
  app.add_option("--mode", pf.mode,
                 "sgd: data-parallel SGD on the parameter server; rotation: SGD by block rotation (DSGD: disjoint item groups "
                 "per clock, P clocks per epoch); ccd: STRADS coordinate descent (CCD++)")
      ->check(CLI::IsMember({"sgd", "rotation", "ccd"}))
      ->capture_default_str();
  app.add_option("--repeat", pf.repeat,
                 "train N times in this process, each run from scratch on a fresh system (same seed, same result); the "
                 "trace, summary and outputs are the last run's, whose threads and memory are warm, as a peer timed by "
                 "repeated calls in one process (benchmarks/perf_experiment.py); the summary adds each run's seconds")
      ->check(strata::examples::positive)
      ->capture_default_str();
  app.add_option("--inner", pf.inner, "--mode ccd: rounds per column per iteration")->check(strata::examples::positive)->capture_default_str();
  auto* in = app.add_option("--predict", pf.in, "predict ratings for the \"user item\" lines of FILE (after training)");
  auto* out = app.add_option("--predictions", pf.out, "write the --predict results to FILE, \"user item predicted_rating\"");
  in->needs(out);
  out->needs(in);
  app.add_option("--adaptive", pf.adaptive, "re-plan the staleness bound every K iterations from the run's trace (ssp/essp; 0: off)")
      ->capture_default_str();
  app.add_option("--adaptive-candidates", pf.candidates, "staleness bounds --adaptive chooses from, e.g. 0,1,2,4")
      ->delimiter(',')
      ->check(strata::examples::non_negative);
  app.add_option("--adaptive-target", pf.target, "test RMSE the adaptive policy aims at (default: halve the gap); --elastic: stops there");
  app.add_option("--elastic", pf.elastic,
                 "an elastic run over these worker counts (one process: --transport inproc, or sim with one worker per host): "
                 "segments of --elastic-every iterations, each a new run from the last one's model, the next m chosen from the "
                 "true test RMSE's trace toward --adaptive-target (cost/elastic.hpp)")
      ->delimiter(',')
      ->check(strata::examples::positive);
  app.add_option("--elastic-every", pf.elastic_every, "iterations per segment of an elastic run")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--adaptive-min-gap", pf.min_gap, "f* at least this fraction of the RMSE range below the best (refit_options::min_gap)")
      ->check(strata::examples::non_negative)
      ->capture_default_str();
}

/// --adaptive: the run in segments, the refit policy choosing each segment's bound.
template <class System>
ml::adaptive_run<ml::mf_run> train_adaptive(System& sys, const prediction_flags& pf, const ml::io::rating_set& train,
                                            const ml::io::rating_set& test, const ml::mf_trainer_options& mo,
                                            std::function<void(const strata::iteration_record&)> progress) {
  ml::adaptive_options ao;
  ao.every = pf.adaptive;
  ao.staleness = pf.candidates;
  ao.target = pf.target;
  strata::cost::refit_options ro;
  ro.min_gap = pf.min_gap;
  strata::cost::refit_policy policy(ro);
  return ml::train_mf_adaptive(sys, train, test, mo, ao, policy, std::move(progress));
}

/// The --load model (nullopt without --load). Its rank is the run's; an explicit --rank must agree.
std::optional<ml::mf_biased_model> load_start(const ex::trainer_cli& cli, ml::mf_trainer_options& mo) {
  if (cli.load.empty()) return std::nullopt;
  auto m = ml::read_mf_model(cli.load);
  if (cli.app.count("--rank") > 0 && m.rank != mo.rank)
    throw std::runtime_error(cli.load + ": the model has rank " + std::to_string(m.rank) + " but --rank is " + std::to_string(mo.rank));
  mo.rank = m.rank;
  return m;
}

strata::json_value trace_config(const ex::trainer_cli& cli, const ml::mf_trainer_options& mo, const ml::io::rating_set& train,
                                const ml::io::rating_set& test) {
  auto c = ex::run_config(cli.so, "mf", mo.iterations);
  c.set("eval_every", mo.eval_every);
  c.set("rank", mo.rank).set("lr", mo.lr).set("decay", mo.decay).set("lambda", mo.lambda).set("weighted_lambda", mo.weighted_lambda).set("user_order", mo.user_order)
      .set("rotation", mo.rotation).set("clocks_per_epoch", mo.clocks_per_epoch).set("block", mo.block).set("work_repeat", mo.work_repeat)
      .set("average_items", mo.average_items)
      .set("train_ratings", train.size()).set("test_ratings", test.size()).set("data", cli.data);
  if (!cli.load.empty()) c.set("load", cli.load);
  return c;
}

void print_summary(const ex::trainer_cli& cli, const ml::mf_trainer_options& mo, const ml::mf_run& res,
                   const std::vector<double>& run_seconds) {
  const double per_thread = static_cast<double>(res.sgd_updates) / res.seconds / (cli.so.workers * cli.so.nodes);
  ex::summary s("mf", cli.so, mo.iterations);
  s.add("seconds", ex::fmt("%.2f", res.seconds), true).add("test_rmse", ex::fmt("%.4f", res.final_rmse), true);
  s.add_run(res).add("updates_per_s_per_thread", ex::fmt("%.0f", per_thread));
  s.add("setup_seconds", ex::fmt("%.3f", res.setup_seconds)).add("read_seconds", ex::fmt("%.3f", cli.read_seconds), true);
  if (mo.rotation) s.add("mode", "rotation").add("block_conflicts", std::to_string(res.block_conflicts));
  if (run_seconds.size() > 1) {  // --repeat: every run's seconds, first (cold) to last (reported)
    std::string all;
    for (double x : run_seconds) all += (all.empty() ? "" : ",") + ex::fmt("%.3f", x);
    s.add("run_seconds", all);
  }
  s.print();
}

/// SGD updates per second per worker thread over the training clocks' wall time (the
/// evaluations are not in it; iteration 0 is the initial state).
double training_rate(const ml::mf_run& res, std::uint32_t P) {
  const double s = res.iterations.size() > 1 ? res.iterations.back().elapsed_s - res.iterations.front().elapsed_s : res.seconds;
  return static_cast<double>(res.sgd_updates) / std::max(s, 1e-9) / P;
}

/// --bench-baseline: a plain single-threaded SGD loop over the same data and the same number of
/// epochs, best of 3 interleaved with the trainer's runs.
void print_baseline(const ex::bench_rates& b, std::uint32_t epochs) {
  std::printf("mf baseline: plain single-threaded SGD, %u epochs, best of %zu: %.0f updates/s (runs: %s); per worker thread "
              "best of %zu: %.0f updates/s (runs: %s); ratio %.3f\n",
              epochs, b.baseline.size(), b.best_baseline(), ex::bench_rates::list(b.baseline, "%.0f").c_str(), b.trainer.size(),
              b.best_trainer(), ex::bench_rates::list(b.trainer, "%.0f").c_str(), b.ratio());
}

/// --mode ccd: CCD++ with the run's rank, lambda (weighted or not), iterations and seed.
int train_ccd(const ex::trainer_cli& cli, const ml::mf_trainer_options& mo, const prediction_flags& pf, const ml::io::rating_set& train,
              const ml::io::rating_set& test) {
  if (!cli.load.empty() || !cli.save.empty() || !pf.in.empty()) throw std::runtime_error("--mode ccd: --load, --save and --predict are not supported");
  ml::mf_ccd_options co;
  co.rank = mo.rank;
  co.lambda = mo.lambda;
  co.iterations = mo.iterations;
  co.seed = mo.seed;
  co.inner = pf.inner;
  co.weighted_lambda = mo.weighted_lambda;
  auto c = ex::run_config(cli.so, "mf_ccd", co.iterations);
  c.set("rank", co.rank).set("lambda", co.lambda).set("weighted_lambda", co.weighted_lambda).set("inner", co.inner).set("train_ratings", train.size()).set("test_ratings", test.size())
      .set("data", cli.data);
  strata::trace_writer trace(cli.lead() ? cli.metrics : std::string(), c);
  ex::progress_line line(cli.quiet || !cli.lead());
  const auto progress = ex::progress_printer(line, cli.so, "mf", co.iterations, [](double rmse) { return ex::fmt("test RMSE %.4f", rmse); });
  const auto res = ex::with_system(cli.so, [&](auto& sys) { return ml::train_mf_ccd(sys, train, test, co, progress); });
  line.done();
  trace.write(res.iterations);
  trace.close();
  ex::summary s("mf", cli.so, co.iterations);
  s.add("mode", "ccd").add("seconds", ex::fmt("%.2f", res.seconds), true).add("test_rmse", ex::fmt("%.4f", res.final_rmse));
  s.add("test_rmse_recomputed", ex::fmt("%.4f", res.final_rmse_recomputed));
  s.add("loss", ex::fmt("%.6e", res.final_loss)).add("column_updates", std::to_string(res.column_updates));
  s.add("bytes_sent", std::to_string(res.bytes_sent), true).add("read_seconds", ex::fmt("%.3f", cli.read_seconds), true);
  s.print();
  if (cli.lead() && !std::isfinite(res.final_rmse)) {
    std::fprintf(stderr, "strata_mf: diverged (RMSE is not finite)\n");
    return 3;
  }
  return 0;
}

/// Reads the training and test ratings into one id space (with the --load model's ids, so its
/// rows keep theirs). An empty training file is an error; sparse ids are reported once.
std::pair<ml::io::rating_set, ml::io::rating_set> read_data(const ex::trainer_cli& cli, const ml::mf_biased_model* start) {
  const auto train_path = std::filesystem::path(cli.data) / "ratings.train.txt";
  auto train = ml::io::read_ratings(train_path);
  auto test = ml::io::read_ratings(std::filesystem::path(cli.data) / "ratings.test.txt");
  if (train.empty())
    throw strata::error(strata::errc::refused, train_path.string() + ": no ratings (the file is empty or holds only blank and '#' lines)");
  if (test.empty())  // a test RMSE over no ratings would print 0.0000
    throw strata::error(strata::errc::refused, (std::filesystem::path(cli.data) / "ratings.test.txt").string() +
                                                     ": no ratings (the file is empty or holds only blank and '#' lines; the test RMSE needs at least one)");
  const bool sparse = train.remapped() || test.remapped() || (start && (!start->user_ids.empty() || !start->item_ids.empty()));
  if (start)
    ml::io::share_ids(train, test, ml::io::detail::ids_or_identity(start->user_ids, start->num_users),
                      ml::io::detail::ids_or_identity(start->item_ids, start->num_items));
  else
    ml::io::share_ids(train, test);
  if (sparse && cli.lead() && train.remapped())
    std::printf("mf data: ids are sparse: %u users (largest id %llu), %u items (largest id %llu) remapped to dense rows; "
                "the model file and predictions keep the original ids\n",
                train.num_users, static_cast<unsigned long long>(train.user_id(train.num_users - 1)), train.num_items,
                static_cast<unsigned long long>(train.item_id(train.num_items - 1)));
  return {std::move(train), std::move(test)};
}

/// Refuses, before any table exists, a --rank / --block / --clocks-per-epoch whose memory passes the
/// machine's: the shard's rows alone hold ceil(users/block) + ceil(items/block) rows of block x
/// (rank + 1) floats, and every worker keeps a copy of what it reads plus an oplog of the same width.
void check_model_memory(const ex::trainer_cli& cli, const ml::mf_trainer_options& mo, const ml::io::rating_set& train) {
  const long double B = mo.block, width = B * (static_cast<long double>(mo.rank) + 1) * sizeof(float);
  const long double rows = std::ceil(train.num_users / B) + std::ceil(train.num_items / B);
  const long double threads = static_cast<long double>(cli.so.workers) * (cli.so.is_distributed() ? 1 : cli.so.nodes);
  const std::string shape = "--rank " + std::to_string(mo.rank) + " with --block " + std::to_string(mo.block);
  ex::check_memory(shape, rows * width, "the model's " + std::to_string(static_cast<unsigned long long>(rows)) + " rows");
  ex::check_memory(shape, (rows + 2 * threads) * width, "the model's rows and each worker's copy of a row and its oplog");
  // Each worker keeps, per clock of an epoch, its slice's boundaries and per-block ratings lists.
  ex::check_memory("--clocks-per-epoch " + std::to_string(mo.clocks_per_epoch),
                   threads * mo.clocks_per_epoch * 64.0L, "each worker's per-clock slices");
}

/// --save and --predict, from the final model.
void write_outputs(const ex::trainer_cli& cli, const prediction_flags& pf, const pairs& to_predict, const ml::mf_biased_model& m) {
  if (!cli.save.empty()) {
    ml::write_mf_model(cli.save, m);
    std::printf("mf model: rank %u, %u users, %u items saved to %s\n", m.rank, m.num_users, m.num_items, cli.save.c_str());
  }
  if (!pf.in.empty()) {
    ml::write_predictions(pf.out, m, to_predict);
    std::printf("mf predictions: %zu pairs written to %s\n", to_predict.size(), pf.out.c_str());
  }
}
}  // namespace

int main(int argc, char** argv) {
  ex::trainer_cli cli("mf", "strata_mf: SGD matrix factorisation on the strata parameter server");
  ml::mf_trainer_options mo;
  prediction_flags pf;
  cli.data = ex::default_data_dir();
  cli.add_flags(mo, "V of VAP (total un-propagated update mass)", "iterations (clocks; epochs = iterations / clocks-per-epoch)",
                "folder with ratings.train.txt and ratings.test.txt");
  add_model_flags(cli.app, mo, pf);
  cli.add_checkpoint_flags();
  cli.finish_flags();
  CLI11_PARSE(cli.app, argc, argv);

  return cli.guard([&] {
    const bool ckpt = cli.so.checkpoint.every > 0 || !cli.so.checkpoint.resume.empty();
    if (ckpt && (pf.mode == "ccd" || pf.adaptive > 0)) throw std::runtime_error("checkpoints and --resume are for --mode sgd without --adaptive");
    if (pf.repeat > 1 && (ckpt || cli.so.is_distributed() || pf.mode == "ccd"))
      throw std::runtime_error("--repeat is for one process (not --transport tcp), --mode sgd or rotation, without checkpoints");
    if (!pf.elastic.empty()) {
      if (cli.so.is_distributed()) throw std::runtime_error("--elastic runs in one process: --transport inproc or sim");
      if (pf.mode != "sgd" || pf.adaptive > 0 || ckpt || pf.repeat > 1 || cli.bench)
        throw std::runtime_error("--elastic is for --mode sgd without --adaptive, checkpoints, --repeat or --bench");
      if (!std::isfinite(pf.target)) throw std::runtime_error("--elastic needs --adaptive-target: the test RMSE the run goes to");
      if (cli.app.count("--eval-every") == 0) mo.eval_every = 1;  // the policy follows the true model
    }
    if (mo.average_items && pf.mode != "sgd")
      throw std::runtime_error("--average-items is for --mode sgd (rotation never has two workers on an item in one clock; ccd takes no SGD steps)");
    if (pf.mode == "ccd") {
      const auto data = cli.timed_read([&] { return read_data(cli, nullptr); });
      return train_ccd(cli, mo, pf, data.first, data.second);
    }
    if (pf.mode == "rotation") {
      if (cli.app.count("--clocks-per-epoch") > 0)
        throw std::runtime_error("--clocks-per-epoch does not apply to --mode rotation (an epoch is one clock per worker)");
      mo.rotation = true;
    }
    cli.phase = "reading the data";
    const auto start = load_start(cli, mo);
    const auto data = cli.timed_read([&] { return read_data(cli, start ? &*start : nullptr); });
    const ml::io::rating_set& train = data.first;
    const ml::io::rating_set& test = data.second;
    check_model_memory(cli, mo, train);
    const pairs to_predict = cli.lead() && !pf.in.empty() ? ml::read_pairs(pf.in) : pairs{};  // bad input fails before training
    mo.start = start ? &*start : nullptr;
    mo.keep_model = !cli.save.empty() || !pf.in.empty();

    auto config = trace_config(cli, mo, train, test);
    {  // what a checkpoint must match to be resumed: the configuration without the iteration count
      auto tag = config;
      tag.set("iterations", 0);
      cli.so.checkpoint.run_tag = tag.dump();
    }
    if (pf.adaptive > 0) {
      strata::json_value c = strata::json_value::array();
      for (int s : pf.candidates) c.push_back(strata::json_value(s));
      config.set("adaptive", pf.adaptive).set("adaptive_candidates", std::move(c));
    }
    strata::trace_writer trace(cli.lead() ? cli.metrics : std::string(), config);
    ex::progress_line line(cli.quiet || !cli.lead());
    const auto progress = ex::progress_printer(line, cli.so, "mf", mo.iterations, [](double rmse) { return ex::fmt("test RMSE %.4f", rmse); });
    auto run_elastic = [&](const std::function<void(const strata::iteration_record&)>& on_iteration) {
      strata::cost::elastic_policy policy;
      const bool sim = cli.so.transport == "sim";
      const auto segment = [&](std::uint32_t m, const ml::mf_trainer_options& o) {
        return ex::with_system(cli.so.with_machines(m), [&](auto& sys) { return ml::train_mf(sys, train, test, o); });
      };
      auto e = ml::train_mf_elastic(mo, pf.target, {pf.elastic, pf.elastic_every, !sim}, policy, segment, on_iteration);
      ml::adaptive_run<ml::mf_run> r;
      static_cast<ml::mf_run&>(r) = std::move(static_cast<ml::mf_run&>(e));
      for (const auto& sg : e.segments) {
        strata::cost::segment c;
        c.config.workers = sg.workers;
        c.first = sg.first, c.last = sg.last, c.reason = sg.reason + ex::fmt(" (switch %.3f s)", sg.switch_seconds);
        r.segments.push_back(std::move(c));
      }
      return r;
    };
    auto run = [&](const std::function<void(const strata::iteration_record&)>& on_iteration) {
      if (!pf.elastic.empty()) return run_elastic(on_iteration);
      return ex::with_system(cli.so, [&](auto& sys) {
        auto r = pf.adaptive == 0 ? ml::adaptive_run<ml::mf_run>{ml::train_mf(sys, train, test, mo, on_iteration), {}}
                                  : train_adaptive(sys, pf, train, test, mo, on_iteration);
        cli.report_resume(sys);  // after training: the checkpoint's signature covers the tables the trainer adds
        return r;
      });
    };
    cli.phase = "training";
    std::vector<double> run_seconds;
    for (std::uint32_t k = 1; k < pf.repeat; ++k) run_seconds.push_back(run({}).seconds);
    const auto res = run(progress);
    line.done();
    run_seconds.push_back(res.seconds);

    if (res.segments.empty()) trace.write(res.iterations);
    for (const auto& it : res.iterations) {  // adaptive: each line says its segment and bound
      for (std::size_t k = 0; k < res.segments.size(); ++k)
        if (it.iteration <= res.segments[k].last) {
          strata::json_value::object_type extra;
          extra.emplace_back("segment", strata::json_value(k));
          if (pf.elastic.empty()) extra.emplace_back("staleness_bound", strata::json_value(res.segments[k].config.staleness));
          else extra.emplace_back("segment_workers", strata::json_value(res.segments[k].config.workers));
          trace.write(it, extra);
          break;
        }
    }
    trace.close();
    for (const auto& sg : res.segments)
      if (cli.lead())
        std::printf("mf %s: iterations %u-%u %s: %s\n", pf.elastic.empty() ? "adaptive" : "elastic", sg.first, sg.last,
                    pf.elastic.empty() ? sg.config.describe().c_str() : ex::fmt("m=%g", sg.config.workers).c_str(), sg.reason.c_str());
    if (!pf.elastic.empty() && !res.segments.empty()) {  // the summary's workers: the last segment's m; its iterations: those run
      cli.so = cli.so.with_machines(static_cast<std::uint32_t>(res.segments.back().config.workers));
      mo.iterations = res.segments.back().last;
    }
    print_summary(cli, mo, res, run_seconds);
    if (cli.bench) {  // every process repeats the trainer (one process: tcp runs are not repeated)
      const std::uint32_t P = cli.so.workers * cli.so.nodes;
      const std::uint32_t epochs = std::max<std::uint32_t>(1, mo.iterations / (mo.rotation ? P : mo.clocks_per_epoch));
      const ex::bench_rates b = ex::bench_interleaved(
          training_rate(res, P), cli.so.is_distributed() ? 1 : 3, [&] { return training_rate(run({}), P); },
          [&] { return cli.lead() ? ml::mf_baseline_updates_per_s(train, mo, epochs) : 0.0; });
      if (cli.lead()) print_baseline(b, epochs);
    }
    if (!std::isfinite(res.final_rmse)) {
      std::fprintf(stderr, "strata_mf: diverged (RMSE is not finite); lower --lr\n");
      return 3;
    }
    if (cli.lead()) write_outputs(cli, pf, to_predict, res.model);
    if (!pf.elastic.empty()) {
      bool reached = false;
      for (const auto& it : res.iterations) reached = reached || (it.iteration > 0 && it.metric <= pf.target);
      if (!reached) {
        std::fflush(stdout);  // the segments and the summary first
        std::fprintf(stderr, "strata_mf: not converged: test RMSE %.4f after %u iterations, above the target %.4f\n", res.final_rmse,
                     mo.iterations, pf.target);
        return 3;
      }
    }
    return 0;
  });
}
