#pragma once
/// \file The worker: a coroutine's view of the parameter server (get / inc / clock), with its row
/// cache, oplog, staleness histogram and blocking-time accounting. One per worker thread.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <concepts>
#include <coroutine>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <ranges>
#include <string>
#include <utility>
#include <vector>

#include <strata/core/bytes.hpp>
#include <strata/core/config.hpp>
#include <strata/core/stats.hpp>
#include <strata/table/client_table.hpp>
#include <strata/table/table.hpp>
#include <strata/wire/messages.hpp>
#include <strata/runtime/params.hpp>
#include <strata/runtime/actor.hpp>
#include <strata/runtime/checkpoint_types.hpp>
#include <strata/runtime/task.hpp>
#include <strata/runtime/worker_stats.hpp>

namespace strata {

/// A worker's handle on the parameter server. Its methods run on the worker's own thread, where
/// its coroutines run and its messages are delivered, so nothing here takes a lock.
///
/// References returned by `get` stay valid until the worker's next `co_await`.
class worker : public actor {
 public:
  worker(worker_id id, worker_map wm, model_params mp, send_fn send, std::size_t max_message = 16u << 20)
      : actor(wm.of(id), wm, std::move(send), max_message), id_(id), wm_(wm), mp_(mp), seq_(wm.nodes, 0), push_reflects_(wm.nodes, no_clock),
        inflight_mass_(wm.nodes), oplog_mass_(wm.nodes, 0.0), oplog_incs_(wm.nodes, 0) {
    clear_views();
    bound_ = std::isfinite(mp_.value_bound) ? mp_.value_bound / wm.workers() : mp_.value_bound;
    value_bounded_ = std::isfinite(bound_);
  }

  worker_id id() const noexcept { return id_; }
  /// The worker's clock: the number of clock() calls so far.
  clock_type current_clock() const noexcept { return clock_; }
  STRATA_DECL const worker_stats& stats() const;
  /// The statistics at `pause_stats()`, for `resume_stats`.
  struct stats_mark {
    worker_stats stats;
    double wait_s = 0;
  };
  /// Stops recording: reads, their staleness, flushes and waiting until `resume_stats(mark)` are
  /// left out of `stats()` (for reads that are not the algorithm's, e.g. evaluating a snapshot).
  stats_mark pause_stats() const {
    settle_reads();
    return {stats_, wait_seconds()};
  }
  /// Resumes recording where `pause_stats()` left it.
  void resume_stats(const stats_mark& m) {
    for (const std::uint32_t v : touched_) view_reads_[v] = 0;
    touched_.clear();
    unrecorded_wait_ += wait_seconds() - m.wait_s;
    stats_ = m.stats;
  }
  const model_params& model() const noexcept { return mp_; }
  /// Sum of |delta| of this worker's increments not yet applied at their server shards; exactly 0
  /// when `unacked_increments() == 0` (value-bounded models only; 0 otherwise).
  double unacked_mass() const noexcept { return unacked_incs_ == 0 ? 0.0 : oplog_total_ + inflight_total_; }
  /// How many of this worker's increments are not yet applied at their server shards (value-bounded
  /// models only; 0 otherwise). Counted exactly, so "nothing un-acknowledged" never depends on
  /// floating-point residue.
  std::uint64_t unacked_increments() const noexcept { return unacked_incs_; }
  /// The clock through which the cached copy of row `r` holds every update of every worker
  /// (`no_clock` when the row is not cached): what the last `get` of it reflected, at least.
  template <row_type R>
  clock_type reflects(table_handle<R> h, row_id r) {
    auto* e = table<R>(h).find(r);
    if (!e || !e->valid) return no_clock;
    clock_type t = e->reflects;
    if (mp_.push == push_mode::on_min_clock) t = std::max(t, push_reflects_[owner_of(h.id, r, wm_.nodes)]);
    return t;
  }
  /// Per worker q, the newest clock tag of q's updates that the cached copy of row `r` holds (from
  /// the shard's applied flushes when it sent the row, or a later push), or `finished_clock` when q
  /// had finished and the row held all its updates; empty when the row is not cached. What every
  /// read of the row records into `worker_stats::writer_staleness`.
  template <row_type R>
  std::vector<clock_type> writer_clocks(table_handle<R> h, row_id r) {
    auto* e = table<R>(h).find(r);
    if (!e || !e->valid) return {};
    std::uint32_t v = e->view;
    if (mp_.push == push_mode::on_min_clock) v = std::max(v, push_view_[owner_of(h.id, r, wm_.nodes)]);
    const auto* b = view_clocks_.data() + std::size_t{v} * wm_.workers();
    return {b, b + wm_.workers()};
  }
  /// How many distinct vectors of per-writer clocks (views) the worker holds for the rows it has
  /// received: bounded by the rows it caches and its shards, not by the length of the run.
  std::size_t views_held() const noexcept { return view_reads_.size(); }
  /// Views are compacted (those no cached row refers to dropped) once there are this many, and
  /// twice as many as the last compaction left.
  static constexpr std::size_t min_views_to_compact = 256;
  /// The per-worker share of the value bound (infinity when unbounded).
  double mass_bound() const noexcept { return bound_; }

