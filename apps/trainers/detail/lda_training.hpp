#pragma once
/// \file The pieces of train_lda (trainers/lda_trainer.hpp, whose file comment describes the
/// algorithm) that every worker shares: a worker's state (its documents' topic counts and tokens'
/// topics, what a checkpoint keeps), and lda_training: the tables, the partition, the initial
/// topics, the recorder and reducer, and what the run hands back. One worker's program is
/// detail::lda_worker (trainers/detail/lda_worker.hpp).
#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <strata/core/error.hpp>
#include <strata/ml/lda.hpp>
#include <strata/ml/lda_model.hpp>
#include <strata/ml/partition.hpp>
#include <strata/runtime/system.hpp>
#include <strata/table/dense_row.hpp>
#include <strata/table/sparse_row.hpp>
#include <trainers/lda_options.hpp>
#include <trainers/run_stats.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <ranges>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace strata::ml::detail {

/// A worker's state: its tokens' topics (its documents' topic counts are counted from them).
struct lda_worker_state {
  std::vector<std::uint32_t> z;   // topics of the local docs' tokens, doc by doc, entry by entry
  std::mt19937_64 rng;            // the worker's random stream (initial topics, then its sweeps)
  std::string error;              // a local invariant violation

  /// What a checkpoint keeps (worker::on_checkpoint): the topics and the generator.
  std::string save() const {
    std::ostringstream out(std::ios::binary);
    {
      cereal::PortableBinaryOutputArchive ar(out);
      std::ostringstream r;
      r << rng;
      ar(r.str(), z);
    }
    return out.str();
  }
  void restore(const std::string& bytes, worker_id p, const std::vector<std::uint32_t>& docs, const lda_corpus& c, std::uint32_t K) {
    try {
      std::istringstream in(bytes, std::ios::binary);
      cereal::PortableBinaryInputArchive ar(in);
      std::string r;
      std::vector<std::uint32_t> saved;
      ar(r, saved);
      std::uint64_t n = 0;
      for (auto d : docs)
        for (auto x : c.counts[d]) n += x;
      if (saved.size() != n)
        throw strata::error(errc::bad_input, "it holds " + std::to_string(saved.size()) + " topics, this worker's documents have " +
                                                 std::to_string(n) + " tokens");
      for (auto k : saved)
        if (k >= K) throw strata::error(errc::bad_input, "it holds topic " + std::to_string(k) + " of " + std::to_string(K));
      std::istringstream rs(r);
      rs >> rng;
      if (!rs) throw strata::error(errc::bad_input, "its random generator state does not parse");
      z = std::move(saved);
    } catch (const std::exception& e) {
      throw strata::error(errc::bad_input, "train_lda: worker " + std::to_string(p) + "'s checkpointed state does not load: " + e.what());
    }
  }
};

/// What every worker of a train_lda run shares, set up before the run.
struct lda_training {
  system_base& sys;
  const lda_corpus& corpus;
  const lda_trainer_options& o;
  const std::uint32_t P, K, V, D;
  const lda_params lp;
  table_handle<sparse_row<std::int32_t>> WT;
  table_handle<dense_row<std::int32_t>> NT;
  // A run resumed from the checkpoint at clock m (> 0) runs sweeps m..iterations; recorder slot j
  // is iteration base + j (slot 0: the state it starts from).
  std::uint32_t start = 0, base = 0, slots = 0;
  bool resumed = false;
  // Final sums: LL parts, negative n_wk, local violations, tokens, draws, Σ_w n_wk[K], Σ_d n_dk[K].
  enum : std::size_t { f_ll, f_neg, f_err, f_tokens, f_draws, f_words };
  const std::size_t f_docs;
  std::optional<run_reducer> red;
  std::vector<std::uint64_t> len;                    // tokens per document
  std::vector<std::vector<std::uint32_t>> docs_of;  // each worker's documents, in increasing order
  std::vector<lda_worker_state> state;
  double ll0 = 0;  // the LL of the initial topics (a fresh run)
  std::vector<std::vector<std::uint32_t>> assignments;
  run_recorder* rec = nullptr;
  lda_word_topic_model model;          // with keep_model: filled by worker 0 at the end
  std::vector<std::int32_t> final_nk;  // the topic totals after the run, as read by this process's collector
  // This process's workers' first violation (each reports one).
  std::mutex err_mu;
  std::string local_error;

