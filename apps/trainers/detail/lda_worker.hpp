#pragma once
/// \file One worker's program of train_lda (trainers/lda_trainer.hpp): the initial push, the
/// sweeps (exact SparseLDA against local word rows, the same against rows read per (document,
/// word) pair under a value bound, or Metropolis–Hastings), the evaluation, and the final checks
/// and sums, over what detail::lda_training sets up.
#include <strata/core/clock.hpp>
#include <strata/ml/alias_table.hpp>
#include <strata/ml/lda.hpp>
#include <strata/runtime/worker.hpp>
#include <strata/table/sparse_row.hpp>
#include <trainers/detail/lda_training.hpp>
#include <trainers/run_stats.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <ranges>
#include <span>
#include <string>
#include <vector>

namespace strata::ml::detail {

/// One worker's program of a train_lda run; it lives in that program's coroutine frame
/// (lda_worker_program).
class lda_worker {
 public:
  lda_worker(lda_training& t, worker& w)
      : t_(t), o_(t.o), c_(t.corpus), w_(w), rec_(*t.rec), red_(*t.red), p_(w.id()), K(t.K), mydocs_(t.docs_of[p_]),
        st_(t.state[p_]), rng_(st_.rng), nd_(K), wdelta_(K, 0), tdelta_(K, 0), sampler_(t.lp), mh_(o_.sampler == lda_sampler::mh),
        mhs_(t.lp, std::max(o_.mh_steps, 1u)),
        local_rows_(!mh_ && !(t.sys.model().value_bound < std::numeric_limits<double>::infinity())) {}

  task<> run() {
    rec_.start_once();
    if (const auto* saved = w_.resumed_state()) st_.restore(*saved, p_, mydocs_, c_, K);
    w_.on_checkpoint([&st = st_] { return st.save(); });
    find_words();
    co_await push_initial();
    nk_.assign(K, 0);
    prepare_local_rows();
    for (std::uint32_t it = std::max(t_.start, 1u); it <= o_.iterations; ++it) co_await sweep(it);
    co_await read_totals();
    co_await evaluate(o_.iterations, o_.eval_every > 0);
    co_await red_.settle(w_);  // from here on, every read sees the final counts
    check_documents();
    const std::vector<double> fin = co_await final_sums();
    keep_assignments();
    if (o_.keep_model && p_ == 0) co_await t_.gather_model(w_);
    co_await red_.publish(w_, rec_, fin);
    if (red_.collects(w_)) {
      co_await red_.collect(w_, {}, "loglik");
      co_await read_totals();  // n_k (unchanged since the first settle)
      t_.final_nk = nk_;
    }
  }

 private:
  lda_training& t_;
  const lda_trainer_options& o_;
  const lda_corpus& c_;
  worker& w_;
  run_recorder& rec_;
  run_reducer& red_;
  const worker_id p_;
  const std::uint32_t K;
  const std::vector<std::uint32_t>& mydocs_;
  lda_worker_state& st_;
  std::mt19937_64& rng_;
  std::uint64_t draws_ = 0;
  std::vector<std::uint32_t> mywords_, evalwords_;  // the words of its documents; those it evaluates (w mod P = p)
  doc_topic_scratch nd_;                             // the current document's topic counts
  std::vector<std::int32_t> wdelta_, tdelta_;        // the current word's and the totals' changes
  std::vector<std::uint32_t> touched_;               // topics with a change in wdelta_
  std::vector<std::int32_t> nk_;                     // the topic totals as last read
  sparse_lda_sampler sampler_;
  std::vector<topic_count> scratch_;
  // The MH sampler's sweep state: per word of this worker (local index), its row as read at its
  // first use in the sweep (snapshot) and that plus this worker's moves (current), sparse
  // (entries of the topics it has held: memory grows with the tokens, not with K), and its alias table.
  const bool mh_;
  mh_lda_sampler mhs_;
  std::vector<std::uint32_t> local_of_, read_in_, used_;
  std::vector<std::vector<lda_word_entry>> mrows_;
  // The most frequent words' rows dense instead (mh_dense_mb): word li's K (current, snapshot)
  // pairs at dense_[dense_of_[li] · K]; dense_of_[li] = no_dense for the others.
  static constexpr std::uint32_t no_dense = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> dense_of_;
  std::vector<lda_count_pair> dense_;
  std::vector<lda_alias_slice> slices_;
  std::vector<alias_entry> pool_;
  std::vector<double> wbuf_;
  std::vector<std::uint32_t> ibuf_, sbuf_;
  // The exact sampler's sweep state where increments leave only at the clock (every model but a
  // value bound, whose flushes follow the increments): per word of this worker, its sparse row
  // as read at its first use in the sweep plus this worker's moves (rows), and the row as read
  // (snap_pool[snap_at[li] ..], sorted by topic) to take the net change from at the sweep's end.
  const bool local_rows_;
  std::vector<std::vector<topic_count>> rows_;
  std::vector<topic_count> snap_pool_;
  std::vector<std::size_t> snap_at_;
  std::vector<std::uint32_t> snap_len_;