  /// The most rows each table's cache keeps (system_config::cache_rows; 0: unbounded).
  std::size_t cache_capacity() const noexcept { return cache_rows_; }
  /// How many rows of table `h` this worker caches now.
  template <row_type R>
  std::size_t cached_rows(table_handle<R> h) {
    return table<R>(h).cached_rows();
  }
  /// How many of them may not be evicted now: with un-flushed increments, requested, waited on, or
  /// read in the current turn (O(rows); for tests and diagnostics).
  template <row_type R>
  std::size_t pinned_rows(table_handle<R> h) {
    return table<R>(h).pinned_rows();
  }
  /// Whether row `r` of table `h` is in this worker's cache (valid or on its way).
  template <row_type R>
  bool is_cached(table_handle<R> h, row_id r) {
    return table<R>(h).find(r) != nullptr;
  }

  // ---- get ---------------------------------------------------------------------------------

  template <row_type R>
  class [[nodiscard]] get_awaiter;  // runtime/detail/worker_awaiters.hpp

  /// Reads a row: at once from the cache when it is fresh enough for the consistency model,
  /// otherwise suspends until the server's reply or push arrives. With a bounded cache
  /// (system_config::cache_rows) a row read stays cached, and the reference valid, until the
  /// worker's coroutines next suspend or yield; a later read of an evicted row asks its shard
  /// again, with the reader's clock's requirement.
  template <row_type R>
  get_awaiter<R> get(table_handle<R> h, row_id r) {
    return {*this, table<R>(h), r};
  }

  /// Sends the request for a row that `get` would wait for, without waiting or counting a read:
  /// an iteration can ask for all its rows at once, then `get` them one by one.
  template <row_type R>
  void prefetch(table_handle<R> h, row_id r) {
    get_awaiter<R>(*this, table<R>(h), r).prepare();
  }
  /// The same for several rows, batched: the rows that need a request travel as one request per
  /// shard (up to wire::max_request_rows rows each), and a shard answers the rows it can serve now,
  /// or at the barrier it waits for, in one reply. Rows fresh enough (or, under ESSP, cached and
  /// awaiting the next push) are left out.
  template <row_type R, class Rows>
    requires std::ranges::input_range<const Rows&> && std::convertible_to<std::ranges::range_value_t<const Rows&>, row_id>
  void prefetch(table_handle<R> h, const Rows& rows) {
    auto& t = table<R>(h);
    if (batch_.size() != wm_.nodes) batch_.resize(wm_.nodes);
    batching_ = true;
    try {
      for (const auto r : rows) get_awaiter<R>(*this, t, static_cast<row_id>(r)).prepare();
    } catch (...) {
      end_batch();  // every row marked as requested is requested, so no later read waits in vain
      throw;
    }
    end_batch();
  }

