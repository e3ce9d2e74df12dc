// strata_lda: data-parallel collapsed Gibbs LDA on the parameter server (see
// apps/trainers/lda_trainer.hpp). Trains on the SpamAssassin corpus as
// scripts/fetch_data.sh caches it (docword.spam.txt, UCI bag-of-words), reports the joint
// log-likelihood per iteration, and exits non-zero (status 4) if the count invariants
// Σ_k n_dk = n_d, Σ_w n_wk = n_k do not hold at the end. With --vocab (vocab.spam.txt) it prints
// each topic's top words; --save writes the word-topic counts (include/strata/ml/lda_model.hpp),
// which --load --iterations 0 reads back to print their log p(w | z) and top words (the topic
// assignments are not saved, so a chain cannot resume from them). --mode rotation trains by
// STRADS word rotation instead (apps/trainers/lda_rotation.hpp: model-parallel, no
// table; --consistency does not matter there). --save-z writes the final topic assignments in
// WarpLDA's .z format, for benchmarks/lda_z_loglik.cpp.
//
//   strata_lda --consistency essp --staleness 2 --workers 4 --topics 20 --iterations 20 --vocab ~/.cache/strata/vocab.spam.txt
//   strata_lda --sampler mh --mh-steps 2 --workers 2 --topics 50 --iterations 20 --bench-baseline
//   strata_lda --mode rotation --workers 2 --topics 20 --iterations 10
//   strata_lda --load lda.model --iterations 0 --vocab ~/.cache/strata/vocab.spam.txt --top 15
//   scripts/launch.sh -n 2 -- strata_lda --transport tcp --workers 2 --consistency essp   (2 processes)
#include <CLI/CLI.hpp>

#include <strata/core/trace.hpp>
#include <strata/ml/io/bag_of_words.hpp>
#include <strata/ml/lda_model.hpp>
#include <trainers/lda_rotation.hpp>
#include <trainers/lda_trainer.hpp>

#include "common/cli.hpp"
#include "common/metrics.hpp"
#include "common/trainer.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {
namespace ex = strata::examples;
namespace ml = strata::ml;

/// --vocab FILE --top N, --max-docs and --mode.
struct lda_flags {
  std::string mode = "ps";
  std::string vocab;
  std::uint32_t top = 10;
  std::uint32_t max_docs = 0;
  std::uint64_t max_tokens = ml::io::default_max_tokens;
  std::string sampler = "sparse";
  std::string save_z;
};

void add_model_flags(CLI::App& app, ml::lda_trainer_options& lo, lda_flags& f) {
  app.add_option("--mode", f.mode, "ps: data-parallel on the parameter server; rotation: STRADS model-parallel word rotation")
      ->check(CLI::IsMember({"ps", "rotation"}))
      ->capture_default_str();
  app.add_option("--max-docs", f.max_docs, "use only the first N documents (0: all)")->capture_default_str();
  app.add_option("--save-z", f.save_z,
                 "write the final topic assignments to FILE, one document per line as WarpLDA's .z (<tokens> <word>:<topic> ...; "
                 "one process)");
  app.add_option("--max-tokens", f.max_tokens, "refuse a corpus of more tokens (sum of counts; 4 bytes of topic assignment each)")
      ->capture_default_str();
  app.add_option("--topics", lo.topics, "number of topics K")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--alpha", lo.alpha, "doc-topic Dirichlet prior")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--beta", lo.beta, "topic-word Dirichlet prior")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--sampler", f.sampler, "sparse: exact SparseLDA Gibbs; mh: Metropolis-Hastings with doc and word (alias) proposals")
      ->check(CLI::IsMember({"sparse", "mh"}))
      ->capture_default_str();
  app.add_option("--mh-steps", lo.mh_steps, "with --sampler mh: doc + word proposal pairs per token")
      ->check(strata::examples::positive)
      ->capture_default_str();
  app.add_option("--mh-dense-mb", lo.mh_dense_mb,
                 "with --sampler mh: MiB per worker for dense rows of its most frequent words (the rest sparse; 0: all sparse)")
      ->capture_default_str();
  app.add_option("--vocab", f.vocab, "vocabulary FILE (word w on line w, e.g. vocab.spam.txt): print each topic's top words");
  app.add_option("--top", f.top, "how many top words per topic to print (word ids without --vocab)")->capture_default_str();
}

