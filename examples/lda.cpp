// strata_lda: data-parallel collapsed Gibbs LDA on the parameter server (see
// include/strata/ml/trainers/lda_trainer.hpp). Trains on the SpamAssassin corpus as
// scripts/fetch_data.sh caches it (docword.spam.txt, UCI bag-of-words), reports the joint
// log-likelihood per iteration, and exits non-zero (status 4) if the count invariants
// Σ_k n_dk = n_d, Σ_w n_wk = n_k do not hold at the end.
//
//   strata_lda --consistency essp --staleness 2 --workers 4 --topics 20 --iterations 20
//   scripts/launch.sh -n 2 -- strata_lda --transport tcp --workers 2 --consistency essp   (2 processes)
#include <CLI/CLI.hpp>

#include <strata/ml/io/bag_of_words.hpp>
#include <strata/ml/trainers/lda_trainer.hpp>
#include <strata/strata.hpp>

#include "common/dispatch.hpp"
#include "common/metrics.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

namespace {
std::string default_data_file() {
  std::string dir;
  if (const char* d = std::getenv("STRATA_DATA"); d && *d) dir = d;
  else if (const char* h = std::getenv("HOME"); h && *h) dir = std::string(h) + "/.cache/strata";
  else dir = ".cache/strata";
  return dir + "/docword.spam.txt";
}
}  // namespace