  // ---- inc ---------------------------------------------------------------------------------

  /// An increment, applied when `inc` is called; the awaitable waits only under a value bound, when
  /// the increment does not fit (it is applied when the wait ends). An `inc` whose result is never
  /// awaited still loses nothing: the increment is applied when the awaitable is destroyed (under a
  /// value bound, then past the bound, as `worker_stats::max_unacked_mass` shows).
  template <class Apply>
  class [[nodiscard]] inc_awaiter;  // runtime/detail/worker_awaiters.hpp

  /// Adds `v` to column `c` of row `r`. Visible to this worker's reads at once (read-my-writes).
  /// A column outside the table's width is a `strata::error` naming table, row, column and width.
  template <row_type R>
  auto inc(table_handle<R> h, row_id r, col_id c, typename R::value_type v) {
    if (c >= h.width) [[unlikely]]
      bad_inc(false, c, r, h.id, h.width);
    auto& t = table<R>(h);
    const double m = value_bounded_ ? std::abs(static_cast<double>(v)) : 0.0;
    return make_inc(m, value_bounded_ ? owner_of(h.id, r, wm_.nodes) : 0, [&t, r, c, v] { t.inc(r, c, v); });
  }
  /// Adds a whole delta row (dense, or the non-zeros of a sparse row) to row `r`; its width must be
  /// the table's.
  template <row_type R>
  auto inc_row(table_handle<R> h, row_id r, R delta) {
    if (delta.width() != h.width) [[unlikely]]
      bad_inc(true, delta.width(), r, h.id, h.width);
    auto& t = table<R>(h);
    const double m = value_bounded_ ? delta.magnitude() : 0.0;
    return make_inc(m, value_bounded_ ? owner_of(h.id, r, wm_.nodes) : 0, [&t, r, d = std::move(delta)]() mutable { t.inc_row(r, std::move(d)); });
  }

  /// A zeroed row of table `h`'s width for a whole-row delta (fill it, then `inc_row` it). For
  /// dense rows it is one that an acknowledged flush gave back when there is one, so a worker that
  /// sends a delta per row per clock allocates none once warm.
  template <row_type R>
  R delta_row(table_handle<R> h) {
    return table<R>(h).delta_row();
  }
  /// How many rows of table `h` are kept for delta_row (for tests and diagnostics).
  template <row_type R>
  std::size_t spare_rows(table_handle<R> h) {
    return table<R>(h).spare_rows();
  }

  // ---- clock -------------------------------------------------------------------------------

  /// Ends this worker's iteration: sends one message per server shard with the aggregated
  /// increments and the new clock. It does not wait for other workers (reads enforce the
  /// staleness bound); it only yields to the worker's thread when messages wait there, so that
  /// rows pushed or replied in the meantime are taken in before the next iteration.
  yield_awaiter clock() {
    if (ckpt_every_ > 0 && (clock_ + 1) % ckpt_every_ == 0) write_checkpoint(clock_ + 1);
    flush(true);
    return yield_awaiter{*this, true};
  }

  // ---- checkpoints -------------------------------------------------------------------------

  /// The program's own state for checkpoints (LDA's topic assignments, random generator, position
  /// in the data, ...): `save` is called in `clock()` when the new clock is a checkpoint clock,
  /// after the iteration's work and before its increments leave, and returns the state as bytes.
  /// Without it a worker's checkpoint holds no state of its own.
  void on_checkpoint(std::function<std::string()> save) { save_state_ = std::move(save); }
  /// In a resumed run: the state `on_checkpoint`'s function returned at the checkpoint the run
  /// resumed from (the worker's clock, `current_clock()`, starts there); nullptr otherwise.
  const std::string* resumed_state() const noexcept { return resumed_ ? &resumed_state_ : nullptr; }

  // ---- collectives --------------------------------------------------------------------------
  // Every worker of the run must call the same collectives in the same order (a worker that
  // finishes while others wait in one is reported as an error, not a hang). They travel through
  // shard 0 over the run's transport: no sleeps, no polling.