/// Refuses, before any table exists, a --topics whose memory passes the machine's: the topic
/// totals are a dense row of K counts at the shard and in each worker's cache and oplog, each
/// worker's sampler and document scratch keep K-wide arrays, the parameter server's trainer takes
/// the initial counts a block of words (64 MiB) at a time, with MH each worker holds up to
/// mh_dense_mb of dense rows, and a kept model is a dense vocab x K table. (Rotation keeps no
/// dense word or document table: its rows are sparse, a document's counts recounted when it comes up.)
void check_topic_memory(const ex::trainer_cli& cli, const ml::lda_trainer_options& lo, const ml::lda_corpus& corpus, bool rotation) {
  const long double K = lo.topics;
  const long double threads = static_cast<long double>(cli.so.workers) * (cli.so.is_distributed() ? 1 : cli.so.nodes);
  const long double V = corpus.vocab_size;
  const long double counts = rotation ? 0 : std::min(K * 4 * V, static_cast<long double>(1 << 26));
  const long double dense = lo.sampler == ml::lda_sampler::mh && !rotation ? threads * static_cast<long double>(lo.mh_dense_mb) * (1 << 20) : 0;
  const long double bytes = counts + dense + K * 4 * (2 * threads + 1) + K * 8 * 4 * threads + (lo.keep_model ? K * 4 * V : 0);
  ex::check_memory("--topics " + std::to_string(lo.topics), bytes,
                   (rotation ? std::string() : std::string("a block of initial word-topic counts, ")) +
                       (dense > 0 ? "each worker's dense MH rows (--mh-dense-mb), " : "") + "the topic totals, each worker's sampler" +
                       std::string(lo.keep_model ? " and the kept model" : ""));
}

/// Refuses, before any topic is drawn, a corpus whose tokens need more memory than the machine (or
/// `ulimit -v`) gives: the counts in a file of a few bytes may announce 2^30 tokens, and every token
/// gets a 4-byte topic assignment (in every process: each draws all initial topics); a checkpoint
/// copies them twice while it is written, --bench-baseline's plain loop holds a token list and its
/// own topics (4 + 4 bytes).
void check_token_memory(const ex::trainer_cli& cli, const ml::lda_corpus& corpus, bool ckpt) {
  const std::uint64_t tokens = corpus.tokens();
  const long double per_token = 4 + (ckpt ? 8 : 0) + (cli.bench ? 8 : 0);
  ex::check_memory(cli.data, static_cast<long double>(tokens) * per_token,
                   std::to_string(tokens) + " tokens' topic assignments" + std::string(ckpt ? ", their checkpoint copies" : "") +
                       std::string(cli.bench ? ", the baseline's token lists and topics" : "") + " (" +
                       std::to_string(static_cast<unsigned>(per_token)) + " bytes per token)");
}

/// True when the run should print top words: a vocabulary or an explicit --top.
bool wants_top_words(const CLI::App& app, const lda_flags& f) { return !f.vocab.empty() || app.count("--top") > 0; }

/// Prints "lda topic k (n_k tokens): w1 w2 ..." for every topic, words from `vocab` (ids when empty).
void print_top_words(const ml::lda_word_topic_model& m, const std::vector<std::string>& vocab, std::uint32_t n, const std::string& vocab_file) {
  if (!vocab_file.empty() && vocab.size() < m.vocab)
    throw std::runtime_error(vocab_file + ": " + std::to_string(vocab.size()) + " words, but the model has " + std::to_string(m.vocab));
  const auto totals = m.topic_totals();
  const auto top = m.top_words(n);
  for (std::uint32_t k = 0; k < m.topics; ++k) {
    std::string line = ex::fmt("lda topic %u (%lld tokens):", k, static_cast<long long>(totals[k]));
    for (auto w : top[k]) line += ' ' + (vocab.empty() ? std::to_string(w) : vocab[w]);
    std::printf("%s\n", line.c_str());
  }
}

/// --load FILE --iterations 0: the saved counts' log p(w | z) and top words; no training.
int inspect_saved(const ex::trainer_cli& cli, const ml::lda_trainer_options& lo, const lda_flags& f) {
  if (lo.iterations != 0)
    throw std::runtime_error("--load reads word-topic counts without the documents' topic assignments, so it cannot resume "
                             "training: add --iterations 0 to evaluate and inspect the saved model");
  const auto m = ml::read_lda_model(cli.load);
  std::printf("lda model: file=%s topics=%u vocab=%u tokens=%lld word_loglik=%.6e\n", cli.load.c_str(), m.topics, m.vocab,
              static_cast<long long>(m.tokens()), m.word_loglik());
  print_top_words(m, f.vocab.empty() ? std::vector<std::string>{} : ml::io::read_vocab(f.vocab), f.top, f.vocab);
  return 0;
}

