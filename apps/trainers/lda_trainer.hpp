#pragma once
/// \file Data-parallel collapsed Gibbs LDA on the parameter server.
///
/// Tables: word-topic counts n_wk in a sparse_row<int32_t> table (one row per word, K columns),
/// topic totals n_k in one dense_row<int32_t> row. Documents are partitioned across workers
/// (greedily by token count); a document's topic counts n_dk and its tokens' topics stay with
/// the worker that owns it. Clock 0 assigns random topics; each later clock is one Gibbs sweep
/// over the worker's documents with the SparseLDA sampler (ml/lda.hpp): the worker reads the
/// topic totals once per clock and yields once per document (so pushed rows are taken in). It
/// reads each word row at the word's first use in the sweep into a local copy, samples every
/// later token of the word against that copy plus its own moves, and sends each word's net count
/// change once, at the end of the sweep: increments leave at the clock under every model but a
/// value bound, so this is what the per-token path would send, minus a row read and an `inc` per
/// (document, word) pair. Under a value bound (VAP), whose flushes follow the increments, the
/// worker reads the row for every (document, word) pair and sends that pair's changes at once.
/// The totals' changes go in one `inc_row` per clock. Under stale reads counts can be
/// transiently negative; the sampler reads them as 0.
///
/// Log-likelihood (SEEDS.md) of the state after clock i is summed from per-worker parts at the
/// start of clock i+1 (and after the last clock): each worker adds the doc parts of its
/// documents, the word parts of the words w with w mod P = its id (from its view of those rows),
/// and worker 0 the topic part. Under BSP this is the exact LL; under the other models it is the
/// LL of each worker's (possibly stale) view. The final LL (`lda_run::final_loglik`) is exact and
/// the invariants Σ_k n_dk = n_d, Σ_w n_wk = n_k = Σ_d n_dk, Σ_k n_k = tokens, no negative count,
/// are checked at the end of the worker program: after the last sweep every worker waits until
/// every update is in (run_reducer::settle), re-reads the totals and its share of the word rows
/// (w mod P = its id), and the partial sums (LL parts, Σ_w n_wk and Σ_d n_dk per topic, negative
/// counts, local violations) are added up through a small PS table, so the check is the same
/// whether the workers share one process or live in several (tcp).
///
/// With `run_options::keep_model` worker 0 then reads every word row into the outcome's
/// word-topic counts (ml/lda_model.hpp: their log p(w | z), top words and file format).
///
/// With `lda_trainer_options::sampler = lda_sampler::mh` a sweep uses the Metropolis–Hastings
/// sampler (ml/lda.hpp, mh_lda_sampler) instead: the worker reads each of its words' rows once per
/// sweep (its first use) into a dense local copy and an alias table (the word proposal), samples
/// its tokens against that copy plus its own moves, and sends each word's net count changes once,
/// at the end of the sweep (under a value bound too: the MH sampler has no per-pair path). The moves, and so the count
/// invariants, are the exact sampler's; the memory is 2 × K counts per word the worker's documents use.
///
/// Checkpoints (system_config::checkpoint): each worker saves its tokens' topics and its random
/// generator (worker::on_checkpoint); n_dk is recounted from the topics on restore. A checkpoint
/// at clock m holds the tables after clocks 0..m-1 (the initial counts and sweeps 1..m-1), so a
/// resumed run (basic_system::start_clock() = m) skips the initial push and runs sweeps
/// m..iterations; its trace starts with iteration m-1 (the checkpointed state, evaluated from the
/// tables) and goes on with the same iteration numbers as the uninterrupted run. Under BSP the
/// resumed run ends with exactly the uninterrupted run's counts and topics.
#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <strata/consistency/models.hpp>
#include <strata/ml/io/bag_of_words.hpp>
#include <strata/ml/lda.hpp>
#include <strata/ml/lda_model.hpp>
#include <strata/ml/partition.hpp>
#include <trainers/run_stats.hpp>
#include <strata/runtime/system.hpp>
#include <strata/table/dense_row.hpp>
#include <strata/table/sparse_row.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <mutex>
#include <numeric>
#include <random>
#include <ranges>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace strata::ml {

/// Settings of the distributed LDA trainer (besides iterations = Gibbs sweeps after the
/// initialisation clock, seed, prefetch, keep_model: run_options).
struct lda_trainer_options : run_options {
  std::uint32_t topics = 20;      ///< K
  double alpha = 0.1;             ///< doc-topic prior
  double beta = 0.01;             ///< topic-word prior
  bool keep_assignments = false;  ///< fill lda_run::assignments (the documents of this process's workers)
  lda_sampler sampler = lda_sampler::sparse;  ///< sparse: exact SparseLDA; mh: Metropolis–Hastings (see the file comment)
  std::uint32_t mh_steps = 2;     ///< with mh: doc + word proposal pairs per token
};

