// Is the 1-worker LDA chain of strata_lda exact? (issue 36 item 22)
//
// Runs, on the same corpus and for each seed, four collapsed Gibbs chains of the same length:
//   plain     ml::lda_reference with the textbook sampler (every topic's full conditional, one
//             token at a time, counts moved at once): the reference chain;
//   sparse    ml::lda_reference with the SparseLDA sampler;
//   ps        ml::train_lda, 1 worker, BSP, in process (--mode ps of strata_lda);
//   rotation  ml::train_lda_rotation, 1 worker (--mode rotation of strata_lda);
// and prints each chain's joint log-likelihood at every --every sweeps, then per chain the mean and
// seed-to-seed spread of the mean LL over the last half of the sweeps. All four sample the same
// stationary distribution if they are exact, so their late LL must agree within the seed spread.
//
//   strata_lda_exactness --max-docs 2158 --topics 20 --sweeps 300 --seeds 4
#include <strata/ml/io/bag_of_words.hpp>
#include <strata/ml/lda.hpp>
#include <trainers/lda_rotation.hpp>
#include <trainers/lda_trainer.hpp>
#include <strata/strata.hpp>

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace ml = strata::ml;

namespace {

struct flags {
  std::string data;
  std::uint32_t max_docs = 2158, topics = 20, sweeps = 300, seeds = 4, every = 25;
  double alpha = 0.1, beta = 0.01;
};

/// The corpus as token lists, each document's tokens grouped by word as the trainer visits them.
std::vector<std::vector<std::uint32_t>> tokens_of(const ml::lda_corpus& c) {
  std::vector<std::vector<std::uint32_t>> docs(c.words.size());
  for (std::size_t d = 0; d < c.words.size(); ++d)
    for (std::size_t e = 0; e < c.words[d].size(); ++e) docs[d].insert(docs[d].end(), c.counts[d][e], c.words[d][e]);
  return docs;
}

/// LL after sweep i, for i = every, 2·every, …, sweeps.
using curve = std::map<std::uint32_t, double>;

curve reference(const std::vector<std::vector<std::uint32_t>>& docs, std::uint32_t V, const flags& f, std::uint64_t seed, ml::lda_sampler s) {
  ml::lda_options o;
  o.num_topics = f.topics;
  o.alpha = f.alpha;
  o.beta = f.beta;
  o.iterations = f.sweeps;
  o.seed = seed;
  o.sampler = s;
  o.loglik_every = f.every;
  const auto r = ml::lda_reference(docs, V, o);
  curve out;
  for (std::size_t i = 0; i < r.loglik.size(); ++i)
    if (r.loglik_iteration[i] > 0) out[r.loglik_iteration[i]] = r.loglik[i];
  return out;
}

curve trainer(const ml::lda_corpus& c, const flags& f, std::uint64_t seed, bool rotation) {
  ml::lda_trainer_options o;
  o.topics = f.topics;
  o.alpha = f.alpha;
  o.beta = f.beta;
  o.iterations = f.sweeps;
  o.seed = seed;
  o.eval_every = f.every;  // the true model's LL, from a consistent snapshot
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 1});
  const ml::lda_run r = rotation ? ml::train_lda_rotation(sys, c, o) : ml::train_lda(sys, c, o);
  curve out;
  for (const auto& it : r.iterations)
    if (it.iteration > 0 && it.iteration % f.every == 0 && std::isfinite(it.objective)) out[it.iteration] = it.objective;
  out[f.sweeps] = r.final_loglik;
  return out;
}

double late_mean(const curve& c, std::uint32_t sweeps) {
  double s = 0;
  int n = 0;
  for (const auto& [i, ll] : c)
    if (i > sweeps / 2) s += ll, ++n;
  return n ? s / n : std::nan("");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("strata_lda_exactness: the 1-worker LDA chains against a plain collapsed Gibbs loop");
  flags f;
  f.data = (std::filesystem::path(std::getenv("HOME") ? std::getenv("HOME") : ".") / ".cache/strata/docword.spam.txt").string();
  app.add_option("--data", f.data, "UCI bag-of-words file")->check(CLI::ExistingFile);
  app.add_option("--max-docs", f.max_docs, "first documents kept (0: all)");
  app.add_option("--topics", f.topics, "K")->check(CLI::Range(1u, 10000u));
  app.add_option("--sweeps", f.sweeps, "Gibbs sweeps per chain")->check(CLI::Range(2u, 1000000u));
  app.add_option("--seeds", f.seeds, "seeds 1..N")->check(CLI::Range(2u, 100u));
  app.add_option("--every", f.every, "log-likelihood every this many sweeps")->check(CLI::Range(1u, 1000000u));
  CLI11_PARSE(app, argc, argv);
  try {
    const auto corpus = ml::lda_corpus::from(ml::io::read_bag_of_words(std::filesystem::path(f.data)), f.max_docs);
    const auto docs = tokens_of(corpus);
    std::printf("corpus: %zu documents, %llu tokens, V=%u, K=%u, %u sweeps, seeds 1-%u\n", docs.size(),
                static_cast<unsigned long long>(corpus.tokens()), corpus.vocab_size, f.topics, f.sweeps, f.seeds);
    const char* names[] = {"plain", "sparse", "ps", "rotation"};
    std::vector<std::vector<double>> late(4);
    for (std::uint64_t seed = 1; seed <= f.seeds; ++seed) {
      const curve cs[4] = {reference(docs, corpus.vocab_size, f, seed, ml::lda_sampler::plain),
                           reference(docs, corpus.vocab_size, f, seed, ml::lda_sampler::sparse), trainer(corpus, f, seed, false),
                           trainer(corpus, f, seed, true)};
      for (int k = 0; k < 4; ++k) {
        std::printf("seed=%llu chain=%s", static_cast<unsigned long long>(seed), names[k]);
        for (const auto& [i, ll] : cs[k]) std::printf(" %u:%.1f", i, ll);
        late[k].push_back(late_mean(cs[k], f.sweeps));
        std::printf(" late_mean=%.1f\n", late[k].back());
      }
      std::fflush(stdout);
    }
    for (int k = 0; k < 4; ++k) {
      double lo = late[k][0], hi = lo, s = 0;
      for (double x : late[k]) lo = std::min(lo, x), hi = std::max(hi, x), s += x;
      const double mean = s / late[k].size();
      const double ref = [&] {
        double r = 0;
        for (double x : late[0]) r += x;
        return r / late[0].size();
      }();
      std::printf("chain=%-8s late LL mean %.1f  seeds %.1f .. %.1f (spread %.1f)  vs plain %+.1f (%+.3f%%)\n", names[k], mean, lo, hi, hi - lo,
                  mean - ref, 100.0 * (mean - ref) / std::abs(ref));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_lda_exactness: %s\n", e.what());
    return 1;
  }
  return 0;
}