strata::json_value trace_config(const ex::trainer_cli& cli, const ml::lda_trainer_options& lo, const lda_flags& f, const ml::lda_corpus& corpus) {
  auto c = ex::run_config(cli.so, f.mode == "rotation" ? "lda_rotation" : "lda", lo.iterations);
  c.set("eval_every", lo.eval_every);
  c.set("sampler", f.sampler);
  if (f.sampler == "mh") c.set("mh_steps", lo.mh_steps).set("mh_dense_mb", lo.mh_dense_mb);
  c.set("topics", lo.topics).set("alpha", lo.alpha).set("beta", lo.beta).set("docs", corpus.words.size())
      .set("vocab", corpus.vocab_size).set("tokens", corpus.tokens()).set("data", cli.data);
  return c;
}

double tokens_per_s_per_thread(const ex::trainer_cli& cli, const ml::lda_run& res) {
  return static_cast<double>(res.tokens_sampled) / std::max(res.sampling_s, 1e-9) / (cli.so.workers * cli.so.nodes);
}

void print_summary(const ex::trainer_cli& cli, const ml::lda_trainer_options& lo, const ml::lda_corpus& corpus, const ml::lda_run& res) {
  const char* ok = res.invariants_ok ? "ok" : "VIOLATED";
  ex::summary s("lda", cli.so, lo.iterations);
  s.add("docs", std::to_string(corpus.words.size())).add("tokens", std::to_string(corpus.tokens()));
  s.add("sampler", lo.sampler == ml::lda_sampler::mh ? "mh" : "sparse");
  s.add("seconds", ex::fmt("%.2f", res.seconds), true);
  s.add("loglik_first", ex::fmt("%.6e", res.iterations.empty() ? 0.0 : res.iterations.front().metric));
  s.add("loglik", ex::fmt("%.6e", res.final_loglik), true);
  s.add_run(res).add("tokens_per_s_per_thread", ex::fmt("%.0f", tokens_per_s_per_thread(cli, res)));
  if (lo.keep_model && cli.lead()) s.add("word_loglik", ex::fmt("%.6e", res.model.word_loglik()));
  s.add("invariants", ok, true).add("read_seconds", ex::fmt("%.3f", cli.read_seconds), true);
  s.print();
}

/// The trainer's sampling rate per worker thread for --bench-baseline: tokens over the sweeps'
/// wall time without the log-likelihood evaluations.
double sampling_rate(const ex::trainer_cli& cli, const ml::lda_run& res) { return tokens_per_s_per_thread(cli, res); }

/// --bench-baseline: the plain single-threaded loop (lda_reference) with the same sampler over the
/// same corpus and the same number of sweeps, best of 3 interleaved with the trainer's runs.
void print_baseline(const ex::bench_rates& b, std::uint32_t sweeps, const std::string& sampler) {
  std::printf("lda baseline: plain single-threaded %s Gibbs, %u sweeps, best of %zu: %.0f tokens/s (runs: %s); per "
              "worker thread best of %zu: %.0f tokens/s (runs: %s); ratio %.3f\n",
              sampler == "mh" ? "MH" : "SparseLDA", sweeps, b.baseline.size(), b.best_baseline(), ex::bench_rates::list(b.baseline, "%.0f").c_str(), b.trainer.size(),
              b.best_trainer(), ex::bench_rates::list(b.trainer, "%.0f").c_str(), b.ratio());
}
}  // namespace