  template <class T>
  class [[nodiscard]] gather_awaiter;  // runtime/detail/worker_awaiters.hpp
  /// Every worker's `x` (any cereal-serialisable, default-constructible type), indexed by worker id,
  /// on every worker.
  template <class T>
  gather_awaiter<T> all_gather(const T& x) {
    return gather_awaiter<T>(*this, x);
  }
  /// `op` folded over every worker's `x` in worker-id order (the same result, bit for bit, on every
  /// worker and every transport). `strata::sum{}` adds numbers and vectors element-wise.
  template <class T, class Op>
  task<T> all_reduce(T x, Op op) {
    auto all = co_await all_gather(x);
    T acc = std::move(all[0]);
    for (std::size_t i = 1; i < all.size(); ++i) acc = op(std::move(acc), all[i]);
    co_return acc;
  }
  /// Waits until every worker of the run has called `barrier()`, then drops this worker's cached
  /// rows, so that reads after it see every increment any worker made before it. Under models that
  /// apply updates on arrival, each worker first sends its pending increments and waits until its
  /// shards have applied them. Under exact snapshots (BSP) an increment is visible from the clock
  /// after its own, as always: a barrier does not complete a clock, so increments of the current
  /// clock stay in the oplog until the next `clock()` (at the end of a run, after the last clock,
  /// there are none).
  task<> barrier();  // defined with the awaiters (runtime/detail/worker_awaiters.hpp)
  /// Drops this worker's cached rows: its next read of each row asks its shard, as after a barrier
  /// (an evaluation that read the whole model leaves no cache behind that the next iteration's
  /// reads would not have had).
  void drop_cached_rows() {
    for (auto& t : tables_) t->invalidate();
  }

  /// Runs another coroutine on this worker's thread, beside the program (it shares the worker's
  /// cache, oplog and clock). The worker finishes only after every spawned coroutine has; an
  /// exception from one is reported like the program's own.
  STRATA_DECL void spawn(task<> t);

  /// Reads the server's current value of row `r`, bypassing (and refreshing) the cache, without
  /// counting a read: for reading a finished run's model from any process.
  template <row_type R>
  task<R> fetch(table_handle<R> h, row_id r) {
    auto& t = table<R>(h);
    if (auto* e = t.find(r)) e->valid = false, e->requested = false;
    const R& row = co_await get_awaiter<R>(*this, t, r, false);
    co_return row;
  }

 private:
  // ---- runtime side (reached through detail::party_access) ---------------------------------
  friend struct detail::party_access;

  /// Registers a table (same order on every worker and shard).
  template <row_type R>
  void add_table(table_id id, std::size_t width) {
    if (tables_.size() != id) throw error(errc::bad_input, "tables must be added in id order");
    auto t = std::make_unique<client_table<R>>(id, width, wm_.nodes);
    t->bound(cache_rows_, turn_counter());
    tables_.push_back(std::move(t));
  }
  /// Bounds every table's cache of this worker to `rows` rows (0: unbounded); before the first run.
  void set_cache_rows(std::size_t rows) {
    cache_rows_ = rows;
    for (auto& t : tables_) t->bound(rows, turn_counter());
  }

  /// Handles a message delivered to this worker, then resumes coroutines whose wait is over.
  STRATA_DECL void on_message(endpoint src, wire::message&& m);

  /// The first exception thrown by a spawned coroutine, if any.
  std::exception_ptr spawn_error() const noexcept { return spawn_error_; }

  /// After the worker's program (and every spawned coroutine) returns: flush the rest, tell the
  /// shards it is done, and call `done` once every flush is acknowledged (then its updates are in
  /// the servers' rows).
  STRATA_DECL void finish(std::function<void()> done);

  /// The consistency model of the next run (system::set_staleness); call between runs, on the
  /// worker's thread. Only the staleness bounds may differ from the current model.
  void set_model(const model_params& mp) { mp_ = mp; }

