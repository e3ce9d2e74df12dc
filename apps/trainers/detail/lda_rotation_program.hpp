#pragma once
/// \file The word-rotation LDA trainer's STRADS program (apps/trainers/lda_rotation.hpp says what it
/// does); only apps/src/lda_rotation.cpp includes it.
#include <strata/core/clock.hpp>
#include <trainers/lda_rotation.hpp>

#include <strata/core/error.hpp>
#include <strata/ml/lda.hpp>
#include <strata/ml/partition.hpp>
#include <trainers/lda_trainer.hpp>
#include <trainers/run_stats.hpp>
#include <strata/runtime/system.hpp>
#include <strata/runtime/task.hpp>
#include <strata/runtime/worker.hpp>
#include <strata/sched/engine.hpp>
#include <strata/sched/schedulers.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace strata::ml {

namespace detail {
/// h(w, k) of the word-topic fingerprint.
inline std::uint64_t lda_fp(std::uint32_t w, std::uint32_t k) noexcept {
  std::uint64_t x = (std::uint64_t{w} << 32) | k;
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A part of one block's word-topic rows on the wire: the rows of the block's words first,
/// first + 1, ...; word first + i's non-zeros are topics/counts[offsets[i] .. offsets[i+1]). A
/// block goes as several parts (each under the transport's message limit: at K = 10,000 a block
/// is tens of MB), the one with `last` set closing it.
struct lda_block_msg {
  std::uint32_t block = 0;
  std::uint64_t round = 0;  ///< the round the receiver samples it in
  std::uint32_t first = 0;  ///< index in the block of this part's first word
  bool last = true;
  std::vector<std::uint32_t> offsets, topics;
  std::vector<std::int32_t> counts;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(block, round, first, last, offsets, topics, counts);
  }
};
}  // namespace detail

/// The STRADS program of word-rotation LDA (sched/engine.hpp's `program`); see the file comment.
class lda_rotation_program {
 public:
  struct partial_type {
    std::uint32_t block = 0;               ///< the block this worker sampled
    std::vector<std::int32_t> dnk;         ///< its net change of the topic totals
    std::uint64_t draws = 0;               ///< tokens sampled
    double eval_s = 0;                     ///< seconds spent evaluating
    bool evaluated = false;
    double ll = 0;                         ///< doc parts of its documents + word parts of its block
    std::vector<std::int64_t> words_k, docs_k;  ///< final: Σ_w n_wk over its block, Σ_d n_dk over its documents
    std::uint64_t fp_rows = 0, fp_tokens = 0;   ///< final: fingerprints of its block and of its tokens
    std::uint64_t tokens = 0;              ///< final: tokens of its documents
    std::string error;                     ///< final: its first local violation
    template <class Ar>
    void serialize(Ar& ar) {
      ar(block, dnk, draws, eval_s, evaluated, ll, words_k, docs_k, fp_rows, fp_tokens, tokens, error);
    }
  };
  struct update_type {
    std::vector<std::int32_t> nk;  ///< the topic totals after the round
    template <class Ar>
    void serialize(Ar& ar) {
      ar(nk);
    }
  };