  lda_training(system_base& s, const lda_corpus& c, const lda_trainer_options& opt)
      : sys(s), corpus(c), o(opt), P(s.config().nodes * s.config().workers_per_node), K(opt.topics), V(c.vocab_size),
        D(static_cast<std::uint32_t>(c.words.size())), lp{K, V, opt.alpha, opt.beta}, f_docs(f_words + K) {
    check_inputs();
    WT = sys.template add_table<sparse_row<std::int32_t>>(K);
    NT = sys.template add_table<dense_row<std::int32_t>>(K);
    find_start();
    red.emplace(sys, slots, f_docs + K);
    partition_documents();
    state.resize(P);
    // Initial topics, drawn here (same stream the worker continues with) so that the LL of the
    // initial state (iteration 0) is exact under every model. A resumed run restores them instead.
    for (std::uint32_t p = 0; p < P; ++p) state[p].rng.seed(o.seed * 0x9e3779b97f4a7c15ULL + p + 1);
    if (!resumed) draw_initial_topics();
    assignments.resize(o.keep_assignments ? D : 0);
    if (o.keep_model) {
      model.topics = K;
      model.vocab = V;
      model.alpha = o.alpha;
      model.beta = o.beta;
    }
  }

  void check_inputs() const {
    if (K == 0 || V == 0 || !(o.alpha > 0) || !(o.beta > 0))
      throw strata::error(errc::bad_input, "train_lda: need topics > 0, vocabulary > 0, alpha > 0, beta > 0");
    if (o.sampler != lda_sampler::sparse && o.sampler != lda_sampler::mh)
      throw strata::error(errc::bad_input, "train_lda: the sampler must be sparse or mh");
    if (o.sampler == lda_sampler::mh && o.mh_steps == 0) throw strata::error(errc::bad_input, "train_lda: mh_steps must be >= 1");
    for (const auto& ws : corpus.words)
      for (auto w : ws)
        if (w >= V) throw strata::error(errc::bad_input, "train_lda: word id beyond the vocabulary");
  }
  void find_start() {
    start = static_cast<std::uint32_t>(sys.start_clock());
    if (start > o.iterations)
      throw strata::error(errc::bad_input, "train_lda: the checkpoint is after sweep " + std::to_string(start - 1) +
                                               ", nothing is left of " + std::to_string(o.iterations) + " sweeps");
    resumed = start > 0;
    base = resumed ? start - 1 : 0;
    slots = o.iterations - base;
  }
  /// Partition documents by token count (balanced_partition); each worker's in increasing order.
  void partition_documents() {
    len.assign(D, 0);
    for (std::uint32_t d = 0; d < D; ++d)
      for (auto x : corpus.counts[d]) len[d] += x;
    docs_of = partition_members(balanced_partition(len, P), P);
  }
  /// Every worker's initial topics, from its own stream, and their exact LL (ll0).
  void draw_initial_topics() {
    std::vector<std::int64_t> nk0(K, 0);
    doc_topic_scratch nd(K);
    for (std::uint32_t p = 0; p < P; ++p) {
      auto& st = state[p];
      std::uint64_t mine = 0;  // exactly this worker's tokens: no doubling past what the corpus holds
      for (auto d : docs_of[p]) mine += len[d];
      st.z.reserve(mine);
      for (auto d : docs_of[p]) {
        const std::size_t first = st.z.size();
        for (std::size_t e = 0; e < corpus.words[d].size(); ++e)
          for (std::uint32_t j = 0; j < corpus.counts[d][e]; ++j) {
            const auto k = static_cast<std::uint32_t>(detail::uniform01(st.rng) * K) % K;
            st.z.push_back(k);
            ++nk0[k];
          }
        const std::span<const std::uint32_t> dz(st.z.data() + first, st.z.size() - first);
        ll0 += nd.loglik(dz, lp);
      }
    }
    ll0 += initial_word_loglik();
    ll0 += lda_topic_loglik(nk0, lp);
  }
  /// Words × K counts are taken a block of words at a time: block × K counts of 64 MB at most,
  /// one pass over the tokens per block, instead of V × K counts at once (the initial LL, each
  /// worker's initial push).
  std::size_t word_block() const { return std::max<std::size_t>(1, (std::size_t{1} << 24) / K); }
  /// Adds worker p's tokens of the words [lo, hi) to nw ((hi − lo) × K counts, word by word).
  void count_word_block(std::uint32_t p, std::size_t lo, std::size_t hi, std::vector<std::int32_t>& nw) const {
    std::size_t zi = 0;
    for (auto d : docs_of[p])
      for (std::size_t e = 0; e < corpus.words[d].size(); ++e) {
        const std::size_t x = corpus.words[d][e];
        const std::uint32_t n = corpus.counts[d][e];
        if (x >= lo && x < hi)
          for (std::uint32_t j = 0; j < n; ++j) ++nw[(x - lo) * K + state[p].z[zi + j]];
        zi += n;
      }
  }
  /// The word part of the initial LL: each word's counts over every worker's tokens, by blocks.
  double initial_word_loglik() const {
    std::vector<std::int32_t> nw;
    double ll = 0;
    for (std::size_t lo = 0; lo < V; lo += word_block()) {
      const std::size_t hi = std::min<std::size_t>(V, lo + word_block());
      nw.assign((hi - lo) * K, 0);
      for (std::uint32_t p = 0; p < P; ++p) count_word_block(p, lo, hi, nw);
      for (std::size_t x = lo; x < hi; ++x) ll += lda_word_loglik(std::span<const std::int32_t>(nw.data() + (x - lo) * K, K), lp);
    }
    return ll;
  }

