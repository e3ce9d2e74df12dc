// strata_lda_z_loglik: the joint log-likelihood log p(w, z) of a final LDA state, from its topic
// assignments in the `.z` format that WarpLDA writes and strata_lda --save-z writes (one document
// per line: `<tokens> <word>:<topic> ...`), with strata's formula (include/strata/ml/lda_loglik.hpp)
// and the α (per topic), β, K and V given: one formula over both programs' output
// (benchmarks/lda_scale.sh). Word ids need only be below V (WarpLDA numbers words its own way;
// the likelihood does not depend on the numbering). Prints one line:
//   lda_z_loglik: docs=D tokens=N loglik=LL per_token=LL/N
//
//   strata_lda_z_loglik --z final.z --topics 1000 --vocab-size 100000 --alpha 0.1 --beta 0.01
#include <CLI/CLI.hpp>

#include <strata/ml/lda_loglik.hpp>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  CLI::App app{"joint LDA log-likelihood of topic assignments in the .z format"};
  std::string file;
  std::uint32_t K = 0, V = 0;
  double alpha = 0, beta = 0;
  app.add_option("--z", file, "assignments FILE (.z: <tokens> <word>:<topic> ... per line)")->required();
  app.add_option("--topics", K, "K")->required()->check(CLI::PositiveNumber);
  app.add_option("--vocab-size", V, "V (the corpus's vocabulary size, as the trainers used it)")->required()->check(CLI::PositiveNumber);
  app.add_option("--alpha", alpha, "doc-topic prior per topic (WarpLDA's --alpha is K times this)")->required()->check(CLI::PositiveNumber);
  app.add_option("--beta", beta, "topic-word prior")->required()->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::ifstream in(file);
  if (!in) {
    std::fprintf(stderr, "strata_lda_z_loglik: cannot open %s\n", file.c_str());
    return 2;
  }
  const strata::ml::lda_params p{K, V, alpha, beta};
  std::vector<std::int32_t> nwk(std::size_t{V} * K, 0), nk(K, 0), ndk(K, 0);
  std::vector<std::uint32_t> topics;
  double ll = 0;
  std::uint64_t docs = 0, tokens = 0, line_no = 0;
  std::string line;
  auto fail = [&](const char* why) {
    std::fprintf(stderr, "strata_lda_z_loglik: %s:%llu: %s\n", file.c_str(), static_cast<unsigned long long>(line_no), why);
    return 2;
  };
  while (std::getline(in, line)) {
    ++line_no;
    const char* at = line.data();
    const char* end = at + line.size();
    std::uint64_t n = 0;
    auto r = std::from_chars(at, end, n);
    if (r.ec != std::errc()) return fail("expected the token count first");
    at = r.ptr;
    topics.clear();
    while (true) {
      while (at < end && *at == ' ') ++at;
      if (at == end) break;
      std::uint32_t w = 0, k = 0;
      r = std::from_chars(at, end, w);
      if (r.ec != std::errc() || r.ptr == end || *r.ptr != ':') return fail("expected <word>:<topic>");
      r = std::from_chars(r.ptr + 1, end, k);
      if (r.ec != std::errc()) return fail("expected <word>:<topic>");
      if (w >= V || k >= K) return fail("a word id >= V or a topic >= K");
      at = r.ptr;
      ++nwk[std::size_t{w} * K + k];
      ++nk[k];
      ++ndk[k];
      topics.push_back(k);
    }
    if (topics.size() != n) return fail("the token count differs from the pairs that follow");
    ll += strata::ml::lda_doc_loglik(ndk, p);
    for (auto k : topics) ndk[k] = 0;
    tokens += n;
    ++docs;
  }
  for (std::uint32_t w = 0; w < V; ++w)
    ll += strata::ml::lda_word_loglik(std::span<const std::int32_t>(nwk.data() + std::size_t{w} * K, K), p);
  ll += strata::ml::lda_topic_loglik(nk, p);
  std::printf("lda_z_loglik: docs=%llu tokens=%llu loglik=%.9e per_token=%.6f\n", static_cast<unsigned long long>(docs),
              static_cast<unsigned long long>(tokens), ll, tokens ? ll / static_cast<double>(tokens) : 0.0);
  return 0;
}