  /// Splits `corpus` for P workers and draws the initial topics (every process does the same).
  lda_rotation_program(const lda_corpus& corpus, const lda_rotation_options& o, std::uint32_t workers)
      : c_(corpus), o_(o), lp_{o.topics, corpus.vocab_size, o.alpha, o.beta}, P_(workers), B_(workers),
        rounds_(std::uint64_t{o.iterations} * workers), nk_(o.topics, 0), holds_(std::size_t{workers} * workers, 0) {
    const std::uint32_t K = o.topics, V = corpus.vocab_size, D = static_cast<std::uint32_t>(corpus.words.size());
    if (K == 0 || V == 0 || !(o.alpha > 0) || !(o.beta > 0))
      throw strata::error(errc::bad_input, "train_lda_rotation: need topics > 0, vocabulary > 0, alpha > 0, beta > 0");
    if (workers == 0) throw strata::error(errc::bad_input, "train_lda_rotation: no workers");
    // Word frequencies → blocks; documents → workers (as lda_trainer).
    std::vector<std::uint64_t> freq(V, 0), len(D, 0);
    for (std::uint32_t d = 0; d < D; ++d)
      for (std::size_t e = 0; e < corpus.words[d].size(); ++e) {
        if (corpus.words[d][e] >= V) throw strata::error(errc::bad_input, "train_lda_rotation: word id beyond the vocabulary");
        freq[corpus.words[d][e]] += corpus.counts[d][e];
        len[d] += corpus.counts[d][e];
      }
    block_of_ = balanced_partition(freq, B_);
    index_in_block_.assign(V, 0);
    block_words_.assign(B_, {});
    for (std::uint32_t x = 0; x < V; ++x) {
      index_in_block_[x] = static_cast<std::uint32_t>(block_words_[block_of_[x]].size());
      block_words_[block_of_[x]].push_back(x);
    }
    const auto docs_of = partition_members(balanced_partition(len, P_), P_);
    // With MH: each block's most frequent words get dense (current, snapshot) rows while the block
    // is held, up to mh_dense_mb MiB per worker, a word only if it has K/8 tokens or more (its
    // row's O(K) set-up per round then stays under 8 steps per token).
    dense_slot_.assign(B_, {});
    dense_rows_.assign(B_, 0);
    if (o.sampler == lda_sampler::mh) {
      const std::uint64_t budget = (std::uint64_t{o.mh_dense_mb} << 20) / (std::uint64_t{K} * sizeof(lda_count_pair));
      for (std::uint32_t b = 0; b < B_; ++b) {
        auto order = block_words_[b];
        std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) { return freq[x] > freq[y]; });
        dense_slot_[b].assign(order.size(), npos);
        for (auto x : order) {
          if (dense_rows_[b] >= budget || freq[x] * 8 < K) break;
          dense_slot_[b][index_in_block_[x]] = dense_rows_[b]++;
        }
      }
    }

    // Initial topics: the data-parallel trainer's streams and order.
    st_.resize(P_);
    ll0_ = 0;
    for (std::uint32_t p = 0; p < P_; ++p) {
      auto& s = st_[p];
      s.rng.seed(o.seed * 0x9e3779b97f4a7c15ULL + p + 1);
      s.docs = docs_of[p];
      s.nd = doc_topic_scratch(K);
      s.doc_z.reserve(s.docs.size() + 1);
      s.segs.assign(B_, {});
      s.ents.assign(B_, {});
      std::uint64_t mine = 0;  // exactly this worker's tokens: no doubling past what the corpus holds
      for (auto d : s.docs) mine += len[d];
      s.z.reserve(mine);
      for (std::size_t i = 0; i < s.docs.size(); ++i) {
        const auto d = s.docs[i];
        s.doc_z.push_back(s.z.size());
        std::vector<std::uint32_t> last(B_, ~0u);
        for (std::size_t e = 0; e < corpus.words[d].size(); ++e) {
          const std::uint32_t x = corpus.words[d][e], b = block_of_[x];
          if (last[b] != i) {
            s.segs[b].push_back({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(s.ents[b].size()), 0});
            last[b] = static_cast<std::uint32_t>(i);
          }
          s.ents[b].push_back({index_in_block_[x], corpus.counts[d][e], static_cast<std::uint32_t>(s.z.size())});
          s.segs[b].back().end = static_cast<std::uint32_t>(s.ents[b].size());
          for (std::uint32_t j = 0; j < corpus.counts[d][e]; ++j) {
            const auto k = static_cast<std::uint32_t>(detail::uniform01(s.rng) * K) % K;
            s.z.push_back(k);
            ++nk_[k];
          }
        }
        ll0_ += s.nd.loglik(std::span<const std::uint32_t>(s.z).subspan(s.doc_z[i]), lp_);
      }
      s.doc_z.push_back(s.z.size());
    }
    // Round 0: block b with worker b; the rows counted word by word from the topics.
    const auto wz = word_topics();
    std::vector<lda_count> scratch(K, 0);
    for (std::uint32_t p = 0; p < P_; ++p) {
      auto& s = st_[p];
      s.block = p;
      s.rows.resize(block_words_[p].size());
      for (std::size_t i = 0; i < s.rows.size(); ++i) {
        const auto x = block_words_[p][i];
        s.rows[i] = count_row(wz.of(x), scratch);
      }
      s.nk = nk_;
    }
    for (std::uint32_t b = 0; b < B_; ++b)
      for (const auto& r : st_[b].rows) ll0_ += lda_word_loglik(r, lp_);
    ll0_ += lda_topic_loglik(nk_, lp_);
  }

  std::uint32_t vars() const noexcept { return B_; }
  /// Rounds of the run (iterations × B).
  std::uint64_t rounds() const noexcept { return rounds_; }
  /// Marks the start of the run (the records' elapsed_s).
  void start() { t0_ = strata::run_clock::now(); }
  /// Called on the coordinator's thread after each evaluated pull (the trainer's progress).
  std::function<void(const iteration_stats&)> on_iteration;

  task<partial_type> push(worker& w, const sched::plan& pl) {
    const worker_id p = w.id();
    auto& s = st_.at(p);
    const std::uint32_t K = o_.topics;
    partial_type out;
    std::uint32_t mine = 0, count = 0;
    pl.for_worker(p, [&](sched::var_id b) { mine = b, ++count; });
    if (count != 1)
      throw strata::error(errc::bad_input, "lda rotation: worker " + std::to_string(p) + " got " + std::to_string(count) +
                                               " blocks in round " + std::to_string(pl.round) + " (needs exactly one)");
    if (s.block != mine || s.round != pl.round) {
      s.rows.assign(block_words_.at(mine).size(), {});
      for (std::size_t next = 0;;) {
        auto m = co_await w.receive<detail::lda_block_msg>();
        if (m.value.block != mine || m.value.round != pl.round)
          throw strata::error(errc::bad_frame, "lda rotation: worker " + std::to_string(p) + " received block " +
                                                   std::to_string(m.value.block) + " for round " + std::to_string(m.value.round) +
                                                   ", but round " + std::to_string(pl.round) + " gives it block " + std::to_string(mine));
        next = unpack(m.value, next, s.rows);
        if (m.value.last) break;
      }
      s.block = mine;
    }
    out.block = mine;

    // Sample the tokens of this worker's documents whose word is in the block.
    const auto view = o_.sampler == lda_sampler::mh ? sample_mh(s, mine, out) : sample_sparse(s, mine, out);
    out.dnk.resize(K);
    for (std::uint32_t k = 0; k < K; ++k) out.dnk[k] = view[k] - s.nk[k];

    const bool last = pl.round + 1 == rounds_;
    if ((pl.round + 1) % B_ == 0) evaluate(s, mine, last, out);

    // Hand the block to its owner in the next round.
    s.round = pl.round + 1;
    if (!last && P_ > 1) {
      for (std::size_t i = 0; i < s.rows.size() || i == 0;) {
        detail::lda_block_msg m;
        m.block = mine;
        m.round = pl.round + 1;
        i = pack(s.rows, i, m);
        w.send(peer::worker((p + 1) % P_), m);
      }
      s.block = ~0u;
      s.rows.clear();
    }
    co_return out;
  }

  void sync(worker& w, const update_type& u) { st_.at(w.id()).nk = u.nk; }

  update_type pull(const sched::plan& pl, std::vector<partial_type>& parts) {
    const std::uint32_t K = o_.topics;
    std::vector<std::uint32_t> holders(B_, 0);
    for (std::uint32_t p = 0; p < parts.size(); ++p) {
      const auto& q = parts[p];
      if (q.dnk.size() != K || q.block >= B_)
        throw strata::error(errc::bad_frame, "lda rotation: a malformed partial in round " + std::to_string(pl.round));
      for (std::uint32_t k = 0; k < K; ++k) nk_[k] += q.dnk[k];
      draws_ += q.draws;
      ++holders[q.block];
      ++holds_[std::size_t{p} * B_ + q.block];
    }
    for (auto h : holders) conflicts_ += h > 1;
    ++pulled_;
    if (parts.front().evaluated) record(pl, parts);
    update_type u;
    u.nk = nk_;
    return u;
  }

  /// Iteration 0's exact LL (the initial state).
  double initial_loglik() const noexcept { return ll0_; }
  const std::vector<iteration_stats>& iterations() const noexcept { return iters_; }
  std::uint64_t draws() const noexcept { return draws_; }
  std::uint64_t conflicts() const noexcept { return conflicts_; }
  const std::vector<std::uint64_t>& holds() const noexcept { return holds_; }
  std::uint64_t pulled() const noexcept { return pulled_; }
  /// The final check's verdict ("" when every invariant held); valid after the last pull.
  const std::string& final_error() const noexcept { return final_error_; }
  bool checked() const noexcept { return checked_; }
  double final_loglik() const noexcept { return final_ll_; }

  /// With every worker in this process, after the run: per document, its tokens' topics, entry by
  /// entry (lda_run::assignments).
  std::vector<std::vector<std::uint32_t>> assignments() const {
    std::vector<std::vector<std::uint32_t>> out(c_.words.size());
    for (const auto& s : st_)
      for (std::size_t i = 0; i < s.docs.size(); ++i) {
        const auto z = doc_topics(s, i);
        out[s.docs[i]].assign(z.begin(), z.end());
      }
    return out;
  }

  /// With every worker in this process, after the run: the word-topic counts the workers hold.
  lda_word_topic_model model() const {
    lda_word_topic_model m;
    m.topics = o_.topics;
    m.vocab = c_.vocab_size;
    m.alpha = o_.alpha;
    m.beta = o_.beta;
    m.words.resize(c_.vocab_size);
    for (const auto& s : st_)
      if (s.block < B_)
        for (std::size_t i = 0; i < s.rows.size(); ++i) {
          auto& row = m.words[block_words_[s.block][i]];
          for (const auto& tc : s.rows[i])
            if (tc.count != 0) row.push_back(tc);
          std::sort(row.begin(), row.end(), [](const topic_count& a, const topic_count& b) { return a.topic < b.topic; });
        }
    return m;
  }

  /// With every worker in this process, after the run: recounts every word's n_wk and the n_k
  /// from the assignments (word by word, never a words × K table) and compares them with the
  /// blocks the workers hold and the totals. Returns "" when they agree. (Each document's n_dk
  /// were checked against its topics as it was sampled.)
  std::string recount() const {
    const std::uint32_t K = o_.topics;
    const auto wz = word_topics();
    std::vector<std::int64_t> nk(K, 0);
    for (auto k : wz.topics) ++nk[k];
    std::vector<char> seen(B_, 0);
    std::vector<lda_count> scratch(K, 0);
    for (const auto& s : st_) {
      if (s.block >= B_) return "recount: a worker holds no block at the end";
      if (seen[s.block]++) return "recount: block " + std::to_string(s.block) + " is held twice at the end";
      for (std::size_t i = 0; i < block_words_[s.block].size(); ++i) {
        const auto x = block_words_[s.block][i];
        auto want = count_row(wz.of(x), scratch);
        std::vector<topic_count> have;
        for (const auto& tc : s.rows.at(i))
          if (tc.count != 0) have.push_back(tc);
        std::sort(have.begin(), have.end(), [](const topic_count& a, const topic_count& b) { return a.topic < b.topic; });
        for (std::size_t j = 0; j < std::max(have.size(), want.size()); ++j) {
          const auto h = j < have.size() ? have[j] : topic_count{K, 0};
          const auto w = j < want.size() ? want[j] : topic_count{K, 0};
          if (h.topic != w.topic || h.count != w.count) {
            const auto k = std::min(h.topic, w.topic);
            auto at = [&](const std::vector<topic_count>& r) {
              for (const auto& tc : r)
                if (tc.topic == k) return tc.count;
              return lda_count{0};
            };
            return "recount: word " + std::to_string(x) + " topic " + std::to_string(k) + ": n_wk = " + std::to_string(at(have)) +
                   ", assignments say " + std::to_string(at(want));
          }
        }
      }
    }
    for (std::uint32_t k = 0; k < K; ++k)
      if (nk[k] != nk_[k])
        return "recount: topic " + std::to_string(k) + ": n_k = " + std::to_string(nk_[k]) + ", assignments say " + std::to_string(nk[k]);
    return {};
  }

 private:
  struct seg {
    std::uint32_t doc = 0, begin = 0, end = 0;  // local doc; its entries [begin, end) of ents[b]
  };
  struct ent {
    std::uint32_t word = 0;   // index of the word in its block
    std::uint32_t count = 0;  // occurrences in the document
    std::uint32_t z = 0;      // first topic slot in z
  };
  struct worker_state {
    std::mt19937_64 rng;
    std::vector<std::uint32_t> docs;                  // global doc ids, increasing
    std::vector<std::uint64_t> doc_z;                 // local doc i's topics are z[doc_z[i], doc_z[i + 1])
    doc_topic_scratch nd;                             // the document being sampled's n_dk, recounted from z
    std::string error;                                // its first local violation
    std::vector<std::uint32_t> z;                     // topics, doc by doc, entry by entry
    std::vector<std::vector<seg>> segs;               // per block: the documents with words in it
    std::vector<std::vector<ent>> ents;               // per block: those documents' entries
    std::uint32_t block = ~0u;                        // the block whose rows it holds
    std::uint64_t round = 0;                          // the round `rows` are current for
    std::vector<std::vector<topic_count>> rows;       // the held block's rows, by index in block
    std::vector<std::int32_t> nk;                     // topic totals at the last sync
    std::unique_ptr<sparse_lda_sampler> sampler;
    // With the MH sampler, during a push: the block's rows sorted by topic with their counts at
    // the round's start (the word proposals' snapshot: exact, as the block has one writer) and
    // the words' alias tables over them.
    std::unique_ptr<mh_lda_sampler> mh;
    std::vector<std::vector<lda_word_entry>> mrows;   // the sparse words'
    std::vector<lda_count_pair> dense;                // the dense words', K pairs each (dense_slot_)
    std::vector<alias_entry> alias;
    std::vector<lda_alias_slice> slices;
    std::vector<double> weights;
    std::vector<std::uint32_t> ids, alias_scratch;
  };

  static std::span<const std::uint32_t> doc_topics(const worker_state& s, std::size_t i) {
    return {s.z.data() + s.doc_z[i], static_cast<std::size_t>(s.doc_z[i + 1] - s.doc_z[i])};
  }
  /// After a document's draws: its counts out of the scratch, a mismatch with its topics kept.
  static void unload(worker_state& s, std::size_t i) {
    if (!s.nd.unload(doc_topics(s, i)) && s.error.empty())
      s.error = "doc " + std::to_string(s.docs[i]) + ": the sampler's n_dk differ from the recount of its tokens' topics";
  }

  // SparseLDA over the block's sparse rows (exact draws); returns the sampler's topic totals.
  std::span<const lda_count> sample_sparse(worker_state& s, std::uint32_t b, partial_type& out) {
    if (!s.sampler) s.sampler = std::make_unique<sparse_lda_sampler>(lp_);
    auto& sampler = *s.sampler;
    sampler.set_topic_totals(s.nk);
    for (const auto& g : s.segs[b]) {
      const auto zs = doc_topics(s, g.doc);
      sampler.begin_document(s.nd.load(zs), zs);  // O(n_d), not O(K)
      for (std::uint32_t q = g.begin; q < g.end; ++q) {
        const auto& e = s.ents[b][q];
        auto& row = s.rows[e.word];
        for (std::uint32_t j = 0; j < e.count; ++j) {
          std::uint32_t& z = s.z[e.z + j];
          const std::uint32_t k = sampler.resample(z, std::span<const topic_count>(row), s.rng);
          if (k != z) {
            detail::sparse_row_add(row, z, -1);
            detail::sparse_row_add(row, k, +1);
            z = k;
          }
        }
        out.draws += e.count;
      }
      unload(s, g.doc);
    }
    sampler.end_document();
    return sampler.topic_totals();
  }

  // Metropolis–Hastings (ml/lda_mh_sampler.hpp) with the word proposals built from the block's
  // exact rows at the round's start: O(1) per proposal at any K. Returns the topic totals.
  std::span<const lda_count> sample_mh(worker_state& s, std::uint32_t b, partial_type& out) {
    if (!s.mh) s.mh = std::make_unique<mh_lda_sampler>(lp_, o_.mh_steps);
    auto& mh = *s.mh;
    mh.set_topic_totals(s.nk);
    const std::size_t n = s.rows.size();
    const std::uint32_t K = o_.topics;
    const auto& slot = dense_slot_[b];
    s.mrows.resize(n);
    s.slices.resize(n);
    s.alias.clear();
    s.dense.assign(std::size_t{dense_rows_[b]} * K, lda_count_pair{});
    for (std::size_t i = 0; i < n; ++i) {
      auto& r = s.rows[i];
      if (slot[i] != npos) {
        lda_count_pair* d = s.dense.data() + std::size_t{slot[i]} * K;
        for (const auto& tc : r) d[tc.topic] = {tc.count, tc.count};
        s.slices[i] = build_word_alias(std::span<const lda_count_pair>(d, K), s.alias, s.weights, s.ids, s.alias_scratch);
      } else {
        std::sort(r.begin(), r.end(), [](const topic_count& x, const topic_count& y) { return x.topic < y.topic; });
        auto& m = s.mrows[i];
        m.clear();
        m.reserve(r.size());
        for (const auto& tc : r) m.push_back({tc.topic, tc.count, tc.count});
        s.slices[i] = build_word_alias(std::span<const lda_word_entry>(m), s.alias, s.weights, s.ids, s.alias_scratch);
      }
      std::vector<topic_count>().swap(r);  // the block is held once
    }
    for (const auto& g : s.segs[b]) {
      const auto zs = doc_topics(s, g.doc);
      mh.begin_document(s.nd.load(zs), zs);
      for (std::uint32_t q = g.begin; q < g.end; ++q) {
        const auto& e = s.ents[b][q];
        const auto& sl = s.slices[e.word];
        const auto alias = std::span<const alias_entry>(s.alias).subspan(sl.offset, sl.size);
        auto draw = [&](auto& w) {
          for (std::uint32_t j = 0; j < e.count; ++j) s.z[e.z + j] = mh.resample(s.z[e.z + j], w, alias, sl.mass, s.rng);
        };
        if (slot[e.word] != npos) {
          lda_paired_word_counts w{s.dense.data() + std::size_t{slot[e.word]} * K};
          draw(w);
        } else {
          lda_sparse_word_counts w(s.mrows[e.word]);
          draw(w);
        }
        out.draws += e.count;
      }
      unload(s, g.doc);
    }
    for (std::size_t i = 0; i < n; ++i) {
      auto& r = s.rows[i];
      if (slot[i] != npos) {
        const lda_count_pair* d = s.dense.data() + std::size_t{slot[i]} * K;
        for (std::uint32_t k = 0; k < K; ++k)
          if (d[k].current != 0) r.push_back({k, d[k].current});
      } else {
        for (const auto& e : s.mrows[i])
          if (e.current != 0) r.push_back({e.topic, e.current});
        std::vector<lda_word_entry>().swap(s.mrows[i]);
      }
    }
    return mh.topic_totals();
  }

  /// Every token's topic grouped by word: word x's topics are topics[offsets[x], offsets[x + 1]).
  struct word_topic_lists {
    std::vector<std::uint64_t> offsets;
    std::vector<std::uint32_t> topics;
    std::span<const std::uint32_t> of(std::uint32_t x) const {
      return std::span<const std::uint32_t>(topics).subspan(offsets[x], offsets[x + 1] - offsets[x]);
    }
  };
  word_topic_lists word_topics() const {
    const std::uint32_t V = c_.vocab_size;
    word_topic_lists out;
    out.offsets.assign(std::size_t{V} + 1, 0);
    for (const auto& s : st_)
      for (auto d : s.docs)
        for (std::size_t e = 0; e < c_.words[d].size(); ++e) out.offsets[c_.words[d][e] + 1] += c_.counts[d][e];
    for (std::uint32_t x = 0; x < V; ++x) out.offsets[x + 1] += out.offsets[x];
    out.topics.resize(out.offsets[V]);
    auto at = out.offsets;
    for (const auto& s : st_) {
      std::size_t zi = 0;
      for (auto d : s.docs)
        for (std::size_t e = 0; e < c_.words[d].size(); ++e)
          for (std::uint32_t j = 0; j < c_.counts[d][e]; ++j) out.topics[at[c_.words[d][e]]++] = s.z[zi++];
    }
    return out;
  }
  /// A word's sparse row (sorted by topic) counted from its tokens' topics; `scratch` (K, zero) is zero again after.
  static std::vector<topic_count> count_row(std::span<const std::uint32_t> topics, std::vector<lda_count>& scratch) {
    std::vector<topic_count> row;
    for (auto k : topics)
      if (scratch[k]++ == 0) row.push_back({k, 0});
    for (auto& tc : row) tc.count = scratch[tc.topic], scratch[tc.topic] = 0;
    std::sort(row.begin(), row.end(), [](const topic_count& a, const topic_count& b) { return a.topic < b.topic; });
    return row;
  }

  /// Packs rows[from ..] into m until a part's worth (o_.rotation_part_entries entries, at least
  /// one row); returns the index after the last row packed.
  std::size_t pack(const std::vector<std::vector<topic_count>>& rows, std::size_t from, detail::lda_block_msg& m) const {
    const std::size_t part_entries = std::max<std::size_t>(o_.rotation_part_entries, 1);
    m.first = static_cast<std::uint32_t>(from);
    m.offsets.push_back(0);
    std::size_t i = from;
    for (; i < rows.size() && (i == from || (m.topics.size() + rows[i].size() <= part_entries && i - from < part_entries)); ++i) {
      for (const auto& tc : rows[i]) m.topics.push_back(tc.topic), m.counts.push_back(tc.count);
      m.offsets.push_back(static_cast<std::uint32_t>(m.topics.size()));
    }
    m.last = i == rows.size();
    return i;
  }
  /// Unpacks a part that must start at row `next` of the block; returns the row after its last.
  std::size_t unpack(const detail::lda_block_msg& m, std::size_t next, std::vector<std::vector<topic_count>>& rows) const {
    const std::size_t n = rows.size();
    const std::size_t words = m.offsets.empty() ? 0 : m.offsets.size() - 1;
    if (m.first != next || next + words > n || (m.last && next + words != n) || m.offsets.empty() || m.offsets.front() != 0 ||
        m.topics.size() != m.counts.size() || m.offsets.back() != m.topics.size() || !std::is_sorted(m.offsets.begin(), m.offsets.end()))
      throw strata::error(errc::bad_frame, "lda rotation: block " + std::to_string(m.block) + " arrived malformed (a part for words " +
                                               std::to_string(m.first) + ".. of " + std::to_string(n) + ", " + std::to_string(next) +
                                               " expected)");
    for (std::size_t i = 0; i < words; ++i) {
      auto& row = rows[next + i];
      row.reserve(m.offsets[i + 1] - m.offsets[i]);
      for (auto q = m.offsets[i]; q < m.offsets[i + 1]; ++q) {
        if (m.topics[q] >= o_.topics)
          throw strata::error(errc::bad_frame, "lda rotation: block " + std::to_string(m.block) + " names topic " + std::to_string(m.topics[q]));
        row.push_back({m.topics[q], m.counts[q]});
      }
    }
    return next + words;
  }

  // The worker's LL parts after its sampling at the last sub-round of a sweep; at the last round
  // also its share of the invariant checks.
  void evaluate(worker_state& s, std::uint32_t b, bool last, partial_type& out) const {
    const auto t0 = strata::run_clock::now();
    const std::uint32_t K = o_.topics;
    out.evaluated = true;
    for (std::size_t i = 0; i < s.docs.size(); ++i) out.ll += s.nd.loglik(doc_topics(s, i), lp_);
    for (const auto& r : s.rows) out.ll += lda_word_loglik(r, lp_);
    if (last) {
      out.words_k.assign(K, 0);
      out.docs_k.assign(K, 0);
      for (std::size_t i = 0; i < s.rows.size(); ++i)
        for (const auto& tc : s.rows[i]) {
          out.words_k[tc.topic] += tc.count;
          out.fp_rows += static_cast<std::uint64_t>(static_cast<std::int64_t>(tc.count)) * detail::lda_fp(block_words_[b][i], tc.topic);
          if (tc.count < 0 && out.error.empty())
            out.error = "word " + std::to_string(block_words_[b][i]) + " topic " + std::to_string(tc.topic) + ": n_wk = " + std::to_string(tc.count);
        }
      // Σ_d n_dk: each document's n_dk is the recount of its topics (checked as it was sampled).
      std::size_t zi = 0;
      for (auto d : s.docs)
        for (std::size_t e = 0; e < c_.words[d].size(); ++e)
          for (std::uint32_t j = 0; j < c_.counts[d][e]; ++j, ++zi) {
            ++out.docs_k[s.z[zi]];
            out.fp_tokens += detail::lda_fp(c_.words[d][e], s.z[zi]);
            ++out.tokens;
          }
      if (out.error.empty()) out.error = s.error;
    }
    out.eval_s = std::chrono::duration<double>(strata::run_clock::now() - t0).count();
  }

  void record(const sched::plan& pl, const std::vector<partial_type>& parts) {
    const std::uint32_t K = o_.topics;
    double ll = lda_topic_loglik(nk_, lp_), eval = 0;
    for (const auto& q : parts) ll += q.ll, eval = std::max(eval, q.eval_s);
    eval_s_ += eval;
    iteration_stats r;
    r.iteration = static_cast<std::uint32_t>((pl.round + 1) / B_);
    r.elapsed_s = std::chrono::duration<double>(strata::run_clock::now() - t0_).count() - eval_s_;
    r.objective = r.metric = ll;
    r.metric_name = "loglik";
    iters_.push_back(r);
    if (on_iteration) on_iteration(r);
    if (pl.round + 1 != rounds_) return;
    // The final check.
    final_ll_ = ll;
    checked_ = true;
    std::string err;
    std::vector<std::int64_t> wk(K, 0), dk(K, 0);
    std::uint64_t fr = 0, ft = 0, tokens = 0;
    for (const auto& q : parts) {
      if (err.empty() && !q.error.empty()) err = q.error;
      for (std::uint32_t k = 0; k < K && k < q.words_k.size() && k < q.docs_k.size(); ++k) wk[k] += q.words_k[k], dk[k] += q.docs_k[k];
      fr += q.fp_rows;
      ft += q.fp_tokens;
      tokens += q.tokens;
    }
    std::int64_t total = 0;
    for (std::uint32_t k = 0; k < K; ++k) {
      total += nk_[k];
      if (err.empty() && nk_[k] < 0) err = "topic " + std::to_string(k) + ": n_k = " + std::to_string(nk_[k]);
      if (err.empty() && wk[k] != nk_[k])
        err = "topic " + std::to_string(k) + ": sum_w n_wk = " + std::to_string(wk[k]) + " != n_k = " + std::to_string(nk_[k]);
      if (err.empty() && dk[k] != nk_[k])
        err = "topic " + std::to_string(k) + ": sum_d n_dk = " + std::to_string(dk[k]) + " != n_k = " + std::to_string(nk_[k]);
    }
    const std::uint64_t want = c_.tokens();
    if (err.empty() && total != static_cast<std::int64_t>(want))
      err = "sum_k n_k = " + std::to_string(total) + " != tokens = " + std::to_string(want);
    if (err.empty() && tokens != want)
      err = "sum_d n_d = " + std::to_string(tokens) + " != tokens = " + std::to_string(want) + " (documents lost or counted twice)";
    if (err.empty() && fr != ft) err = "the word-topic counts differ from a recount of the assignments (fingerprint)";
    final_error_ = err;
  }

  const lda_corpus& c_;
  lda_rotation_options o_;
  lda_params lp_;
  std::uint32_t P_, B_;
  std::uint64_t rounds_;
  static constexpr std::uint32_t npos = ~0u;
  std::vector<std::uint32_t> block_of_, index_in_block_;
  std::vector<std::vector<std::uint32_t>> dense_slot_;  // per block, per word index: its dense row (MH), or npos
  std::vector<std::uint32_t> dense_rows_;               // per block: how many dense rows
  std::vector<std::vector<std::uint32_t>> block_words_;
  std::vector<worker_state> st_;
  // Coordinator's side.
  std::vector<std::int32_t> nk_;
  std::vector<std::uint64_t> holds_;
  std::uint64_t conflicts_ = 0, draws_ = 0, pulled_ = 0;
  std::vector<iteration_stats> iters_;
  double ll0_ = 0, eval_s_ = 0, final_ll_ = 0;
  std::string final_error_;
  bool checked_ = false;
  strata::run_clock::time_point t0_ = strata::run_clock::now();
};

}  // namespace strata::ml
