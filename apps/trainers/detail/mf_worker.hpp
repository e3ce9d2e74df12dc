#pragma once
/// \file One worker's program in one segment of train_mf_segments (trainers/mf_trainer.hpp): its
/// reads, SGD passes, evaluation and pushes, over what detail::mf_training sets up.
#include <strata/core/clock.hpp>
#include <strata/ml/io/ratings.hpp>
#include <strata/ml/mf.hpp>
#include <strata/runtime/worker.hpp>
#include <strata/table/dense_row.hpp>
#include <trainers/detail/mf_training.hpp>
#include <trainers/run_stats.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

namespace strata::ml::detail {

/// One worker's program in one segment of train_mf_segments: it lives in that program's coroutine
/// frame (mf_worker_program). Reads: the worker's W blocks once per run (it is their only
/// writer); at the start of an iteration, one batched request for the H blocks of its test-only
/// items and of the clock's slice that are not fresh enough; each H block is taken from the cache
/// just before the pass first needs it (after a yield, so rows pushed meanwhile are taken in): the
/// pass visits ratings grouped by item block.
class mf_worker {
 public:
  mf_worker(mf_training& t, worker& w)
      : t_(t), o_(t.o), w_(w), rec_(*t.recp), red_(*t.redp), p_(w.id()), st_(*t.states[p_]), my_test_(st_.test) {}

  task<> run() {
    rec_.start_once();
    if (!std::exchange(st_.started, true))
      if (const auto* saved = w_.resumed_state()) st_.restore(*saved, p_);
    w_.on_checkpoint([&st = st_] { return st.save(); });
    if (t_.seg_first == 1) record_initial();
    for (std::uint32_t j = 1; j <= t_.seg_count; ++j) co_await iteration(j);
    co_await finish();
  }

 private:
  mf_training& t_;
  const mf_trainer_options& o_;
  worker& w_;
  run_recorder& rec_;
  run_reducer& red_;
  const worker_id p_;
  mf_worker_state& st_;
  const std::vector<io::rating>& my_test_;
  bool w_read_ = false;     // its W blocks are read (once per segment)
  volatile float sink_ = 0;  // work_repeat's extra products

  using clock = strata::run_clock;
  static double since(clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); }
  double test_count() const { return static_cast<double>(my_test_.size()); }

  // Slot s of Wl holds local users s*B .. s*B+B-1 (global block ublocks[s]) one after another, so
  // local user u's row starts at u*W1; item block b holds items b*B .. b*B+B-1 the same way in Hl.
  float* urow(std::uint32_t u) const { return st_.Wl.data() + std::size_t{u} * t_.W1; }
  float* irow(std::uint32_t i) const { return st_.Hl.data() + std::size_t{i} * t_.W1; }
  float predict(const io::rating& r) const {
    const float* u = urow(r.user);
    const float* v = irow(r.item);
    return t_.mu + u[t_.R] + v[t_.R] + mf_dot(u, v, t_.R);
  }
  double test_sq() const {
    double s = 0;
    for (const auto& r : my_test_) {
      const double e = r.value - predict(r);
      s += e * e;
    }
    return s;
  }
  /// Σ‖·‖² of this worker's user blocks and of the item blocks it owns (b % P == p) and `loaded`
  /// says it holds (all: `all_items`).
  double reg_norms(bool all_items) const {
    double reg = 0;
    for (std::size_t s = 0; s < st_.ublocks.size(); ++s) reg += block_norm(st_.Wl.data() + s * t_.bw, st_.ublocks[s], t_.nu, t_.reg.weight_user);
    for (std::uint32_t b : st_.iblocks)
      if (b % t_.P == p_ && (all_items || st_.loaded[b])) reg += block_norm(st_.Hl.data() + b * t_.bw, b, t_.ni, t_.reg.weight_item);
    return reg;
  }
  /// Σ c_k ‖row k‖² over the rows of global block b, held from `block` on (a block past the last
  /// row is padding: zeros).
  double block_norm(const float* block, std::uint32_t b, std::uint32_t n, const std::vector<float>& weight) const {
    double s = 0;
    for (std::uint32_t k = b * t_.B; k < std::min(n, (b + 1) * t_.B); ++k)
      s += weight[k] * mf_sq_norm(std::span<const float>(block + std::size_t{k - b * t_.B} * t_.W1, t_.W1));
    return s;
  }
  /// The training objective of the model in Wl / Hl: squared error over this worker's ratings plus
  /// lambda times the squared norms of its user blocks and the item blocks it owns.
  double train_objective() const {
    double sq = 0;
    for (const auto& r : st_.data) {
      const double e = r.value - predict(r);
      sq += e * e;
    }
    return sq + o_.lambda * reg_norms(true);
  }