  /// Makes the worker new for another run of the same system: clock 0, empty cache, logs and
  /// statistics (the shards are reset alongside). Call between runs, on the worker's thread.
  STRATA_DECL void reset();

  /// Runtime side: write a checkpoint file for this worker every `every` clocks into `dir`.
  void enable_checkpoints(std::string dir, clock_type every, ckpt::digest sig) {
    ckpt_dir_ = std::move(dir);
    ckpt_every_ = every;
    ckpt_sig_ = sig;
  }
  /// Runtime side, before the first run: start at clock m with the state of a checkpoint.
  void resume_at(clock_type m, std::string state) {
    clock_ = m;
    resumed_ = true;
    resumed_state_ = std::move(state);
  }

  /// Asks shard s for row r of table t once it reflects `need`: now, or, inside a batched
  /// prefetch, with the batch's other rows for that shard (one table and one need per batch).
  void request(node_id s, table_id t, row_id r, clock_type need) {
    if (!batching_) {
      send_raw(endpoint{s, 0}, wire::row_request{id_, t, {r}, need, mp_.push != push_mode::none});
      return;
    }
    auto& b = batch_[s];
    if (!b.rows.empty() && (b.table != t || b.need != need)) send_batch(s);
    if (b.rows.empty()) b.table = t, b.need = need;
    b.rows.push_back(r);
    if (b.rows.size() == wire::max_request_rows) send_batch(s);
  }
  void end_batch() {
    batching_ = false;
    for (node_id s = 0; s < batch_.size(); ++s) send_batch(s);
  }
  void send_batch(node_id s) {
    auto& b = batch_[s];
    if (b.rows.empty()) return;
    wire::row_request q{id_, b.table, std::move(b.rows), b.need, mp_.push != push_mode::none};
    b.rows = {};
    send_raw(endpoint{s, 0}, std::move(q));
  }

  /// The cold path of inc's column check (`x` a column) and inc_row's width check (`x` the
  /// delta's width), kept out of line so that inc stays small enough to inline.
  [[noreturn, gnu::cold, gnu::noinline]] static void bad_inc(bool row, std::size_t x, row_id r, table_id t, std::size_t width) {
    const std::string what = row ? "inc_row: a delta of width " + std::to_string(x) : "inc: column " + std::to_string(x);
    throw error(errc::bad_input, what + " of row " + std::to_string(r) + " in table " + std::to_string(t) +
                                     " is outside its width " + std::to_string(width));
  }
  template <class F>
  inc_awaiter<F> make_inc(double mass, node_id shard, F f) {
    return inc_awaiter<F>(*this, mass, shard, std::move(f));
  }
  bool fits(double mass) const noexcept {
    return unacked_incs_ == 0 || unacked_mass() + mass <= bound_;
  }
  bool all_acked() const noexcept {
    for (const auto& q : inflight_mass_)
      if (!q.empty()) return false;
    return true;
  }
  template <row_type R>
  client_table<R>& table(table_handle<R> h) {
    return static_cast<client_table<R>&>(*tables_[h.id]);
  }

  /// The per-writer clocks of a rows message from shard s, as a view number: the shard's last view
  /// when they are the same (they only grow, message after message), else a new one.
  STRATA_DECL std::uint32_t view_of(node_id s, const wire::rows& m);
  /// Expands the reads counted since the last call into `writer_staleness`: for each view read n
  /// times at clock c, n reads of (c - 1) - clock of q, for every other worker q not finished.
  STRATA_DECL void settle_reads() const;
  /// Drops the views that nothing refers to any more (no cached row, no shard's latest view or
  /// push, no read of this clock), keeping the order of the rest (reads compare view numbers).
  /// Without it a long run keeps one view per shard and clock, P clocks each: memory that grows
  /// with the run (found by benchmarks/soak_test.sh). Runs when the views have doubled since the
  /// last compaction, so its cost (a pass over the cached rows) is spread over as many new views.
  STRATA_DECL void compact_views();
  STRATA_DECL void clear_views();