  std::span<const std::uint32_t> doc_z(std::size_t zi, std::size_t nd) const { return {st_.z.data() + zi, nd}; }
  /// After a document's draws: its counts out of the scratch, a mismatch with its topics kept as
  /// this worker's violation.
  void unload_document(std::uint32_t d, std::size_t zi, std::size_t nd) {
    if (!nd_.unload(doc_z(zi, nd)) && st_.error.empty())
      st_.error = "doc " + std::to_string(d) + ": the sampler's n_dk differ from the recount of its tokens' topics";
  }
  /// f(d, its tokens' topics) for each of this worker's documents.
  template <class F>
  void for_each_document(F f) {
    for (std::size_t i = 0, zi = 0; i < mydocs_.size(); ++i) {
      const auto d = mydocs_[i];
      const std::size_t nd = t_.len[d];
      f(d, doc_z(zi, nd));
      zi += nd;
    }
  }

  void find_words() {
    std::vector<char> seen(t_.V, 0);
    for (auto d : mydocs_)
      for (auto x : c_.words[d]) seen[x] = 1;
    for (std::uint32_t x = 0; x < t_.V; ++x) {
      if (seen[x]) mywords_.push_back(x);
      if (x % t_.P == p_) evalwords_.push_back(x);
    }
  }
  void note(std::uint32_t k, std::int32_t dlt) {
    if (wdelta_[k] == 0) touched_.push_back(k);
    wdelta_[k] += dlt;
    tdelta_[k] += dlt;
  }
  task<> send_word(std::uint32_t word) {
    auto delta = w_.delta_row(t_.WT);  // a recycled row: its entries fit without allocating once warm
    delta.reserve(touched_.size());
    for (auto k : touched_) {
      if (wdelta_[k] != 0) delta.inc(k, wdelta_[k]);
      wdelta_[k] = 0;
    }
    touched_.clear();
    if (delta.nnz() > 0) co_await w_.inc_row(t_.WT, word, std::move(delta));
  }
  task<> send_totals() {
    if (std::all_of(tdelta_.begin(), tdelta_.end(), [](std::int32_t x) { return x == 0; })) co_return;
    auto d = w_.delta_row(t_.NT);  // taken only when it is sent: a dropped row would leave the pool
    for (std::uint32_t k = 0; k < K; ++k)
      if (tdelta_[k] != 0) d.inc(k, tdelta_[k]), tdelta_[k] = 0;
    co_await w_.inc_row(t_.NT, 0, std::move(d));
  }
  /// Clock 0: send the initial topics (drawn before the run). A resumed run's tables hold them.
  /// Each word's counts go in one row, summed over this worker's documents first a block of words
  /// at a time (lda_training::count_word_block), not a row per (document, word) pair (60M
  /// messages at NYTimes' size).
  task<> push_initial() {
    if (t_.resumed) {
      rec_.end_iteration(w_, 0);  // slot 0: the checkpointed state, evaluated at the first sweep's start
      co_return;
    }
    for (auto k : st_.z) ++tdelta_[k];
    // Every row first, then the pushes: the block of counts (up to 2^24 of them, 64 MB) is freed
    // before the worker first waits, so that workers that wait meanwhile do not each hold one
    // (1,024 simulated workers of a 100k-word corpus held 40 MB each).
    std::vector<decltype(w_.delta_row(t_.WT))> rows;
    rows.reserve(mywords_.size());
    {
      std::vector<lda_count> a;
      auto next = mywords_.begin();  // sorted: the words of each block follow one another
      for (std::size_t lo = 0; lo < t_.V; lo += t_.word_block()) {
        const std::size_t hi = std::min<std::size_t>(t_.V, lo + t_.word_block());
        const auto end = std::lower_bound(next, mywords_.end(), static_cast<std::uint32_t>(hi));
        if (next == end) continue;
        a.assign((hi - lo) * K, 0);
        t_.count_word_block(p_, lo, hi, a);
        for (; next != end; ++next) {
          const lda_count* row = a.data() + (*next - lo) * K;
          auto& delta = rows.emplace_back(w_.delta_row(t_.WT));
          for (std::uint32_t k = 0; k < K; ++k)
            if (row[k] != 0) delta.inc(k, row[k]);
        }
      }
    }
    for (std::size_t i = 0; i < rows.size(); ++i) co_await w_.inc_row(t_.WT, mywords_[i], std::move(rows[i]));
    rows = {};
    co_await send_totals();
    rec_.end_iteration(w_, 0);
    co_await w_.clock();
  }
  task<> read_totals() {
    const auto& row = co_await w_.get(t_.NT, 0);
    for (std::uint32_t k = 0; k < K; ++k) nk_[k] = row[k];
  }
  /// LL parts of the current state (this worker's share), charged as evaluation time.
  /// With `snapshot` (run_options::eval_every), of the true model: a consistent snapshot of the tables.
  task<> evaluate(std::uint32_t it, bool snapshot) {
    worker::stats_mark mark;
    if (snapshot) mark = co_await snapshot_begin(w_);
    const auto t0 = strata::run_clock::now();  // the evaluation's own time, from the meeting on (see snapshot_begin)
    if (snapshot) co_await read_totals();
    double ll = 0;
    for_each_document([&](std::uint32_t, std::span<const std::uint32_t> z) { ll += nd_.loglik(z, t_.lp); });
    if (o_.prefetch)
      prefetch(w_, t_.WT, evalwords_);
    for (auto x : evalwords_) {
      const auto& row = co_await w_.get(t_.WT, x);
      double s = 0;
      const double lg_beta = log_gamma(o_.beta);
      for (const auto& [k, n] : row.entries())
        if (n > 0) s += log_gamma(n + o_.beta) - lg_beta;
      ll += s;
    }
    if (p_ == 0) ll += lda_topic_loglik(nk_, t_.lp);
    rec_.add_values(p_, it - t_.base, ll, ll);
    if (snapshot) co_await snapshot_end(w_, mark);
    rec_.charge_eval(p_, std::chrono::duration<double>(strata::run_clock::now() - t0).count());
  }
  /// The record of the state before sweep `it` (iteration it − 1).
  task<> record_before(std::uint32_t it) {
    if (t_.resumed && it == t_.start) co_await evaluate(it - 1, o_.eval_every > 0);  // where the run resumes
    else if (it == 1) rec_.add_values(p_, 0, p_ == 0 ? t_.ll0 : 0.0, p_ == 0 ? t_.ll0 : 0.0);  // exact, computed before the run
    else if (o_.eval_every == 0) co_await evaluate(it - 1, false);
    else if (o_.snapshot_due(it - 1, o_.iterations)) co_await evaluate(it - 1, true);
    else rec_.add_values(p_, it - 1 - t_.base, std::nan(""), std::nan(""));
  }
  /// The sweep state of the samplers that keep local word rows (mh_, local_rows_).
  void prepare_local_rows() {
    if (mh_ || local_rows_) {
      local_of_.assign(t_.V, 0);
      for (std::size_t li = 0; li < mywords_.size(); ++li) local_of_[mywords_[li]] = static_cast<std::uint32_t>(li);
      read_in_.assign(mywords_.size(), 0);
    }
    if (mh_) {
      mrows_.resize(mywords_.size());
      slices_.resize(mywords_.size());
      choose_dense_words();
    }
    if (local_rows_) {
      rows_.resize(mywords_.size());
      snap_at_.assign(mywords_.size(), 0);
      snap_len_.assign(mywords_.size(), 0);
    }
  }
  /// The words whose MH rows are dense: by this worker's token count, most first, as many as
  /// mh_dense_mb holds, and only words with at least K/8 tokens here (a sparse row of fewer
  /// entries is searched in a few steps).
  void choose_dense_words() {
    std::vector<std::uint64_t> tokens(mywords_.size(), 0);
    for (auto d : mydocs_)
      for (std::size_t e = 0; e < c_.words[d].size(); ++e) tokens[local_of_[c_.words[d][e]]] += c_.counts[d][e];
    std::vector<std::uint32_t> order;
    for (std::uint32_t li = 0; li < mywords_.size(); ++li)
      if (tokens[li] >= std::max<std::uint64_t>(1, K / 8)) order.push_back(li);
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return tokens[a] > tokens[b]; });
    const std::size_t room = (std::size_t{o_.mh_dense_mb} << 20) / (std::size_t{K} * sizeof(lda_count_pair));
    order.resize(std::min(order.size(), room));
    dense_of_.assign(mywords_.size(), no_dense);
    for (std::uint32_t j = 0; j < order.size(); ++j) dense_of_[order[j]] = j;
    dense_.assign(order.size() * std::size_t{K}, lda_count_pair{});
  }
  std::span<lda_count_pair> dense_row(std::uint32_t li) { return {dense_.data() + std::size_t{dense_of_[li]} * K, K}; }
  std::span<const lda_count_pair> dense_row(std::uint32_t li) const { return {dense_.data() + std::size_t{dense_of_[li]} * K, K}; }
  /// Sweep `it`, then its clock.
  task<> sweep(std::uint32_t it) {
    co_await read_totals();
    co_await record_before(it);
    if (o_.prefetch)
      prefetch(w_, t_.WT, mywords_);
    if (mh_)
      draws_ += co_await mh_sweep(it);
    else if (local_rows_)
      draws_ += co_await exact_sweep(it);
    else
      draws_ += co_await pair_sweep();
    co_await send_totals();
    rec_.end_iteration(w_, it - t_.base);
    co_await w_.clock();
  }

  /// One sweep over this worker's documents against local word rows (sweep `it`), for either
  /// sampler: per document, the words new to the sweep are read first (the only suspension:
  /// `first_read(li, row)` copies the row it is given), then `sample(i, d, zi, nd)` draws the
  /// document's nd tokens from z[zi]; at the end each word's net change is sent once:
  /// `change(li, add)` hands it to add(topic, count) (a topic may come more than once: the counts
  /// add up). Returns the
  /// tokens drawn. The callables are taken by value: they live in the coroutine's frame.
  template <class FirstRead, class Sample, class Change>
  task<std::uint64_t> local_sweep(std::uint32_t it, FirstRead first_read, Sample sample, Change change) {
    used_.clear();
    std::size_t zi = 0;
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < mydocs_.size(); ++i) {
      const auto d = mydocs_[i];
      co_await w_.yield();
      std::size_t nd = 0;
      for (std::size_t e = 0; e < c_.words[d].size(); ++e) {
        nd += c_.counts[d][e];
        const std::uint32_t word = c_.words[d][e], li = local_of_[word];
        if (read_in_[li] == it) continue;
        const auto& row = co_await w_.get(t_.WT, word);
        first_read(li, row);
        read_in_[li] = it;
        used_.push_back(li);
      }
      sample(i, d, zi, nd);
      zi += nd;
      n += nd;
    }
    co_await send_changes(change);
    co_return n;
  }
  /// The end of a local sweep: each word's net change (`change`, as local_sweep says), sent once.
  /// The change is summed in a K-wide array but only at the topics it names (those of the word's
  /// row and snapshot), which are then the only ones read and zeroed.
  template <class Change>
  task<> send_changes(Change& change) {
    std::vector<lda_count> a(K, 0);
    std::vector<std::uint32_t> topics;
    const auto add = [&](std::uint32_t k, lda_count d) {
      a[k] += d;
      topics.push_back(k);
    };
    for (auto li : used_) {
      topics.clear();
      change(li, add);
      std::sort(topics.begin(), topics.end());
      topics.erase(std::unique(topics.begin(), topics.end()), topics.end());
      std::uint32_t nnz = 0;
      for (auto k : topics) nnz += a[k] != 0;
      if (nnz == 0) {
        for (auto k : topics) a[k] = 0;
        continue;
      }
      auto delta = w_.delta_row(t_.WT);
      delta.reserve(nnz);
      for (auto k : topics)
        if (a[k] != 0) delta.inc(k, a[k]), a[k] = 0;
      co_await w_.inc_row(t_.WT, mywords_[li], std::move(delta));
    }
  }
  /// Samples every token of document i (corpus document d, its first token at z[zi]) against
  /// the local rows, all read already. A plain function, not part of the coroutine, so its loop
  /// state stays in registers instead of the coroutine's frame.
  void sample_document(std::uint32_t d, std::size_t zi, std::size_t nd) {
    sampler_.begin_document(nd_.load(doc_z(zi, nd)), doc_z(zi, nd));  // edits n_dk in place
    const std::size_t first = zi;
    const auto& dw = c_.words[d];
    const auto& dc = c_.counts[d];
    const std::size_t m = dw.size();
    // Rows are most likely out of cache (16k of them; a document touches a few): the row two
    // words ahead has its vector's header fetched, the next one its first lines, so the misses
    // overlap this word's draws.
    auto prefetch_header = [&](std::size_t e) { detail::prefetch_read(&rows_[local_of_[dw[e]]]); };
    auto prefetch_row = [&](std::size_t e) {
      const auto& r = rows_[local_of_[dw[e]]];
      const char* at = reinterpret_cast<const char*>(r.data());
      const std::size_t bytes = std::min<std::size_t>(r.size() * sizeof(topic_count), 256);
      for (std::size_t off = 0; off < bytes; off += 64) detail::prefetch_read(at + off);
    };
    if (m > 1) prefetch_header(1);
    for (std::size_t e = 0; e < m; ++e) {
      if (e + 2 < m) prefetch_header(e + 2);
      if (e + 1 < m) prefetch_row(e + 1);
      auto& row = rows_[local_of_[dw[e]]];
      for (std::uint32_t j = 0; j < dc[e]; ++j, ++zi) {
        const std::uint32_t old = st_.z[zi];
        const std::uint32_t k = sampler_.resample(old, std::span<const topic_count>(row), rng_);
        if (k != old) {
          detail::sparse_row_add(row, old, -1);
          detail::sparse_row_add(row, k, +1);
          --tdelta_[old];
          ++tdelta_[k];
          st_.z[zi] = k;
        }
      }
    }
    unload_document(d, first, nd);
  }
  /// One exact (SparseLDA) sweep (sweep `it`): a word's first read fills its local row and its
  /// snapshot, which the net change is taken against.
  task<std::uint64_t> exact_sweep(std::uint32_t it) {
    sampler_.set_topic_totals(nk_);
    snap_pool_.clear();
    const auto first_read = [this](std::uint32_t li, const sparse_row<std::int32_t>& r) {
      auto& row = rows_[li];
      row.clear();
      snap_at_[li] = snap_pool_.size();
      snap_len_[li] = static_cast<std::uint32_t>(r.entries().size());
      for (const auto& [k, cnt] : r.entries()) row.push_back({k, cnt}), snap_pool_.push_back({k, cnt});
    };
    const auto sample = [this](std::size_t, std::uint32_t d, std::size_t zi, std::size_t nd) { sample_document(d, zi, nd); };
    const auto change = [this](std::uint32_t li, const auto& add) {
      for (const auto& [k, c] : rows_[li]) add(k, c);
      for (std::size_t x = snap_at_[li]; x < snap_at_[li] + snap_len_[li]; ++x) add(snap_pool_[x].topic, -snap_pool_[x].count);
    };
    const std::uint64_t n = co_await local_sweep(it, first_read, sample, change);
    sampler_.end_document();
    co_return n;
  }
  /// Samples every token of document i (corpus document d, its nd tokens from z[zi]) with the MH
  /// sampler against the local rows and proposals, all built already; a plain function, as
  /// sample_document is for the exact sampler, and it prefetches the same way.
  void mh_document(std::uint32_t d, std::size_t zi, std::size_t nd) {
    mhs_.begin_document(nd_.load(doc_z(zi, nd)), doc_z(zi, nd));
    const std::size_t first = zi;
    const auto& dw = c_.words[d];
    const auto& dc = c_.counts[d];
    const std::size_t m = dw.size();
    auto prefetch_word = [&](std::size_t e) {
      const std::uint32_t li = local_of_[dw[e]];
      detail::prefetch_read(pool_.data() + slices_[li].offset);
      if (dense_of_[li] != no_dense) return;  // K-wide: its lines are found as the draws go
      const auto& r = mrows_[li];
      const char* at = reinterpret_cast<const char*>(r.data());
      const std::size_t bytes = std::min<std::size_t>(r.size() * sizeof(lda_word_entry), 256);
      for (std::size_t off = 0; off < bytes; off += 64) detail::prefetch_read(at + off);
    };
    if (m > 1) detail::prefetch_read(&mrows_[local_of_[dw[1]]]), detail::prefetch_read(&slices_[local_of_[dw[1]]]);
    for (std::size_t e = 0; e < m; ++e) {
      if (e + 2 < m) detail::prefetch_read(&mrows_[local_of_[dw[e + 2]]]), detail::prefetch_read(&slices_[local_of_[dw[e + 2]]]);
      if (e + 1 < m) prefetch_word(e + 1);
      const std::uint32_t li = local_of_[dw[e]];
      const std::span<const alias_entry> alias(pool_.data() + slices_[li].offset, slices_[li].size);
      if (dense_of_[li] != no_dense) {
        lda_paired_word_counts counts{dense_row(li).data()};
        mh_tokens(counts, alias, slices_[li].mass, zi, dc[e]);
      } else {
        lda_sparse_word_counts counts(mrows_[li]);
        mh_tokens(counts, alias, slices_[li].mass, zi, dc[e]);
      }
      zi += dc[e];
    }
    unload_document(d, first, nd);
  }
  /// Draws the n tokens from z[zi] of one word whose counts are `counts`.
  template <class Counts>
  void mh_tokens(Counts& counts, std::span<const alias_entry> alias, double mass, std::size_t zi, std::uint32_t n) {
    for (std::uint32_t j = 0; j < n; ++j, ++zi) {
      const std::uint32_t old = st_.z[zi];
      const std::uint32_t k = mhs_.resample(old, counts, alias, mass, rng_);
      if (k != old) {
        --tdelta_[old];
        ++tdelta_[k];
        st_.z[zi] = k;
      }
    }
  }
  /// One MH sweep (sweep `it`): a word's first read fills its row, dense or sparse (current =
  /// snapshot = the row read), and builds its alias table (the word proposal) from it.
  task<std::uint64_t> mh_sweep(std::uint32_t it) {
    mhs_.set_topic_totals(nk_);
    pool_.clear();
    const auto first_read = [this](std::uint32_t li, const sparse_row<std::int32_t>& row) {
      if (dense_of_[li] != no_dense) {
        const auto c = dense_row(li);
        std::fill(c.begin(), c.end(), lda_count_pair{});
        for (const auto& [k, cnt] : row.entries()) c[k] = {cnt, cnt};
        slices_[li] = build_word_alias(std::span<const lda_count_pair>(c), pool_, wbuf_, ibuf_, sbuf_);
        return;
      }
      auto& r = mrows_[li];
      r.clear();
      r.reserve(row.entries().size());
      for (const auto& [k, cnt] : row.entries()) r.push_back({k, cnt, cnt});
      slices_[li] = build_word_alias(std::span<const lda_word_entry>(r), pool_, wbuf_, ibuf_, sbuf_);
    };
    const auto sample = [this](std::size_t, std::uint32_t d, std::size_t zi, std::size_t nd) { mh_document(d, zi, nd); };
    const auto change = [this](std::uint32_t li, const auto& add) {
      if (dense_of_[li] != no_dense) {
        const auto c = dense_row(li);
        for (std::uint32_t k = 0; k < K; ++k)
          if (c[k].current != c[k].snapshot) add(k, c[k].current - c[k].snapshot);
        return;
      }
      for (const auto& e : mrows_[li]) add(e.topic, e.current - e.snapshot);
    };
    co_return co_await local_sweep(it, first_read, sample, change);
  }
  /// One exact sweep under a value bound: the row of every (document, word) pair is read when the
  /// document reaches it, and that pair's changes are sent at once. Returns the tokens drawn.
  task<std::uint64_t> pair_sweep() {
    sampler_.set_topic_totals(nk_);
    std::size_t zi = 0;
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < mydocs_.size(); ++i) {
      const auto d = mydocs_[i];
      co_await w_.yield();
      const std::size_t first = zi, nd = t_.len[d];
      sampler_.begin_document(nd_.load(doc_z(zi, nd)), doc_z(zi, nd));  // edits n_dk in place
      for (std::size_t e = 0; e < c_.words[d].size(); ++e) {
        const std::uint32_t word = c_.words[d][e];
        {
          const auto& row = co_await w_.get(t_.WT, word);
          const auto& es = row.entries();
          scratch_.resize(es.size());
          for (std::size_t x = 0; x < es.size(); ++x) scratch_[x] = {es[x].first, es[x].second};
        }
        sample_pair(c_.counts[d][e], zi);
        n += c_.counts[d][e];
        co_await send_word(word);
      }
      unload_document(d, first, nd);
    }
    sampler_.end_document();
    co_return n;
  }
  /// Draws the `count` tokens of one (document, word) pair from z[zi] against scratch_ (advancing zi).
  void sample_pair(std::uint32_t count, std::size_t& zi) {
    for (std::uint32_t j = 0; j < count; ++j, ++zi) {
      const std::uint32_t old = st_.z[zi];
      const std::uint32_t k = sampler_.resample(old, std::span<const topic_count>(scratch_), rng_);
      if (k != old) {
        detail::sparse_row_add(scratch_, old, -1);
        detail::sparse_row_add(scratch_, k, +1);
        note(old, -1);
        note(k, +1);
        st_.z[zi] = k;
      }
    }
  }

  /// Local invariant: every token's topic is one of the K (the document counts' match with the
  /// topics is checked as each document is sampled: unload_document).
  void check_documents() {
    for (std::size_t zi = 0; zi < st_.z.size() && st_.error.empty(); ++zi)
      if (st_.z[zi] >= K) st_.error = "token " + std::to_string(zi) + " of worker " + std::to_string(p_) + " has topic " + std::to_string(st_.z[zi]);
  }
  /// This worker's share of the final sums: its documents, and the word rows w mod P = p, read now.
  task<std::vector<double>> final_sums() {
    std::vector<double> fin(t_.f_docs + K, 0.0);
    std::uint64_t my_tokens = 0;
    for_each_document([&](std::uint32_t d, std::span<const std::uint32_t> z) {
      for (auto k : z) fin[t_.f_docs + k] += 1;  // Σ_d n_dk, n_dk being the recount of the topics
      fin[lda_training::f_ll] += nd_.loglik(z, t_.lp);
      for (auto x : c_.counts[d]) my_tokens += x;
    });
    const std::string word_error = co_await add_word_rows(fin);
    fin[lda_training::f_err] = st_.error.empty() ? 0.0 : 1.0;
    fin[lda_training::f_tokens] = static_cast<double>(my_tokens);
    fin[lda_training::f_draws] = static_cast<double>(draws_);
    if (!st_.error.empty() || !word_error.empty()) t_.note_error(!st_.error.empty() ? st_.error : word_error);
    co_return fin;
  }
  /// Adds the word rows w mod P = p to `fin` (Σ_w n_wk, negative counts, LL); returns the first
  /// negative count found (empty: none).
  task<std::string> add_word_rows(std::vector<double>& fin) {
    if (o_.prefetch)
      prefetch(w_, t_.WT, evalwords_);
    std::string word_error;
    for (auto x : evalwords_) {
      const auto& row = co_await w_.get(t_.WT, x);
      for (const auto& [k, n] : row.entries()) {
        fin[lda_training::f_words + k] += n;
        if (n < 0) {
          fin[lda_training::f_neg] += 1;
          if (word_error.empty())
            word_error = "word " + std::to_string(x) + " topic " + std::to_string(k) + ": n_wk = " + std::to_string(n);
        }
      }
      fin[lda_training::f_ll] += lda_word_loglik(row.entries() | std::views::transform([](const auto& e) { return e.second; }), t_.lp);
    }
    co_return word_error;
  }
  /// With keep_assignments: this worker's documents' topics into the outcome (each worker writes only its own).
  void keep_assignments() {
    if (!o_.keep_assignments) return;
    for (std::size_t i = 0, zi = 0; i < mydocs_.size(); ++i) {
      std::uint64_t nd = 0;
      for (auto x : c_.counts[mydocs_[i]]) nd += x;
      t_.assignments[mydocs_[i]].assign(st_.z.begin() + static_cast<std::ptrdiff_t>(zi),
                                        st_.z.begin() + static_cast<std::ptrdiff_t>(zi + nd));
      zi += nd;
    }
  }
};

/// Worker w's program of the run `t`.
inline task<> lda_worker_program(lda_training& t, worker& w) {
  lda_worker program(t, w);
  co_await program.run();
}

}  // namespace strata::ml::detail