  /// Worker 0, once every update is in: reads every word row into `model`.
  task<> gather_model(worker& w) {
    model.words.resize(V);
    if (o.prefetch)
      prefetch(w, WT, std::views::iota(std::uint32_t{0}, V));
    for (std::uint32_t x = 0; x < V; ++x) keep_row(x, co_await w.get(WT, x));
  }
  void keep_row(std::uint32_t word, const sparse_row<std::int32_t>& row) {
    auto& out = model.words.at(word);
    out.clear();
    for (const auto& [k, n] : row.entries())
      if (n != 0) out.push_back({k, n});
  }
  /// Keeps a worker's first violation, if this process has none yet.
  void note_error(const std::string& e) {
    std::lock_guard lk(err_mu);
    if (local_error.empty()) local_error = e;
  }

  /// The run's violation of the global invariants, from the summed final parts `f` (empty: none).
  std::string global_error(const std::vector<double>& f) const {
    std::string err;
    const auto neg = static_cast<std::int64_t>(f[f_neg] + 0.5), bad = static_cast<std::int64_t>(f[f_err] + 0.5);
    if (bad > 0 || neg > 0) {
      err = local_error.empty() ? std::string("(in another process)") : local_error;
      if (bad > 0) err += "; " + std::to_string(bad) + " worker(s) found a document count violation";
      if (neg > 0) err += "; " + std::to_string(neg) + " negative word-topic count(s)";
    }
    std::uint64_t tokens = 0;
    for (const auto& c : corpus.counts)
      for (auto x : c) tokens += x;
    std::int64_t total = 0;
    for (std::uint32_t k = 0; k < K; ++k) {
      const auto from_words = static_cast<std::int64_t>(std::llround(f[f_words + k]));
      const auto from_docs = static_cast<std::int64_t>(std::llround(f[f_docs + k]));
      total += final_nk[k];
      if (err.empty() && from_words != final_nk[k])
        err = "topic " + std::to_string(k) + ": sum_w n_wk = " + std::to_string(from_words) + " != n_k = " + std::to_string(final_nk[k]);
      if (err.empty() && from_docs != final_nk[k])
        err = "topic " + std::to_string(k) + ": sum_d n_dk = " + std::to_string(from_docs) + " != n_k = " + std::to_string(final_nk[k]);
    }
    if (err.empty() && total != static_cast<std::int64_t>(tokens))
      err = "sum_k n_k = " + std::to_string(total) + " != tokens = " + std::to_string(tokens);
    if (err.empty() && std::llround(f[f_tokens]) != static_cast<long long>(tokens))
      err = "sum_d n_d = " + std::to_string(std::llround(f[f_tokens])) + " != tokens = " + std::to_string(tokens) +
            " (documents lost or counted twice)";
    return err;
  }
};

}  // namespace strata::ml::detail