  /// Writes this worker's checkpoint of clock m (runtime/impl/worker.ipp: the checkpoint files'
  /// code stays out of the files that only use a worker).
  STRATA_DECL void write_checkpoint(clock_type m);

  /// Sends one flush to every shard (a clock flush also to shards with no rows for the clock).
  STRATA_DECL void flush(bool advance_clock, bool done = false);

  /// Parks the calling coroutine until `ready()` holds.
  struct until_awaiter {
    worker& w;
    std::function<bool()> ready;
    bool await_ready() const { return ready(); }
    void await_suspend(std::coroutine_handle<> h) { w.suspend(h, ready); }
    void await_resume() const noexcept {}
  };
  until_awaiter until(std::function<bool()> ready) { return {*this, std::move(ready)}; }

  bool wake_has_work() const noexcept override { return finish_done_ != nullptr || inc_waiters_ > 0; }
  STRATA_DECL void after_wake() override;

  worker_id id_;
  worker_map wm_;
  model_params mp_;
  clock_type clock_ = 0;
  std::string ckpt_dir_;
  clock_type ckpt_every_ = 0;
  ckpt::digest ckpt_sig_{};
  std::function<std::string()> save_state_;
  bool resumed_ = false;
  std::string resumed_state_;
  double bound_;
  bool value_bounded_ = false;
  std::vector<std::unique_ptr<client_table_base>> tables_;
  std::size_t cache_rows_ = 0;                    // per table; 0: unbounded
  struct request_batch {
    table_id table = 0;
    clock_type need = 0;
    std::vector<row_id> rows;
  };
  bool batching_ = false;                         // inside a batched prefetch: requests wait in batch_
  std::vector<request_batch> batch_;              // per shard
  std::vector<std::uint64_t> seq_;                // last flush seq per shard
  std::vector<clock_type> push_reflects_;         // per shard: clock every subscribed row reflects
  // Per-writer clocks of the rows received, numbered in arrival order ("views"; 0 = none): view v's
  // clock of worker q is view_clocks_[v * workers + q]. Reads are counted per view and expanded
  // into stats_.writer_staleness when the clock moves on (settle_reads).
  std::vector<clock_type> view_clocks_;
  mutable std::vector<std::uint64_t> view_reads_;  // per view: reads at the current clock
  mutable std::vector<std::uint32_t> touched_;     // views with reads at the current clock
  std::vector<std::uint32_t> last_view_;           // per shard: its latest view
  std::vector<std::uint32_t> push_view_;           // per shard: view of its latest push (on_min_clock)
  std::size_t live_views_ = 0;                     // views left by the last compact_views
  struct inflight_flush {
    std::uint64_t seq;
    double mass;
    std::uint64_t incs;
  };
  std::vector<std::deque<inflight_flush>> inflight_mass_;  // per shard, every flush not yet acknowledged
  std::vector<double> oplog_mass_;                         // per shard: mass of increments not yet flushed
  std::vector<std::uint64_t> oplog_incs_;                  // per shard: increments not yet flushed
  std::uint64_t unacked_incs_ = 0;                         // oplog + in flight, every shard
  double inflight_total_ = 0, oplog_total_ = 0;
  int inc_waiters_ = 0;                                    // coroutines suspended in inc
  std::uint64_t round_ = 0;                                          // collectives started
  std::map<std::uint64_t, std::vector<wire::blob>> gathered_;        // collective results by round
  std::function<void()> finish_done_;
  std::vector<std::unique_ptr<task<>>> spawned_;
  int live_ = 0;
  std::function<void()> deferred_finish_;
  std::exception_ptr spawn_error_;
  double finish_started_ = 0;
  mutable worker_stats stats_;
  double unrecorded_wait_ = 0;  // waiting between pause_stats and resume_stats
};

}  // namespace strata

#include <strata/runtime/detail/worker_awaiters.hpp>

#if STRATA_HEADER_ONLY
#include <strata/runtime/impl/worker.ipp>
#endif