/// A corpus as the trainer wants it: per document, its distinct words and their counts.
struct lda_corpus {
  std::uint32_t vocab_size = 0;
  std::vector<std::vector<std::uint32_t>> words;   ///< per doc: word ids
  std::vector<std::vector<std::uint32_t>> counts;  ///< per doc: occurrences, parallel to words
  std::uint64_t tokens() const {
    std::uint64_t n = 0;
    for (const auto& c : counts)
      for (auto x : c) n += x;
    return n;
  }
  /// From a UCI bag of words; keeps the first `max_docs` documents (0: all).
  static lda_corpus from(const io::bag_of_words& bow, std::uint32_t max_docs = 0) {
    lda_corpus c;
    c.vocab_size = bow.num_words;
    const std::uint32_t D = max_docs ? std::min(max_docs, bow.num_docs) : bow.num_docs;
    c.words.resize(D);
    c.counts.resize(D);
    for (std::uint32_t d = 0; d < D; ++d) {
      const auto w = bow.doc_words(d);
      const auto n = bow.doc_counts(d);
      c.words[d].assign(w.begin(), w.end());
      c.counts[d].assign(n.begin(), n.end());
    }
    return c;
  }
  /// From token lists (word ids, repeats allowed).
  static lda_corpus from_tokens(std::span<const std::vector<std::uint32_t>> docs, std::uint32_t vocab_size) {
    lda_corpus c;
    c.vocab_size = vocab_size;
    for (const auto& d : docs) {
      std::vector<std::uint32_t> s = d;
      std::sort(s.begin(), s.end());
      std::vector<std::uint32_t> w, n;
      for (std::size_t i = 0; i < s.size();) {
        std::size_t j = i;
        while (j < s.size() && s[j] == s[i]) ++j;
        w.push_back(s[i]);
        n.push_back(static_cast<std::uint32_t>(j - i));
        i = j;
      }
      c.words.push_back(std::move(w));
      c.counts.push_back(std::move(n));
    }
    return c;
  }
};

/// The outcome of a run (iterations: [0] = after the random initialisation, [i] = after sweep i;
/// seconds, stats, bytes_sent: run_outcome).
struct lda_run : run_outcome {
  double final_loglik = 0;           ///< exact LL of the final state
  double sampling_s = 0;             ///< elapsed time of the last iteration (evaluation excluded)
  std::uint64_t tokens_sampled = 0;  ///< token draws (all workers, all sweeps)
  bool invariants_ok = false;        ///< count invariants held at the end
  std::string invariant_error;       ///< the first violation, if any
  lda_word_topic_model model;        ///< the final n_wk, with keep_model, in the process of worker 0 (else empty)
  /// With lda_trainer_options::keep_assignments: per document, its tokens' final topics, entry by
  /// entry (the counts[e] tokens of words[e] together); empty for documents of other processes.
  std::vector<std::vector<std::uint32_t>> assignments;
};

