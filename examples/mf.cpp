// strata_mf: data-parallel SGD matrix factorisation on the parameter server (see
// include/strata/ml/trainers/mf_trainer.hpp for the algorithm). Trains on MovieLens small as
// scripts/fetch_data.sh caches it (ratings.train.txt / ratings.test.txt, a fixed 90/10 split)
// and reports test RMSE per iteration.
//
//   strata_mf --consistency essp --staleness 2 --workers 4 --iterations 30 --metrics mf.jsonl
//   scripts/launch.sh -n 2 -- strata_mf --transport tcp --workers 2 --consistency essp   (2 processes)
#include <CLI/CLI.hpp>

#include <strata/ml/io/ratings.hpp>
#include <strata/ml/trainers/mf_trainer.hpp>
#include <strata/strata.hpp>

#include "common/dispatch.hpp"
#include "common/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

namespace {
std::string default_data_dir() {
  if (const char* d = std::getenv("STRATA_DATA"); d && *d) return d;
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/strata";
  return ".cache/strata";
}
}  // namespace

int main(int argc, char** argv) {
  namespace ex = strata::examples;
  ex::system_options so;
  strata::ml::mf_trainer_options mo;
  std::string data = default_data_dir(), metrics_path;
  bool quiet = false, bench = false;

  CLI::App app{"strata_mf: SGD matrix factorisation on the strata parameter server"};
  ex::add_system_flags(app, so, "V of VAP (total un-propagated update mass)");
  app.add_option("--iterations", mo.iterations, "iterations (clocks = epochs)")->capture_default_str();
  app.add_option("--data", data, "folder with ratings.train.txt and ratings.test.txt")->capture_default_str();
  app.add_option("--metrics", metrics_path, "write JSON Lines metrics to FILE");
  app.add_option("--rank", mo.rank, "factor rank")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--lr", mo.lr, "initial learning rate")->capture_default_str();
  app.add_option("--decay", mo.decay, "learning-rate decay: lr/(1+decay*t)")->capture_default_str();
  app.add_option("--lambda", mo.lambda, "regularisation weight of the loss")->capture_default_str();
  app.add_option("--clocks-per-epoch", mo.clocks_per_epoch, "clocks per pass over the data")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--block", mo.block, "users/items per parameter-server row")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--work-repeat", mo.work_repeat, "repeat each SGD pass (emulates heavier compute)")->capture_default_str();
  app.add_flag("--no-prefetch", [&](std::int64_t) { mo.prefetch = false; }, "request rows one at a time");
  app.add_flag("--quiet", quiet, "no progress display");
  app.add_flag("--bench-baseline", bench, "also time a plain single-threaded SGD loop and print the per-thread ratio");
  ex::add_cluster_flags(app, so.cluster_flags);  // last: names the trainer took become --node-*
  CLI11_PARSE(app, argc, argv);
  mo.seed = so.seed;

  try {
    so.resolve();  // tcp: rank and world size from the flags or the launcher; nodes = processes
    const bool lead = so.rank() == 0;  // writes the metrics and the summary
    const auto train = strata::ml::io::read_ratings(std::filesystem::path(data) / "ratings.train.txt");
    const auto test = strata::ml::io::read_ratings(std::filesystem::path(data) / "ratings.test.txt");

    ex::json_object cfg;
    cfg.str("trainer", "mf").str("consistency", so.consistency).num("staleness", so.staleness)
        .num("value_bound", so.value_bound).num("workers", so.workers * so.nodes).num("nodes", so.nodes)
        .str("transport", so.transport_label()).num("delay_us", so.delay_us).num("straggler", so.straggler)
        .num("straggler_factor", so.straggler_factor).num("seed", static_cast<double>(so.seed))
        .num("iterations", mo.iterations).num("rank", mo.rank).num("lr", mo.lr).num("decay", mo.decay)
        .num("lambda", mo.lambda).num("clocks_per_epoch", mo.clocks_per_epoch).num("block", mo.block).num("work_repeat", mo.work_repeat)
        .num("train_ratings", static_cast<double>(train.size())).num("test_ratings", static_cast<double>(test.size()))
        .str("data", data);
    ex::metrics_writer mw(lead ? metrics_path : std::string(), cfg, "rmse");
    ex::progress_line prog(quiet || !lead);
    // Over several processes the live line shows this process's workers only (the metrics file
    // and the summary are merged over every worker).
    const std::string label = so.model_label();
    const char* view = so.nodes > 1 && so.is_tcp() ? " (rank 0's workers)" : "";

    auto res = ex::dispatch(so, [&]<class T>(std::type_identity<T>, typename T::config tc) {
      strata::basic_system<T> sys(so.system_config(), so.model(), std::move(tc));
      return strata::ml::train_mf(sys, train, test, mo, [&](const strata::ml::iteration_stats& it) {
        char buf[320];
        std::snprintf(buf, sizeof buf, "mf %-12s iter %3u/%u  %7.2fs  test RMSE %.4f  staleness mean %.2f max %lld  wait %.2fs%s",
                      label.c_str(), it.iteration, mo.iterations, it.elapsed_s, it.metric, it.staleness_mean(),
                      static_cast<long long>(it.staleness_max()), it.wait_s, view);
        prog.show(buf);
      });
    });
    prog.done();
    for (const auto& it : res.iterations) mw.write(it);
    const std::uint32_t P = so.workers * so.nodes;
    std::int64_t smax = 0;
    double wait = 0;
    for (const auto& it : res.iterations) smax = std::max(smax, it.staleness_max()), wait += it.wait_s;
    if (lead) {
      std::printf("mf summary: model=%s workers=%u iterations=%u seconds=%.2f test_rmse=%.4f staleness_mean=%.3f "
                  "staleness_max=%lld wait_s=%.2f bytes_sent=%llu updates_per_s_per_thread=%.0f\n",
                  label.c_str(), P, mo.iterations, res.seconds, res.final_rmse, strata::ml::mean_staleness(res.iterations),
                  static_cast<long long>(smax), wait, static_cast<unsigned long long>(res.bytes_sent),
                  static_cast<double>(res.sgd_updates) / res.seconds / P);
    } else {
      std::printf("mf rank %u done: workers %u..%u, seconds=%.2f test_rmse=%.4f\n", so.rank(), so.rank() * so.workers,
                  (so.rank() + 1) * so.workers - 1, res.seconds, res.final_rmse);
    }
    if (bench && lead) {
      const double per_thread = static_cast<double>(res.sgd_updates) / res.seconds / P;
      const double base = strata::ml::mf_baseline_updates_per_s(train, mo, std::max<std::uint32_t>(3, mo.iterations / (4 * mo.clocks_per_epoch)));
      std::printf("mf baseline: plain single-threaded SGD %.0f updates/s; per worker thread %.0f updates/s; ratio %.3f\n",
                  base, per_thread, per_thread / base);
    }
    if (!std::isfinite(res.final_rmse)) {
      std::fprintf(stderr, "strata_mf: diverged (RMSE is not finite); lower --lr\n");
      return 3;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_mf: %s\n", e.what());
    return 1;
  }
  return 0;
}