int main(int argc, char** argv) {
  ex::trainer_cli cli("lda", "strata_lda: collapsed Gibbs LDA on the strata parameter server");
  ml::lda_trainer_options lo;
  lda_flags f;
  cli.data = ex::default_data_dir() + "/docword.spam.txt";
  cli.so.value_bound = 20000;
  cli.add_flags(lo, "V of VAP (total un-propagated count changes)", "Gibbs sweeps", "UCI bag-of-words file (docword.*.txt)");
  add_model_flags(cli.app, lo, f);
  cli.add_checkpoint_flags();
  cli.finish_flags();
  CLI11_PARSE(cli.app, argc, argv);

  return cli.guard([&] {
    if (!cli.load.empty()) return inspect_saved(cli, lo, f);
    cli.phase = "reading the data";
    const auto vocab = f.vocab.empty() ? std::vector<std::string>{} : ml::io::read_vocab(f.vocab);  // bad input fails before training
    const auto corpus = cli.timed_read(
        [&] { return ml::lda_corpus::from(ml::io::read_bag_of_words(std::filesystem::path(cli.data), f.max_tokens), f.max_docs); });
    if (corpus.tokens() == 0)
      throw strata::error(strata::errc::refused, cli.data + ": no tokens (the corpus is empty" +
                                                       std::string(f.max_docs ? " in its first --max-docs documents)" : ")"));
    lo.keep_model = !cli.save.empty() || wants_top_words(cli.app, f);
    const bool ckpt = cli.so.checkpoint.every > 0 || !cli.so.checkpoint.resume.empty();
    check_token_memory(cli, corpus, ckpt);
    lo.sampler = f.sampler == "mh" ? ml::lda_sampler::mh : ml::lda_sampler::sparse;
    check_topic_memory(cli, lo, corpus, f.mode == "rotation");
    cli.phase = "training";
    if (ckpt && f.mode == "rotation") throw std::runtime_error("checkpoints and --resume are for --mode ps");
    if (!f.save_z.empty() && cli.so.is_distributed())
      throw std::runtime_error("--save-z is for one process (each process holds only its workers' documents)");
    lo.keep_assignments = !f.save_z.empty();

    const auto config = trace_config(cli, lo, f, corpus);
    {  // what a checkpoint must match to be resumed: the configuration without the iteration count
      auto tag = config;
      tag.set("iterations", 0);
      cli.so.checkpoint.run_tag = tag.dump();
    }
    strata::trace_writer trace(cli.lead() ? cli.metrics : std::string(), config);
    ex::progress_line line(cli.quiet || !cli.lead());
    const auto progress = ex::progress_printer(line, cli.so, "lda", lo.iterations, [](double ll) { return ex::fmt("loglik %.6e", ll); });
    ml::lda_rotation_run rot;  // --mode rotation's own figures
    auto train = [&](const std::function<void(const strata::iteration_record&)>& on_iteration) {
      return ex::with_system(cli.so, [&](auto& sys) -> ml::lda_run {
        if (f.mode != "rotation") {
          auto r = ml::train_lda(sys, corpus, lo, on_iteration);
          cli.report_resume(sys);  // after training: the checkpoint's signature covers the tables the trainer adds
          return r;
        }
        if (lo.keep_model && cli.so.is_distributed()) throw std::runtime_error("--mode rotation keeps the model (--save, --vocab, --top) only in one process");
        rot = ml::train_lda_rotation(sys, corpus, lo, on_iteration);
        return rot;
      });
    };
    auto res = train(progress);
    line.done();
    if (cli.bench) {  // every process repeats the trainer (one process: tcp runs are not repeated)
      const ml::lda_rotation_run main_rot = rot;  // the repeats overwrite it
      const ex::bench_rates b = ex::bench_interleaved(
          sampling_rate(cli, res), cli.so.is_distributed() ? 1 : 3, [&] { return sampling_rate(cli, train({})); },
          [&] { return cli.lead() ? ml::lda_baseline_tokens_per_s(corpus, lo, lo.iterations, lo.sampler) : 0.0; });
      rot = main_rot;
      if (cli.lead()) print_baseline(b, lo.iterations, f.sampler);
    }
    if (f.mode == "rotation" && !cli.lead()) res.invariants_ok = true;  // rotation checks them on rank 0 (the coordinator's)
    if (f.mode == "rotation" && cli.lead())
      std::printf("lda rotation: blocks=%u rounds=%llu block_conflicts=%llu\n", rot.blocks, static_cast<unsigned long long>(rot.rounds),
                  static_cast<unsigned long long>(rot.block_conflicts));

    trace.write(res.iterations);
    trace.close();
    print_summary(cli, lo, corpus, res);
    if (!res.invariants_ok) {
      std::fprintf(stderr, "strata_lda: count invariant violated: %s\n", res.invariant_error.c_str());
      return 4;
    }
    if (cli.lead() && wants_top_words(cli.app, f)) print_top_words(res.model, vocab, f.top, f.vocab);
    if (cli.lead() && !cli.save.empty()) {
      ml::write_lda_model(cli.save, res.model);
      std::printf("lda model: %u topics, %u words saved to %s\n", res.model.topics, res.model.vocab, cli.save.c_str());
    }
    if (!f.save_z.empty()) {
      ml::write_lda_assignments(f.save_z, corpus.words, corpus.counts, res.assignments);
      std::printf("lda assignments: %zu documents saved to %s\n", res.assignments.size(), f.save_z.c_str());
    }
    return 0;
  });
}