int main(int argc, char** argv) {
  namespace ex = strata::examples;
  ex::system_options so;
  strata::ml::lda_trainer_options lo;
  std::string data = default_data_file(), metrics_path;
  std::uint32_t max_docs = 0;
  bool quiet = false, bench = false;

  CLI::App app{"strata_lda: collapsed Gibbs LDA on the strata parameter server"};
  so.value_bound = 20000;
  ex::add_system_flags(app, so, "V of VAP (total un-propagated count changes)");
  app.add_option("--iterations", lo.iterations, "Gibbs sweeps")->capture_default_str();
  app.add_option("--data", data, "UCI bag-of-words file (docword.*.txt)")->capture_default_str();
  app.add_option("--max-docs", max_docs, "use only the first N documents (0: all)")->capture_default_str();
  app.add_option("--metrics", metrics_path, "write JSON Lines metrics to FILE");
  app.add_option("--topics", lo.topics, "number of topics K")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--alpha", lo.alpha, "doc-topic Dirichlet prior")->capture_default_str();
  app.add_option("--beta", lo.beta, "topic-word Dirichlet prior")->capture_default_str();
  app.add_flag("--no-prefetch", [&](std::int64_t) { lo.prefetch = false; }, "request rows one at a time");
  app.add_flag("--quiet", quiet, "no progress display");
  app.add_flag("--bench-baseline", bench, "also time plain single-threaded Gibbs loops and print the per-thread ratio");
  ex::add_cluster_flags(app, so.cluster_flags);  // last: names the trainer took become --node-*
  CLI11_PARSE(app, argc, argv);
  lo.seed = so.seed;

  try {
    so.resolve();  // tcp: rank and world size from the flags or the launcher; nodes = processes
    const bool lead = so.rank() == 0;  // writes the metrics and the summary
    const auto bow = strata::ml::io::read_bag_of_words(std::filesystem::path(data));
    const auto corpus = strata::ml::lda_corpus::from(bow, max_docs);

    ex::json_object cfg;
    cfg.str("trainer", "lda").str("consistency", so.consistency).num("staleness", so.staleness)
        .num("value_bound", so.value_bound).num("workers", so.workers * so.nodes).num("nodes", so.nodes)
        .str("transport", so.transport_label()).num("delay_us", so.delay_us).num("straggler", so.straggler)
        .num("straggler_factor", so.straggler_factor).num("seed", static_cast<double>(so.seed))
        .num("iterations", lo.iterations).num("topics", lo.topics).num("alpha", lo.alpha).num("beta", lo.beta)
        .num("docs", static_cast<double>(corpus.words.size())).num("vocab", corpus.vocab_size)
        .num("tokens", static_cast<double>(corpus.tokens())).str("data", data);
    ex::metrics_writer mw(lead ? metrics_path : std::string(), cfg, "loglik");
    ex::progress_line prog(quiet || !lead);
    // Over several processes the live line shows this process's workers only (the metrics file
    // and the summary are merged over every worker).
    const std::string label = so.model_label();
    const char* view = so.nodes > 1 && so.is_tcp() ? " (rank 0's workers)" : "";

    auto res = ex::dispatch(so, [&]<class T>(std::type_identity<T>, typename T::config tc) {
      strata::basic_system<T> sys(so.system_config(), so.model(), std::move(tc));
      return strata::ml::train_lda(sys, corpus, lo, [&](const strata::ml::iteration_stats& it) {
        char buf[320];
        std::snprintf(buf, sizeof buf, "lda %-12s iter %3u/%u  %7.2fs  loglik %.6e  staleness mean %.2f max %lld  wait %.2fs%s",
                      label.c_str(), it.iteration, lo.iterations, it.elapsed_s, it.metric, it.staleness_mean(),
                      static_cast<long long>(it.staleness_max()), it.wait_s, view);
        prog.show(buf);
      });
    });
    prog.done();
    for (const auto& it : res.iterations) mw.write(it);
    const std::uint32_t P = so.workers * so.nodes;
    const double first = res.iterations.empty() ? 0.0 : res.iterations.front().metric;
    const double per_thread = static_cast<double>(res.tokens_sampled) / std::max(res.sampling_s, 1e-9) / P;
    std::int64_t smax = 0;
    double wait = 0;
    for (const auto& it : res.iterations) smax = std::max(smax, it.staleness_max()), wait += it.wait_s;
    if (lead) {
      std::printf("lda summary: model=%s workers=%u iterations=%u docs=%zu tokens=%llu seconds=%.2f loglik_first=%.6e "
                  "loglik=%.6e staleness_mean=%.3f staleness_max=%lld wait_s=%.2f bytes_sent=%llu "
                  "tokens_per_s_per_thread=%.0f invariants=%s\n",
                  label.c_str(), P, lo.iterations, corpus.words.size(), static_cast<unsigned long long>(corpus.tokens()),
                  res.seconds, first, res.final_loglik, strata::ml::mean_staleness(res.iterations),
                  static_cast<long long>(smax), wait, static_cast<unsigned long long>(res.bytes_sent), per_thread,
                  res.invariants_ok ? "ok" : "VIOLATED");
    } else {
      std::printf("lda rank %u done: workers %u..%u, seconds=%.2f loglik=%.6e invariants=%s\n", so.rank(),
                  so.rank() * so.workers, (so.rank() + 1) * so.workers - 1, res.seconds, res.final_loglik,
                  res.invariants_ok ? "ok" : "VIOLATED");
    }
    if (bench && lead) {
      const std::uint32_t sweeps = std::max<std::uint32_t>(2, lo.iterations / 4);
      const double sparse = strata::ml::lda_baseline_tokens_per_s(corpus, lo, sweeps, strata::ml::lda_sampler::sparse);
      const double plain = strata::ml::lda_baseline_tokens_per_s(corpus, lo, sweeps, strata::ml::lda_sampler::plain);
      std::printf("lda baseline: plain single-threaded Gibbs: SparseLDA %.0f tokens/s, O(K) %.0f tokens/s; per worker "
                  "thread %.0f tokens/s; ratio vs SparseLDA loop %.3f, vs O(K) loop %.3f\n",
                  sparse, plain, per_thread, per_thread / sparse, per_thread / plain);
    }
    if (!res.invariants_ok) {
      std::fprintf(stderr, "strata_lda: count invariant violated: %s\n", res.invariant_error.c_str());
      return 4;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_lda: %s\n", e.what());
    return 1;
  }
  return 0;
}