  task<> read_w() {
    if (w_read_) co_return;
    const std::size_t bw = t_.bw;
    if (o_.prefetch)
      prefetch(w_, t_.Wt, st_.ublocks);
    for (std::size_t x = 0; x < st_.ublocks.size(); ++x) {
      const auto& row = co_await w_.get(t_.Wt, st_.ublocks[x]);
      const auto s = row.span();
      std::copy_n(s.data(), bw, st_.Ws.data() + x * bw);
      mf_load_block(st_.Wl.data() + x * bw, st_.Wo.data() + x * bw, st_.Winit.data() + x * bw, s.data(), bw);
    }
    w_read_ = true;
  }
  void fill_h(std::uint32_t b, const dense_row<float>& row) {
    const std::size_t bw = t_.bw;
    mf_load_block(st_.Hl.data() + b * bw, st_.Ho.data() + b * bw, st_.Hinit.data() + b * bw, row.span().data(), bw);
    st_.loaded[b] = 1;
  }
  task<> load_h(std::uint32_t b) { fill_h(b, co_await w_.get(t_.Ht, b)); }
  /// The run that holds position lo of `order` (runs start in increasing order).
  auto run_at(std::size_t lo) const {
    auto at = std::upper_bound(st_.runs.begin(), st_.runs.end(), std::pair<std::size_t, std::uint32_t>{lo, ~0u});
    return at == st_.runs.begin() ? at : std::prev(at);
  }
  void slice_blocks(std::size_t lo, std::size_t hi, std::vector<std::uint32_t>& out) const {
    for (auto at = run_at(lo); at != st_.runs.end() && at->first < hi; ++at) out.push_back(at->second);
  }
  /// The item blocks of a clock's slice [lo, hi) of `order`: one request for those not fresh
  /// enough (under BSP all, after every barrier; under SSP the stale ones; under ESSP none: pushes
  /// keep them fresh) instead of one request and reply per block as the pass reaches it.
  task<> read_start(std::size_t lo, std::size_t hi) {
    std::fill(st_.loaded.begin(), st_.loaded.end(), 0);
    if (o_.prefetch) {  // the test-only blocks and the slice's, as one batch
      auto& want = st_.want;
      want.clear();
      for (std::uint32_t b : st_.iblocks)
        if (!st_.train_block[b]) want.push_back(b);
      slice_blocks(lo, hi, want);
      prefetch(w_, t_.Ht, want);
    }
    co_await read_w();
    for (std::uint32_t b : st_.iblocks)
      if (!st_.train_block[b]) co_await load_h(b);
  }
  /// The model for evaluation (a snapshot, or the final RMSE): this worker's W blocks (kept) and
  /// every H block of its items, as the server holds them now.
  task<> read_model() {
    if (o_.prefetch)
      prefetch(w_, t_.Ht, st_.iblocks);
    co_await read_w();
    for (std::uint32_t b : st_.iblocks) co_await load_h(b);
  }

