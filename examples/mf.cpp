// strata_mf: data-parallel SGD matrix factorisation on the parameter server (see
// include/strata/ml/trainers/mf_trainer.hpp for the algorithm). Trains on MovieLens small as
// scripts/fetch_data.sh caches it (ratings.train.txt / ratings.test.txt, a fixed 90/10 split)
// and reports test RMSE per iteration.
//
//   strata_mf --consistency essp --staleness 2 --workers 4 --iterations 30 --metrics mf.jsonl
#include <CLI/CLI.hpp>

#include <strata/ml/io/ratings.hpp>
#include <strata/ml/trainers/mf_trainer.hpp>
#include <strata/strata.hpp>

#include "common/dispatch.hpp"
#include "common/metrics.hpp"

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
  app.add_option("--consistency", so.consistency, "bsp|ssp|essp|vap|async")
      ->check(CLI::IsMember({"bsp", "ssp", "essp", "vap", "async"}))
      ->capture_default_str();
  app.add_option("--staleness", so.staleness, "s of SSP/ESSP")->capture_default_str();
  app.add_option("--value-bound", so.value_bound, "V of VAP (total un-propagated update mass)")->capture_default_str();
  app.add_option("--workers", so.workers, "worker threads (per node)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--nodes", so.nodes, "server shards (in-process nodes)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--transport", so.transport, "inproc|delayed (tcp: not yet)")
      ->check(CLI::IsMember({"inproc", "delayed"}))
      ->capture_default_str();
  app.add_option("--delay", so.delay_us, "injected latency per message, microseconds")->capture_default_str();
  app.add_option("--jitter", so.jitter_us, "injected jitter per message, microseconds (default delay/2)");
  app.add_option("--straggler", so.straggler, "worker id whose messages are slowed (-1: none)")->capture_default_str();
  app.add_option("--straggler-factor", so.straggler_factor, "delay multiplier for the straggler")->capture_default_str();
  app.add_option("--seed", so.seed, "random seed")->capture_default_str();
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
  CLI11_PARSE(app, argc, argv);
  mo.seed = so.seed;
  if (so.delay_us > 0 || so.straggler >= 0) so.transport = "delayed";

  try {
    const auto train = strata::ml::io::read_ratings(std::filesystem::path(data) / "ratings.train.txt");
    const auto test = strata::ml::io::read_ratings(std::filesystem::path(data) / "ratings.test.txt");

    ex::json_object cfg;
    cfg.str("trainer", "mf").str("consistency", so.consistency).num("staleness", so.staleness)
        .num("value_bound", so.value_bound).num("workers", so.workers * so.nodes).num("nodes", so.nodes)
        .str("transport", so.transport).num("delay_us", so.delay_us).num("straggler", so.straggler)
        .num("straggler_factor", so.straggler_factor).num("seed", static_cast<double>(so.seed))
        .num("iterations", mo.iterations).num("rank", mo.rank).num("lr", mo.lr).num("decay", mo.decay)
        .num("lambda", mo.lambda).num("clocks_per_epoch", mo.clocks_per_epoch).num("block", mo.block).num("work_repeat", mo.work_repeat)
        .num("train_ratings", static_cast<double>(train.size())).num("test_ratings", static_cast<double>(test.size()))
        .str("data", data);
    ex::metrics_writer mw(metrics_path, cfg, "rmse");
    ex::progress_line prog(quiet);
    const std::string label = so.model_label();

    auto res = ex::dispatch(so, [&]<class C, class T>(std::type_identity<C>, std::type_identity<T>, typename T::config tc) {
      strata::system<C, T> sys(so.system_config(), std::move(tc));
      return strata::ml::train_mf(sys, train, test, mo, [&](const strata::ml::iteration_stats& it) {
        mw.write(it);
        char buf[256];
        std::snprintf(buf, sizeof buf, "mf %-12s iter %3u/%u  %7.2fs  test RMSE %.4f  staleness mean %.2f max %lld  wait %.2fs",
                      label.c_str(), it.iteration, mo.iterations, it.elapsed_s, it.metric, it.staleness_mean(),
                      static_cast<long long>(it.staleness_max()), it.wait_s);
        prog.show(buf);
      });
    });
    prog.done();
    const std::uint32_t P = so.workers * so.nodes;
    std::printf("mf summary: model=%s workers=%u iterations=%u seconds=%.2f test_rmse=%.4f staleness_mean=%.3f "
                "staleness_max=%lld wait_s=%.2f bytes_sent=%llu updates_per_s_per_thread=%.0f\n",
                label.c_str(), P, mo.iterations, res.seconds, res.final_rmse, res.stats.staleness.stats().mean(),
                static_cast<long long>(res.stats.staleness.stats().max()), res.stats.wait_s,
                static_cast<unsigned long long>(res.bytes_sent),
                static_cast<double>(res.sgd_updates) / res.seconds / P);
    if (bench) {
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