/// Trains LDA on `corpus` with the system `sys` (tables are added here; run once).
inline lda_run train_lda(system_base& sys, const lda_corpus& corpus, const lda_trainer_options& o,
                  std::function<void(const iteration_stats&)> on_iteration = {}) {
  const std::uint32_t P = sys.config().nodes * sys.config().workers_per_node;
  const std::uint32_t K = o.topics, V = corpus.vocab_size, D = static_cast<std::uint32_t>(corpus.words.size());
  const lda_params lp{K, V, o.alpha, o.beta};
  if (K == 0 || V == 0 || !(o.alpha > 0) || !(o.beta > 0))
    throw strata::error(errc::bad_input, "train_lda: need topics > 0, vocabulary > 0, alpha > 0, beta > 0");
  if (o.sampler != lda_sampler::sparse && o.sampler != lda_sampler::mh)
    throw strata::error(errc::bad_input, "train_lda: the sampler must be sparse or mh");
  if (o.sampler == lda_sampler::mh && o.mh_steps == 0) throw strata::error(errc::bad_input, "train_lda: mh_steps must be >= 1");
  for (const auto& ws : corpus.words)
    for (auto w : ws)
      if (w >= V) throw strata::error(errc::bad_input, "train_lda: word id beyond the vocabulary");
  const auto WT = sys.template add_table<sparse_row<std::int32_t>>(K);
  const auto NT = sys.template add_table<dense_row<std::int32_t>>(K);
  // A run resumed from the checkpoint at clock m (> 0) runs sweeps m..iterations; recorder slot j
  // is iteration base + j (slot 0: the state it starts from).
  const auto start = static_cast<std::uint32_t>(sys.start_clock());
  if (start > o.iterations)
    throw strata::error(errc::bad_input, "train_lda: the checkpoint is after sweep " + std::to_string(start - 1) +
                                             ", nothing is left of " + std::to_string(o.iterations) + " sweeps");
  const bool resumed = start > 0;
  const std::uint32_t base = resumed ? start - 1 : 0, slots = o.iterations - base;
  // Final sums: LL parts, negative n_wk, local violations, tokens, draws, Σ_w n_wk[K], Σ_d n_dk[K].
  enum : std::size_t { f_ll, f_neg, f_err, f_tokens, f_draws, f_words };
  const std::size_t f_docs = f_words + K;
  run_reducer red(sys, slots, f_docs + K);

  // Partition documents by token count (balanced_partition); each worker's in increasing order.
  std::vector<std::uint64_t> len(D, 0);
  for (std::uint32_t d = 0; d < D; ++d)
    for (auto x : corpus.counts[d]) len[d] += x;
  const std::vector<std::vector<std::uint32_t>> docs_of = partition_members(balanced_partition(len, P), P);

  struct worker_state {
    std::vector<std::int32_t> ndk;  // per local doc × K
    std::vector<std::uint32_t> z;   // topics of the local docs' tokens, doc by doc, entry by entry
    std::mt19937_64 rng;            // the worker's random stream (initial topics, then its sweeps)
    std::string error;              // a local invariant violation

    /// What a checkpoint keeps (worker::on_checkpoint): the topics and the generator; n_dk is
    /// recounted from the topics.
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
      ndk.assign(docs.size() * K, 0);
      for (std::size_t i = 0, zi = 0; i < docs.size(); ++i)
        for (auto x : c.counts[docs[i]])
          for (std::uint32_t j = 0; j < x; ++j) ++ndk[i * K + z[zi++]];
    }
  };
  std::vector<worker_state> state(P);
  // Initial topics, drawn here (same stream the worker continues with) so that the LL of the
  // initial state (iteration 0) is exact under every model. A resumed run restores them instead.
  double ll0 = 0;
  for (std::uint32_t p = 0; p < P; ++p) state[p].rng.seed(o.seed * 0x9e3779b97f4a7c15ULL + p + 1);
  if (!resumed) {
    std::vector<std::int64_t> nw(std::size_t{V} * K, 0), nk0(K, 0);
    for (std::uint32_t p = 0; p < P; ++p) {
      auto& st = state[p];
      st.ndk.assign(docs_of[p].size() * K, 0);
      std::uint64_t mine = 0;  // exactly this worker's tokens: no doubling past what the corpus holds
      for (auto d : docs_of[p]) mine += len[d];
      st.z.reserve(mine);
      for (std::size_t i = 0; i < docs_of[p].size(); ++i) {
        const auto d = docs_of[p][i];
        for (std::size_t e = 0; e < corpus.words[d].size(); ++e)
          for (std::uint32_t j = 0; j < corpus.counts[d][e]; ++j) {
            const auto k = static_cast<std::uint32_t>(detail::uniform01(st.rng) * K) % K;
            st.z.push_back(k);
            ++st.ndk[i * K + k];
            ++nw[std::size_t{corpus.words[d][e]} * K + k];
            ++nk0[k];
          }
        ll0 += lda_doc_loglik(std::span<const std::int32_t>(st.ndk.data() + i * K, K), lp);
      }
    }
    for (std::uint32_t x = 0; x < V; ++x) ll0 += lda_word_loglik(std::span<const std::int64_t>(nw.data() + std::size_t{x} * K, K), lp);
    ll0 += lda_topic_loglik(nk0, lp);
  }
  std::vector<std::vector<std::uint32_t>> assignments(o.keep_assignments ? D : 0);

  // The recorder's slots are numbered from `base`; the callback sees the run's iteration numbers.
  std::function<void(const iteration_stats&)> on_slot;
  if (on_iteration)
    on_slot = [base, cb = std::move(on_iteration)](const iteration_stats& r) {
      iteration_stats c = r;
      c.iteration += base;
      cb(c);
    };
  run_recorder rec = make_recorder(sys, red, slots, std::move(on_slot));
  rec.set_metric_name("loglik");
  lda_word_topic_model model;          // with keep_model: filled by worker 0 at the end
  std::vector<std::int32_t> final_nk;  // the topic totals after the run, as read by this process's collector
  // This process's workers' first violation (each reports one).
  std::mutex err_mu;
  std::string local_error;

  // Worker 0, once every update is in: reads every word row into `model`.
  if (o.keep_model) {
    model.topics = K;
    model.vocab = V;
    model.alpha = o.alpha;
    model.beta = o.beta;
  }
  const auto keep_row = [&model](std::uint32_t word, const sparse_row<std::int32_t>& row) {
    auto& out = model.words.at(word);
    out.clear();
    for (const auto& [k, n] : row.entries())
      if (n != 0) out.push_back({k, n});
  };
  auto gather_model = [&](worker& w) -> task<> {
    model.words.resize(V);
    if (o.prefetch)
      prefetch(w, WT, std::views::iota(std::uint32_t{0}, V));
    for (std::uint32_t x = 0; x < V; ++x) keep_row(x, co_await w.get(WT, x));
  };

  auto program = [&](worker& w) -> task<> {
    rec.start_once();
    const worker_id p = w.id();
    std::uint64_t draws = 0;
    const auto& mydocs = docs_of[p];
    auto& st = state[p];
    if (const auto* saved = w.resumed_state()) st.restore(*saved, p, mydocs, corpus, K);
    w.on_checkpoint([&st] { return st.save(); });
    std::vector<std::uint32_t> mywords, evalwords;
    {
      std::vector<char> seen(V, 0);
      for (auto d : mydocs)
        for (auto x : corpus.words[d]) seen[x] = 1;
      for (std::uint32_t x = 0; x < V; ++x) {
        if (seen[x]) mywords.push_back(x);
        if (x % P == p) evalwords.push_back(x);
      }
    }
    std::mt19937_64& rng = st.rng;
    std::vector<std::int32_t> wdelta(K, 0), tdelta(K, 0);
    std::vector<std::uint32_t> touched;
    auto note = [&](std::uint32_t k, std::int32_t dlt) {
      if (wdelta[k] == 0) touched.push_back(k);
      wdelta[k] += dlt;
      tdelta[k] += dlt;
    };
    auto send_word = [&](std::uint32_t word) -> task<> {
      auto delta = w.delta_row(WT);  // a recycled row: its entries fit without allocating once warm
      delta.reserve(touched.size());
      for (auto k : touched) {
        if (wdelta[k] != 0) delta.inc(k, wdelta[k]);
        wdelta[k] = 0;
      }
      touched.clear();
      if (delta.nnz() > 0) co_await w.inc_row(WT, word, std::move(delta));
    };
    auto send_totals = [&]() -> task<> {
      if (std::all_of(tdelta.begin(), tdelta.end(), [](std::int32_t x) { return x == 0; })) co_return;
      auto d = w.delta_row(NT);  // taken only when it is sent: a dropped row would leave the pool
      for (std::uint32_t k = 0; k < K; ++k)
        if (tdelta[k] != 0) d.inc(k, tdelta[k]), tdelta[k] = 0;
      co_await w.inc_row(NT, 0, std::move(d));
    };

    // Clock 0: send the initial topics (drawn before the run). A resumed run's tables hold them.
    if (!resumed) {
      for (std::size_t i = 0, zi = 0; i < mydocs.size(); ++i) {
        const auto d = mydocs[i];
        for (std::size_t e = 0; e < corpus.words[d].size(); ++e) {
          for (std::uint32_t j = 0; j < corpus.counts[d][e]; ++j) note(st.z[zi++], +1);
          co_await send_word(corpus.words[d][e]);
        }
      }
      co_await send_totals();
      rec.end_iteration(w, 0);
      co_await w.clock();
    } else {
      rec.end_iteration(w, 0);  // slot 0: the checkpointed state, evaluated at the first sweep's start
    }

    std::vector<std::int32_t> nk(K);
    auto read_totals = [&]() -> task<> {
      const auto& row = co_await w.get(NT, 0);
      for (std::uint32_t k = 0; k < K; ++k) nk[k] = row[k];
    };
    // LL parts of the current state (this worker's share), charged as evaluation time.
    // With `snapshot` (run_options::eval_every), of the true model: a consistent snapshot of the tables.
    auto evaluate = [&](std::uint32_t it, bool snapshot) -> task<> {
      const auto t0 = std::chrono::steady_clock::now();
      worker::stats_mark mark;
      if (snapshot) {
        mark = co_await snapshot_begin(w);
        co_await read_totals();
      }
      double ll = 0;
      for (std::size_t i = 0; i < mydocs.size(); ++i)
        ll += lda_doc_loglik(std::span<const std::int32_t>(st.ndk.data() + i * K, K), lp);
      if (o.prefetch)
        prefetch(w, WT, evalwords);
      for (auto x : evalwords) {
        const auto& row = co_await w.get(WT, x);
        double s = 0;
        const double lg_beta = log_gamma(o.beta);
        for (const auto& [k, n] : row.entries())
          if (n > 0) s += log_gamma(n + o.beta) - lg_beta;
        ll += s;
      }
      if (p == 0) ll += lda_topic_loglik(nk, lp);
      rec.add_values(p, it - base, ll, ll);
      if (snapshot) co_await snapshot_end(w, mark);
      rec.charge_eval(p, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    };

    sparse_lda_sampler sampler(lp);
    std::vector<topic_count> scratch;
    // The MH sampler's sweep state: per word of this worker (local index), its row as read at its
    // first use in the sweep (snap) and that plus this worker's moves (cur), and its alias table.
    const bool mh = o.sampler == lda_sampler::mh;
    mh_lda_sampler mhs(lp, std::max(o.mh_steps, 1u));
    std::vector<std::uint32_t> local_of, read_in, used;
    std::vector<lda_count> cur, snap;
    std::vector<lda_alias_slice> slices;
    std::vector<alias_entry> pool;
    std::vector<double> wbuf;
    std::vector<std::uint32_t> ibuf, sbuf;
    // The exact sampler's sweep state where increments leave only at the clock (every model but a
    // value bound, whose flushes follow the increments): per word of this worker, its sparse row
    // as read at its first use in the sweep plus this worker's moves (rows), and the row as read
    // (snap_pool[snap_at[li] ..], sorted by topic) to take the net change from at the sweep's end.
    const bool local_rows = !mh && !(sys.model().value_bound < std::numeric_limits<double>::infinity());
    std::vector<std::vector<topic_count>> rows;
    std::vector<topic_count> snap_pool;
    std::vector<std::size_t> snap_at;
    std::vector<std::uint32_t> snap_len;
    if (mh || local_rows) {
      local_of.assign(V, 0);
      for (std::size_t li = 0; li < mywords.size(); ++li) local_of[mywords[li]] = static_cast<std::uint32_t>(li);
      read_in.assign(mywords.size(), 0);
    }
    if (mh) {
      cur.assign(mywords.size() * K, 0);
      snap.assign(mywords.size() * K, 0);
      slices.resize(mywords.size());
    }
    if (local_rows) {
      rows.resize(mywords.size());
      snap_at.assign(mywords.size(), 0);
      snap_len.assign(mywords.size(), 0);
    }
    // One sweep over this worker's documents against local word rows (sweep `it`), for either
    // sampler: per document, the words new to the sweep are read first (the only suspension:
    // `first_read(li, row)` copies the row it is given), then `sample(i, d, zi, nd)` draws the
    // document's nd tokens from z[zi]; at the end each word's net change is sent once:
    // `change(li, a)` adds it into a (K counts, zero on entry; left zero again). Returns the
    // tokens drawn. The callables are taken by value: they live in the coroutine's frame.
    auto local_sweep = [&](std::uint32_t it, auto first_read, auto sample, auto change) -> task<std::uint64_t> {
      used.clear();
      std::size_t zi = 0;
      std::uint64_t n = 0;
      for (std::size_t i = 0; i < mydocs.size(); ++i) {
        const auto d = mydocs[i];
        co_await w.yield();
        std::size_t nd = 0;
        for (std::size_t e = 0; e < corpus.words[d].size(); ++e) {
          nd += corpus.counts[d][e];
          const std::uint32_t word = corpus.words[d][e], li = local_of[word];
          if (read_in[li] == it) continue;
          const auto& row = co_await w.get(WT, word);
          first_read(li, row);
          read_in[li] = it;
          used.push_back(li);
        }
        sample(i, d, zi, nd);
        zi += nd;
        n += nd;
      }
      std::vector<lda_count> a(K, 0);
      for (auto li : used) {
        change(li, a);
        std::uint32_t nnz = 0;
        for (std::uint32_t k = 0; k < K; ++k) nnz += a[k] != 0;
        if (nnz == 0) continue;
        auto delta = w.delta_row(WT);
        delta.reserve(nnz);
        for (std::uint32_t k = 0; k < K; ++k)
          if (a[k] != 0) delta.inc(k, a[k]), a[k] = 0;
        co_await w.inc_row(WT, mywords[li], std::move(delta));
      }
      co_return n;
    };
    // Samples every token of document i (corpus document d, its first token at z[zi]) against
    // the local rows, all read already. A plain function, not part of the coroutine, so its loop
    // state stays in registers instead of the coroutine's frame.
    const auto sample_document = [&](std::size_t i, std::uint32_t d, std::size_t zi, std::size_t) {
      sampler.begin_document(std::span<std::int32_t>(st.ndk.data() + i * K, K));  // edits n_dk in place
      const auto& dw = corpus.words[d];
      const auto& dc = corpus.counts[d];
      const std::size_t m = dw.size();
      // Rows are most likely out of cache (16k of them; a document touches a few): the row two
      // words ahead has its vector's header fetched, the next one its first lines, so the misses
      // overlap this word's draws.
      auto prefetch_header = [&](std::size_t e) { detail::prefetch_read(&rows[local_of[dw[e]]]); };
      auto prefetch_row = [&](std::size_t e) {
        const auto& r = rows[local_of[dw[e]]];
        const char* at = reinterpret_cast<const char*>(r.data());
        const std::size_t bytes = std::min<std::size_t>(r.size() * sizeof(topic_count), 256);
        for (std::size_t off = 0; off < bytes; off += 64) detail::prefetch_read(at + off);
      };
      if (m > 1) prefetch_header(1);
      for (std::size_t e = 0; e < m; ++e) {
        if (e + 2 < m) prefetch_header(e + 2);
        if (e + 1 < m) prefetch_row(e + 1);
        auto& row = rows[local_of[dw[e]]];
        for (std::uint32_t j = 0; j < dc[e]; ++j, ++zi) {
          const std::uint32_t old = st.z[zi];
          const std::uint32_t k = sampler.resample(old, std::span<const topic_count>(row), rng);
          if (k != old) {
            detail::sparse_row_add(row, old, -1);
            detail::sparse_row_add(row, k, +1);
            --tdelta[old];
            ++tdelta[k];
            st.z[zi] = k;
          }
        }
      }
    };
    // One exact (SparseLDA) sweep (sweep `it`): a word's first read fills its local row and its
    // snapshot, which the net change is taken against.
    auto exact_sweep = [&](std::uint32_t it) -> task<std::uint64_t> {
      sampler.set_topic_totals(nk);
      snap_pool.clear();
      const auto first_read = [&](std::uint32_t li, const sparse_row<std::int32_t>& r) {
        auto& row = rows[li];
        row.clear();
        snap_at[li] = snap_pool.size();
        snap_len[li] = static_cast<std::uint32_t>(r.entries().size());
        for (const auto& [k, cnt] : r.entries()) row.push_back({k, cnt}), snap_pool.push_back({k, cnt});
      };
      const auto change = [&](std::uint32_t li, std::vector<lda_count>& a) {
        for (const auto& [k, c] : rows[li]) a[k] += c;
        for (std::size_t x = snap_at[li]; x < snap_at[li] + snap_len[li]; ++x) a[snap_pool[x].topic] -= snap_pool[x].count;
      };
      const std::uint64_t n = co_await local_sweep(it, first_read, sample_document, change);
      sampler.end_document();
      co_return n;
    };
    // Samples every token of document i (corpus document d, its nd tokens from z[zi]) with the MH
    // sampler against the local rows and proposals, all built already; a plain function, as
    // sample_document is for the exact sampler, and it prefetches the same way.
    const auto mh_document = [&](std::size_t i, std::uint32_t d, std::size_t zi, std::size_t nd) {
      mhs.begin_document(std::span<std::int32_t>(st.ndk.data() + i * K, K), std::span<const std::uint32_t>(st.z.data() + zi, nd));
      const auto& dw = corpus.words[d];
      const auto& dc = corpus.counts[d];
      const std::size_t m = dw.size();
      auto prefetch_word = [&](std::size_t e) {
        const std::size_t li = local_of[dw[e]];
        const char* c = reinterpret_cast<const char*>(cur.data() + li * K);
        const char* sn = reinterpret_cast<const char*>(snap.data() + li * K);
        for (std::size_t off = 0; off < K * sizeof(lda_count); off += 64) detail::prefetch_read(c + off), detail::prefetch_read(sn + off);
        detail::prefetch_read(pool.data() + slices[li].offset);
      };
      if (m > 1) detail::prefetch_read(&slices[local_of[dw[1]]]);
      for (std::size_t e = 0; e < m; ++e) {
        if (e + 2 < m) detail::prefetch_read(&slices[local_of[dw[e + 2]]]);
        if (e + 1 < m) prefetch_word(e + 1);
        const std::size_t li = local_of[dw[e]];
        lda_count* c = cur.data() + li * K;
        const lda_word_proposal wp{std::span<const alias_entry>(pool.data() + slices[li].offset, slices[li].size),
                                   std::span<const lda_count>(snap.data() + li * K, K), slices[li].mass};
        for (std::uint32_t j = 0; j < dc[e]; ++j, ++zi) {
          const std::uint32_t old = st.z[zi];
          const std::uint32_t k = mhs.resample(old, std::span<lda_count>(c, K), wp, rng);
          if (k != old) {
            --tdelta[old];
            ++tdelta[k];
            st.z[zi] = k;
          }
        }
      }
    };
    // One MH sweep (sweep `it`): a word's first read fills its dense row and snapshot and builds
    // its alias table (the word proposal) from the snapshot.
    auto mh_sweep = [&](std::uint32_t it) -> task<std::uint64_t> {
      mhs.set_topic_totals(nk);
      pool.clear();
      const auto first_read = [&](std::uint32_t li, const sparse_row<std::int32_t>& row) {
        lda_count* c = cur.data() + std::size_t{li} * K;
        lda_count* sn = snap.data() + std::size_t{li} * K;
        std::fill(c, c + K, 0);
        for (const auto& [k, cnt] : row.entries()) c[k] = cnt;
        std::copy(c, c + K, sn);
        slices[li] = build_word_alias(std::span<const lda_count>(sn, K), pool, wbuf, ibuf, sbuf);
      };
      const auto change = [&](std::uint32_t li, std::vector<lda_count>& a) {
        const lda_count* c = cur.data() + std::size_t{li} * K;
        const lda_count* sn = snap.data() + std::size_t{li} * K;
        for (std::uint32_t k = 0; k < K; ++k) a[k] += c[k] - sn[k];
      };
      co_return co_await local_sweep(it, first_read, mh_document, change);
    };
    for (std::uint32_t it = std::max(start, 1u); it <= o.iterations; ++it) {
      co_await read_totals();
      if (resumed && it == start) co_await evaluate(it - 1, o.eval_every > 0);  // where the run resumes
      else if (it == 1) rec.add_values(p, 0, p == 0 ? ll0 : 0.0, p == 0 ? ll0 : 0.0);  // exact, computed before the run
      else if (o.eval_every == 0) co_await evaluate(it - 1, false);
      else if (o.snapshot_due(it - 1, o.iterations)) co_await evaluate(it - 1, true);
      else rec.add_values(p, it - 1 - base, std::nan(""), std::nan(""));
      if (o.prefetch)
        prefetch(w, WT, mywords);
      if (mh || local_rows) {
        if (mh)
          draws += co_await mh_sweep(it);
        else
          draws += co_await exact_sweep(it);
        co_await send_totals();
        rec.end_iteration(w, it - base);
        co_await w.clock();
        continue;
      }
      sampler.set_topic_totals(nk);
      std::size_t zi = 0;
      std::uint64_t n = 0;
      for (std::size_t i = 0; i < mydocs.size(); ++i) {
        const auto d = mydocs[i];
        co_await w.yield();
        sampler.begin_document(std::span<std::int32_t>(st.ndk.data() + i * K, K));  // edits n_dk in place
        for (std::size_t e = 0; e < corpus.words[d].size(); ++e) {
          const std::uint32_t word = corpus.words[d][e];
          {
            const auto& row = co_await w.get(WT, word);
            const auto& es = row.entries();
            scratch.resize(es.size());
            for (std::size_t i = 0; i < es.size(); ++i) scratch[i] = {es[i].first, es[i].second};
          }
          for (std::uint32_t j = 0; j < corpus.counts[d][e]; ++j, ++zi) {
            const std::uint32_t old = st.z[zi];
            const std::uint32_t k = sampler.resample(old, std::span<const topic_count>(scratch), rng);
            if (k != old) {
              detail::sparse_row_add(scratch, old, -1);
              detail::sparse_row_add(scratch, k, +1);
              note(old, -1);
              note(k, +1);
              st.z[zi] = k;
            }
          }
          n += corpus.counts[d][e];
          co_await send_word(word);
        }
      }
      sampler.end_document();
      draws += n;
      co_await send_totals();
      rec.end_iteration(w, it - base);
      co_await w.clock();
    }
    co_await read_totals();
    co_await evaluate(o.iterations, o.eval_every > 0);
    co_await red.settle(w);  // from here on, every read sees the final counts

    // Local invariants: n_dk ≥ 0, Σ_k n_dk = n_d, and n_dk recounted from z.
    std::size_t zi = 0;
    std::vector<std::int32_t> re(K);
    for (std::size_t i = 0; i < mydocs.size() && st.error.empty(); ++i) {
      const auto d = mydocs[i];
      std::fill(re.begin(), re.end(), 0);
      std::int64_t nd = 0, sum = 0;
      for (auto x : corpus.counts[d]) nd += x;
      for (std::int64_t j = 0; j < nd; ++j) ++re[st.z[zi++]];
      for (std::uint32_t k = 0; k < K; ++k) {
        sum += st.ndk[i * K + k];
        if (st.ndk[i * K + k] < 0 || st.ndk[i * K + k] != re[k])
          st.error = "doc " + std::to_string(d) + " topic " + std::to_string(k) + ": n_dk = " +
                     std::to_string(st.ndk[i * K + k]) + ", tokens say " + std::to_string(re[k]);
      }
      if (st.error.empty() && sum != nd)
        st.error = "doc " + std::to_string(d) + ": sum_k n_dk = " + std::to_string(sum) + " != n_d = " + std::to_string(nd);
    }

    // This worker's share of the final sums: its documents, and the word rows w mod P = p, read now.
    std::vector<double> fin(f_docs + K, 0.0);
    std::uint64_t my_tokens = 0;
    for (std::size_t i = 0; i < mydocs.size(); ++i) {
      const std::span<const std::int32_t> nd(st.ndk.data() + i * K, K);
      for (std::uint32_t k = 0; k < K; ++k) fin[f_docs + k] += nd[k];
      fin[f_ll] += lda_doc_loglik(nd, lp);
      for (auto x : corpus.counts[mydocs[i]]) my_tokens += x;
    }
    if (o.prefetch)
      prefetch(w, WT, evalwords);
    std::string word_error;
    for (auto x : evalwords) {
      const auto& row = co_await w.get(WT, x);
      for (const auto& [k, n] : row.entries()) {
        fin[f_words + k] += n;
        if (n < 0) {
          fin[f_neg] += 1;
          if (word_error.empty())
            word_error = "word " + std::to_string(x) + " topic " + std::to_string(k) + ": n_wk = " + std::to_string(n);
        }
      }
      fin[f_ll] += lda_word_loglik(row.entries() | std::views::transform([](const auto& e) { return e.second; }), lp);
    }
    fin[f_err] = st.error.empty() ? 0.0 : 1.0;
    fin[f_tokens] = static_cast<double>(my_tokens);
    fin[f_draws] = static_cast<double>(draws);
    if (!st.error.empty() || !word_error.empty()) {
      std::lock_guard lk(err_mu);
      if (local_error.empty()) local_error = !st.error.empty() ? st.error : word_error;
    }
    if (o.keep_assignments)  // each worker writes only its own documents' entries
      for (std::size_t i = 0, zi = 0; i < mydocs.size(); ++i) {
        std::uint64_t nd = 0;
        for (auto x : corpus.counts[mydocs[i]]) nd += x;
        assignments[mydocs[i]].assign(st.z.begin() + static_cast<std::ptrdiff_t>(zi), st.z.begin() + static_cast<std::ptrdiff_t>(zi + nd));
        zi += nd;
      }
    if (o.keep_model && p == 0) co_await gather_model(w);
    co_await red.publish(w, rec, fin);
    if (red.collects(w)) {
      co_await red.collect(w, {}, "loglik");
      co_await read_totals();  // n_k (unchanged since the first settle)
      final_nk = nk;
    }
  };

  lda_run out;
  const auto& f = run_program(sys, rec, red, program, out, f_docs + K, "train_lda");
  if (final_nk.size() != K) throw strata::error(errc::bad_input, "train_lda: the final topic totals were not read");
  for (auto& r : out.iterations) r.iteration += base;
  if (out.iterations.size() > 1) out.sampling_s = out.iterations.back().elapsed_s - out.iterations.front().elapsed_s;
  out.model = std::move(model);
  out.assignments = std::move(assignments);
  out.tokens_sampled = static_cast<std::uint64_t>(f[f_draws] + 0.5);

  // Global invariants from the summed parts, and the exact final LL.
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
  out.final_loglik = f[f_ll] + lda_topic_loglik(final_nk, lp);
  out.invariants_ok = err.empty();
  out.invariant_error = err;
  return out;
}

/// Throughput of a plain single-threaded collapsed Gibbs loop over the same corpus (lda_reference,
/// no parameter server), in tokens per second, for the given sampler: `sweeps` sweeps, timed
/// without the initialisation and the log-likelihood evaluations.
inline double lda_baseline_tokens_per_s(const lda_corpus& corpus, const lda_trainer_options& o, std::uint32_t sweeps,
                                        lda_sampler sampler) {
  std::vector<std::vector<std::uint32_t>> docs(corpus.words.size());
  for (std::size_t d = 0; d < docs.size(); ++d)
    for (std::size_t e = 0; e < corpus.words[d].size(); ++e) docs[d].insert(docs[d].end(), corpus.counts[d][e], corpus.words[d][e]);
  lda_options lo;
  lo.num_topics = o.topics;
  lo.alpha = o.alpha;
  lo.beta = o.beta;
  lo.seed = o.seed;
  lo.sampler = sampler;
  lo.mh_steps = o.mh_steps;
  lo.loglik_every = 0;
  lo.iterations = sweeps;
  const auto r = lda_reference(docs, corpus.vocab_size, lo);
  return static_cast<double>(corpus.tokens()) * sweeps / std::max(r.sweep_seconds, 1e-9);
}

}  // namespace strata::ml