  /// Iteration 0: the initial model (no reads needed: it is the hashed or the start model).
  void record_initial() {
    std::copy(st_.Winit.begin(), st_.Winit.end(), st_.Wl.begin());
    std::copy(st_.Hinit.begin(), st_.Hinit.end(), st_.Hl.begin());
    const auto t0 = clock::now();
    rec_.add_values(p_, 0, o_.eval_every ? train_objective() : 0.0, test_sq(), test_count());
    rec_.charge_eval(p_, since(t0));
    rec_.end_iteration(w_, 0);
  }
  /// A new epoch: random block order, random order inside each block (user_order: user order;
  /// rotation: by sub-epoch).
  void new_epoch() {
    auto& data = st_.data;
    auto& order = st_.order;
    const bool rotation = o_.rotation;
    const std::uint32_t K = t_.K, B = t_.B, P = t_.P;
    std::shuffle(st_.groups.begin(), st_.groups.end(), st_.rng);
    order.clear();
    st_.runs.clear();
    for (std::uint32_t s = 0; s < (rotation ? K : 1); ++s)
      for (auto [g0, g1] : st_.groups) {
        if (rotation && t_.igroup[data[g0].item / B] != (p_ + s) % P) continue;
        if (!o_.user_order)  // else the block stays in user order (mf_training::group_ratings)
          std::shuffle(data.begin() + static_cast<std::ptrdiff_t>(g0), data.begin() + static_cast<std::ptrdiff_t>(g1), st_.rng);
        st_.runs.emplace_back(order.size(), data[g0].item / B);
        const std::size_t at = order.size();
        order.resize(at + (g1 - g0));
        std::iota(order.begin() + static_cast<std::ptrdiff_t>(at), order.end(), static_cast<std::uint32_t>(g0));
      }
  }
  /// A run resumed mid-epoch: its order came from the checkpoint, the runs are found in it.
  void rebuild_runs() {
    for (std::size_t x = 0; x < st_.order.size(); ++x) {
      const std::uint32_t b = st_.data[st_.order[x]].item / t_.B;
      if (st_.runs.empty() || st_.runs.back().second != b) st_.runs.emplace_back(x, b);
    }
  }
  /// The SGD steps over order[x, end), all of one item block, loaded; returns their squared
  /// errors. Kept out of line, so that the hot loop's variables live in registers, not the
  /// coroutine frame.
  __attribute__((noinline)) double steps(std::size_t x, std::size_t end, float eta) {
    const io::rating* data = st_.data.data();
    const std::uint32_t* order = st_.order.data();
    const float* reg_user = st_.reg_user.data();  // by local user
    const float* reg_item = t_.reg.step_item.data();
    float* const W = st_.Wl.data();
    float* const H = st_.Hl.data();
    const std::uint32_t R = t_.R, W1 = t_.W1, repeat = o_.work_repeat;
    const float mu = t_.mu;
    double acc = 0;
    for (; x < end; ++x) {
      const io::rating& r = data[order[x]];
      float* u = W + std::size_t{r.user} * W1;
      float* v = H + std::size_t{r.item} * W1;
      for (std::uint32_t rep = 1; rep < repeat; ++rep) sink_ = sink_ + mf_dot(u, v, R) * 1e-30f;
      const float lu = reg_user[r.user], li = reg_item[r.item];
      const float e = mf_sgd_step(u, v, R, r.value, eta, lu, li, mu + u[R] + v[R]);
      u[R] += eta * (e - lu * u[R]);
      v[R] += eta * (e - li * v[R]);
      acc += static_cast<double>(e) * e;
    }
    return acc;
  }
  /// The slice [lo, hi) of iteration `it` run by run (one item block each): a block is loaded
  /// before its first run. Returns the squared errors.
  task<double> train_slice(std::uint32_t it, std::size_t lo, std::size_t hi, float eta) {
    double sq = 0;
    for (auto run = run_at(lo); run != st_.runs.end() && run->first < hi; ++run) {
      const std::uint32_t b = run->second;
      if (!st_.loaded[b]) {
        t_.claim(b, it, p_);
        co_await w_.yield();
        fill_h(b, co_await w_.get(t_.Ht, b));  // not load_h: a coroutine frame per block is an allocation
      }
      const std::size_t end = std::next(run) == st_.runs.end() ? st_.order.size() : std::next(run)->first;
      sq += steps(std::max(run->first, lo), std::min(end, hi), eta);
    }
    co_return sq;
  }
  /// Evaluation after slot j's pass (excluded from the timing): this worker's view now (sq: the
  /// pass's squared errors), or nothing when eval_every evaluates the true model (`snapshot`) or
  /// skips this iteration.
  void record_pass(std::uint32_t j, bool snapshot, double sq) {
    if (o_.eval_every > 0) {
      if (!snapshot) rec_.add_values(p_, j, std::nan(""), std::nan(""), test_count());
      return;
    }
    const auto t0 = clock::now();
    const double reg = reg_norms(false);
    rec_.add_values(p_, j, sq + o_.lambda * reg, test_sq(), test_count());
    rec_.charge_eval(p_, since(t0));
  }
  /// Sends the changes of `blocks` (now − old) to `table`; block x of the list is held at slot x
  /// (`by_slot`: the W copies) or at its own number (the H copies).
  task<> push(table_handle<dense_row<float>> table, std::span<const float> now, std::span<const float> old,
              const std::vector<std::uint32_t>& blocks, bool by_slot) {
    const std::size_t bw = t_.bw;
    for (std::size_t x = 0; x < blocks.size(); ++x) {
      const std::uint32_t b = blocks[x];
      const std::size_t at = (by_slot ? x : b) * bw;
      dense_row<float> d = w_.delta_row(table);  // a recycled row: no allocation per block and clock
      if (mf_block_delta(d.mutable_span().data(), now.data() + at, old.data() + at, bw)) {
        if (!by_slot && !t_.item_share.empty()) scale_items(d.mutable_span().data(), b);
        co_await w_.inc_row(table, b, std::move(d));
      }
    }
  }
  /// average_items: item block b's change, row by row, times the item's share (1 / its workers).
  void scale_items(float* delta, std::uint32_t b) const {
    for (std::uint32_t j = 0; j < t_.B; ++j) {
      const float f = t_.item_share[std::size_t{b} * t_.B + j];
      for (std::uint32_t c = 0; c < t_.W1; ++c) delta[j * t_.W1 + c] *= f;
    }
  }
  /// Pushes the clock's differences of the W blocks (keeping the mirror) and of the H blocks read.
  task<> push_changes() {
    const std::size_t bw = t_.bw;
    co_await push(t_.Wt, st_.Wl, st_.Wo, st_.ublocks, true);
    for (std::size_t x = 0; x < st_.ublocks.size(); ++x)  // the server now holds Ws + (Wl − Wo): keep its value, as a re-read would
      mf_fold_mirror(st_.Ws.data() + x * bw, st_.Wl.data() + x * bw, st_.Wo.data() + x * bw, st_.Winit.data() + x * bw, bw);
    std::vector<std::uint32_t> read_blocks;
    for (std::uint32_t b : st_.iblocks)
      if (st_.loaded[b]) read_blocks.push_back(b);
    co_await push(t_.Ht, st_.Hl, st_.Ho, read_blocks, false);
  }
  /// The true model after slot j: every worker's increments through this iteration, nothing later.
  task<> evaluate_snapshot(std::uint32_t j) {
    auto mark = co_await snapshot_begin(w_);
    const auto t0 = clock::now();  // the evaluation's own time, from the meeting on (see snapshot_begin)
    co_await read_model();
    rec_.add_values(p_, j, train_objective(), test_sq(), test_count());
    co_await snapshot_end(w_, mark);
    rec_.charge_eval(p_, since(t0));
  }
  /// Slot j of the segment: one clock.
  task<> iteration(std::uint32_t j) {
    const std::uint32_t it = t_.seg_first - 1 + j;  // the iteration, numbered over the whole run
    const std::uint32_t epoch = (it - 1) / t_.K, slice = (it - 1) % t_.K;
    if (slice == 0 || st_.order.empty()) new_epoch();  // (empty: a run that starts mid-epoch, first_iteration, without a checkpoint's order)
    if (st_.runs.empty()) rebuild_runs();
    const std::size_t lo = slice == 0 ? 0 : st_.slice_end[slice - 1], hi = st_.slice_end[slice];
    co_await read_start(lo, hi);
    const float eta = static_cast<float>(o_.lr / (1 + o_.decay * epoch));
    const double sq = co_await train_slice(it, lo, hi, eta);
    st_.updates += hi - lo;
    const bool snapshot = o_.snapshot_due(it, t_.seg_first - 1 + t_.seg_count);
    record_pass(j, snapshot, sq);
    co_await push_changes();
    rec_.end_iteration(w_, j);
    co_await w_.clock();
    if (snapshot) co_await evaluate_snapshot(j);
  }
  /// After the segment's last clock: the trace only (another segment follows), or the final RMSE
  /// (once every update is in, re-read the rows of this worker's test ratings) and the model.
  task<> finish() {
    if (!t_.seg_last) {  // the next segment goes on from here: only the trace is gathered
      co_await red_.publish(w_, rec_, std::span<const double>());
      if (red_.collects(w_)) co_await red_.collect(w_, mf_training::rmse, "rmse");
      co_return;
    }
    co_await red_.settle(w_);
    co_await read_model();
    const double fin[3] = {test_sq(), test_count(), static_cast<double>(st_.updates)};
    if (o_.keep_model && p_ == 0) co_await t_.gather_model(w_);
    co_await red_.publish(w_, rec_, fin);
    if (red_.collects(w_)) co_await red_.collect(w_, mf_training::rmse, "rmse");
  }
};

/// Worker w's program in the current segment of `t`.
inline task<> mf_worker_program(mf_training& t, worker& w) {
  mf_worker program(t, w);
  co_await program.run();
}

}  // namespace strata::ml::detail
