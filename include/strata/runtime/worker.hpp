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

#include "../core/bytes.hpp"
#include "../core/config.hpp"
#include "../core/stats.hpp"
#include "../table/client_table.hpp"
#include "../table/table.hpp"
#include "../wire/messages.hpp"
#include "params.hpp"
#include "actor.hpp"
#include "checkpoint_types.hpp"
#include "task.hpp"

namespace strata {

/// What a worker measured during a run.
struct worker_stats {
  /// Every read's (c - 1) - t: c the reader's clock, t the clock through which the row holds every
  /// update of every worker (the minimum over writers, so a bound on how stale the row is).
  int_histogram min_clock_staleness;
  /// For every read and every *other* worker q that can still write: (c - 1) - (newest clock tag
  /// of q's updates the row holds). Negative when the row already holds q's updates from the
  /// reader's clock or later. A writer that has finished, with all its updates in the row (its
  /// clock `finished_clock` in the row's writer clocks), is left out. Nothing is recorded with a
  /// single worker.
  int_histogram writer_staleness;
  double wait_s = 0;              ///< time spent suspended in get / inc / finish
  std::uint64_t reads = 0;        ///< get() calls
  std::uint64_t waited_reads = 0; ///< get() calls that asked their shard (suspended, or answered at once by a shard in this process)
  std::uint64_t flushes = 0;      ///< flush messages sent
  double max_unacked_mass = 0;    ///< largest un-propagated update mass seen after an inc
  /// Rows evicted from the worker's bounded cache (system_config::cache_rows), every table; not
  /// paused by pause_stats.
  std::uint64_t evictions = 0;
  /// The most rows one table's cache held at once (bounded or not); not paused by pause_stats.
  std::uint64_t cache_peak_rows = 0;
  void merge(const worker_stats& o) {
    min_clock_staleness.merge(o.min_clock_staleness);
    writer_staleness.merge(o.writer_staleness);
    wait_s += o.wait_s;
    reads += o.reads;
    waited_reads += o.waited_reads;
    flushes += o.flushes;
    max_unacked_mass = std::max(max_unacked_mass, o.max_unacked_mass);
    evictions += o.evictions;
    cache_peak_rows = std::max(cache_peak_rows, o.cache_peak_rows);
  }
};

/// A reduction for `worker::all_reduce`: adds numbers, and vectors element-wise (the shorter one is
/// taken as padded with zeros).
struct sum {
  template <class T>
  T operator()(T a, const T& b) const {
    if constexpr (requires { a.size(); a.resize(0); a[0] += b[0]; }) {
      if (a.size() < b.size()) a.resize(b.size());
      for (std::size_t i = 0; i < b.size(); ++i) a[i] += b[i];
      return a;
    } else {
      return a + b;
    }
  }
};

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
  const worker_stats& stats() const {
    settle_reads();
    stats_.wait_s = wait_seconds() - unrecorded_wait_;
    stats_.evictions = 0;
    stats_.cache_peak_rows = 0;
    for (const auto& t : tables_) {
      stats_.evictions += t->evictions();
      stats_.cache_peak_rows = std::max<std::uint64_t>(stats_.cache_peak_rows, t->peak_rows());
    }
    return stats_;
  }
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
  class [[nodiscard]] get_awaiter {
   public:
    get_awaiter(worker& w, client_table<R>& t, row_id r, bool counted = true) : w_(w), t_(t), r_(r), counted_(counted) {}
    bool await_ready() {
      if (counted_) w_.stats_.reads++;
      look_up();
      return fresh() || missed();
    }
    /// Looks the row up and sends its request if it is not fresh enough; true when it is.
    bool prepare() {
      look_up();
      return ready();
    }
    void await_suspend(std::coroutine_handle<> h) {
      if (counted_) w_.stats_.waited_reads++;
      ++e_->waiters;  // a bounded cache keeps the row while this read waits for it
      suspended_ = true;
      // The clock needed is taken again at every check: when another coroutine of this worker
      // clocks while this read waits, the read waits for what the new clock needs (the guarantee
      // is for the clock at which the read returns). A request for an older need is answered
      // first, then re-sent.
      w_.suspend(h, [this] {
        need_ = needed();
        return ready();
      });
    }
    const R& await_resume() {
      if (suspended_) t_.release(*e_);
      t_.hold(*e_);  // the reference returned stays valid for the rest of the turn
      if (counted_) {
        clock_type t = e_->reflects;
        std::uint32_t v = e_->view;
        if (w_.mp_.push == push_mode::on_min_clock) {
          const node_id s = owner_of(t_.id(), r_, w_.wm_.nodes);
          t = std::max(t, w_.push_reflects_[s]);
          v = std::max(v, w_.push_view_[s]);  // a later push from the row's shard: newer clocks
        }
        w_.stats_.min_clock_staleness.add((w_.clock_ - 1) - t);
        // Per-writer figures are recorded lazily: one count per (per-writer clocks, clock), expanded
        // into the histogram when the clock moves on (settle_reads).
        if (w_.view_reads_[v]++ == 0) w_.touched_.push_back(v);
      }
      return e_->data;
    }

   private:
    void look_up() {
      e_ = &t_.slot(r_);
      need_ = needed();
    }
    /// A read the cache cannot serve: asks the row's shard, and returns true when a shard in this
    /// process answered inline. Such a read is a miss all the same: it counts as a waited read and
    /// ends the turn, as the suspension it saved would have (a bounded cache may evict the rows of
    /// earlier reads again, so a loop of misses stays within the bound). Out of line: the hit path
    /// stays small.
    [[gnu::noinline]] bool missed() {
      if (!ready()) return false;
      if (counted_) w_.stats_.waited_reads++;
      w_.end_turn();
      return true;
    }
    clock_type reflects() const noexcept {
      clock_type t = e_->reflects;
      if (w_.mp_.push == push_mode::on_min_clock)
        t = std::max(t, w_.push_reflects_[owner_of(t_.id(), r_, w_.wm_.nodes)]);
      return t;
    }
    bool fresh() const noexcept { return e_->valid && reflects() >= need_; }
    /// The clock a row must reflect for this read at the worker's clock now (a fetch, counted_
    /// false, takes whatever the server holds, whatever its clocks).
    clock_type needed() const noexcept {
      return counted_ ? required_clock(w_.clock_, w_.mp_.staleness_for(t_.id())) : required_clock(0, unbounded);
    }
    /// True when the cached row will do; otherwise makes sure a request (or, for a subscribed
    /// row under ESSP, the next push) is on its way.
    bool ready() {
      if (fresh()) return true;
      if (!e_->requested && !(w_.mp_.pushes_every_advance() && e_->valid)) {
        e_->requested = true;
        w_.request(owner_of(t_.id(), r_, w_.wm_.nodes), t_.id(), r_, need_);
        // A shard in this process may have answered inline (the row is then held for the rest of
        // the turn: client_table::on_row).
        return fresh();
      }
      return false;
    }
    worker& w_;
    client_table<R>& t_;
    row_id r_;
    bool counted_;
    bool suspended_ = false;
    clock_type need_ = 0;
    typename client_table<R>::entry* e_ = nullptr;
  };

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
  class [[nodiscard]] inc_awaiter {
   public:
    inc_awaiter(worker& w, double mass, node_id shard, Apply a)
        : w_(w), mass_(mass), shard_(shard), apply_(std::move(a)) {
      if (!w_.value_bounded_) {  // the common case: nothing to account for
        apply_();
        applied_ = true;
      } else if (w_.fits(mass_)) {
        apply();
      }
    }
    inc_awaiter(const inc_awaiter&) = delete;
    inc_awaiter& operator=(const inc_awaiter&) = delete;
    ~inc_awaiter() {
      if (!applied_ && !suspended_) apply();  // never awaited (a coroutine destroyed mid-wait is torn down)
    }
    bool await_ready() { return applied_ || flush_then_fits(); }
    void await_suspend(std::coroutine_handle<> h) {
      suspended_ = true;
      ++w_.inc_waiters_;
      w_.suspend(h, [this] {
        if (!w_.fits(mass_)) return false;
        --w_.inc_waiters_;
        return true;
      });
    }
    void await_resume() {
      suspended_ = false;
      if (!applied_) apply();
    }

   private:
    /// Under a value bound, an increment that did not fit: sends what is pending now; true when
    /// it fits after all (a shard in this process acknowledged inline), and then applies it.
    [[gnu::noinline]] bool flush_then_fits() {
      w_.flush(false);
      if (!w_.fits(mass_)) return false;  // wait for acknowledgements
      apply();
      return true;
    }
    void apply() {
      applied_ = true;
      apply_();
      w_.oplog_mass_[shard_] += mass_;  // acknowledged with that shard's next flush
      w_.oplog_total_ += mass_;
      ++w_.oplog_incs_[shard_];
      ++w_.unacked_incs_;
      w_.stats_.max_unacked_mass = std::max(w_.stats_.max_unacked_mass, w_.unacked_mass());
      // An increment larger than the whole bound cannot wait its way under it: send it alone. And
      // while another coroutine of this worker waits in `inc` for acknowledgements, whatever is
      // added meanwhile is sent at once, or that wait could outlast every acknowledgement.
      if (w_.unacked_mass() > w_.bound_ || w_.inc_waiters_ > 0) w_.flush(false);
    }
    worker& w_;
    double mass_;
    node_id shard_;
    Apply apply_;
    bool applied_ = false;
    bool suspended_ = false;
  };

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
  class [[nodiscard]] gather_awaiter {
   public:
    gather_awaiter(worker& w, const T& x) : w_(w) {
      round_ = ++w_.round_;
      wire::gather g;
      g.from = w_.id_;
      g.round = round_;
      wire::encode_value(x, g.payload.bytes);
      if (g.payload.bytes.size() > w_.max_message())
        throw error(errc::frame_too_large, "all_gather: worker " + std::to_string(w_.id_) + "'s value of " +
                                               std::to_string(g.payload.bytes.size()) + " bytes exceeds the limit of " +
                                               std::to_string(w_.max_message()) + " bytes");
      w_.send_raw(w_.wm_.shard(0), std::move(g));
    }
    bool await_ready() const { return w_.gathered_.count(round_) > 0; }
    void await_suspend(std::coroutine_handle<> h) {
      w_.suspend(h, [this] { return w_.gathered_.count(round_) > 0; });
    }
    std::vector<T> await_resume() {
      auto node = w_.gathered_.extract(round_);
      std::vector<T> out(node.mapped().size());
      for (std::size_t i = 0; i < out.size(); ++i) {
        try {
          wire::decode_value(node.mapped()[i].bytes, out[i]);
        } catch (const std::exception& e) {
          throw error(errc::bad_frame, "all_gather: worker " + std::to_string(i) + "'s value does not decode: " + e.what());
        }
      }
      return out;
    }

   private:
    worker& w_;
    std::uint64_t round_ = 0;
  };
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
  task<> barrier() {
    if (!mp_.exact) {
      flush(false);
      if (!all_acked()) co_await until([this] { return all_acked(); });
    }
    (void)co_await all_gather(std::uint8_t{0});
    for (auto& t : tables_) t->invalidate();
  }

  /// Runs another coroutine on this worker's thread, beside the program (it shares the worker's
  /// cache, oplog and clock). The worker finishes only after every spawned coroutine has; an
  /// exception from one is reported like the program's own.
  void spawn(task<> t) {
    auto owned = std::make_unique<task<>>(std::move(t));
    auto* p = owned.get();
    spawned_.push_back(std::move(owned));
    ++live_;
    p->start([this](std::exception_ptr e) {
      if (e && !spawn_error_) spawn_error_ = e;
      if (--live_ == 0 && deferred_finish_) std::exchange(deferred_finish_, {})();
    });
  }

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
  void on_message(endpoint src, wire::message&& m) {
    if (auto* a = std::get_if<wire::app>(&m)) return deliver_app(src, std::move(*a));
    if (auto* g = std::get_if<wire::gathered>(&m)) {
      if (g->parts.size() != wm_.workers()) throw error(errc::bad_frame, "collective result with a wrong number of parts");
      gathered_[g->round] = std::move(g->parts);
      return wake();
    }
    auto* rows = std::get_if<wire::rows>(&m);
    if (!rows) throw error(errc::bad_frame, "worker " + std::to_string(id_) + " got a message meant for a shard");
    const node_id s = rows->shard;
    if (s >= wm_.nodes) throw error(errc::bad_frame, "rows from unknown shard");
    auto& q = inflight_mass_[s];
    while (!q.empty() && q.front().seq <= rows->acked_seq) {
      inflight_total_ -= q.front().mass;
      unacked_incs_ -= q.front().incs;
      q.pop_front();
    }
    if (q.empty() && all_acked()) inflight_total_ = 0;  // exact: nothing in flight holds no mass
    for (auto& t : tables_) t->ack(s, rows->acked_seq);
    if (!rows->writers.empty() && rows->writers.size() != wm_.workers())
      throw error(errc::bad_frame, "rows from shard " + std::to_string(s) + " carry " + std::to_string(rows->writers.size()) +
                                       " writer clocks for " + std::to_string(wm_.workers()) + " workers");
    const std::uint32_t view = rows->count > 0 || rows->push ? view_of(s, *rows) : 0;
    byte_reader in(rows->payload.bytes);
    for (std::uint32_t i = 0; i < rows->count; ++i) {
      const auto t = in.get<table_id>();
      const auto r = in.get<row_id>();
      if (t >= tables_.size()) throw error(errc::bad_frame, "rows name unknown table");
      tables_[t]->on_row(s, r, in, rows->reflects, rows->push, view, taking_inline());
    }
    if (rows->push) {
      push_reflects_[s] = std::max(push_reflects_[s], rows->reflects);
      push_view_[s] = std::max(push_view_[s], view);
    }
    wake();
  }

  /// The first exception thrown by a spawned coroutine, if any.
  std::exception_ptr spawn_error() const noexcept { return spawn_error_; }

  /// After the worker's program (and every spawned coroutine) returns: flush the rest, tell the
  /// shards it is done, and call `done` once every flush is acknowledged (then its updates are in
  /// the servers' rows).
  void finish(std::function<void()> done) {
    if (live_ > 0) {
      deferred_finish_ = [this, done = std::move(done)]() mutable { finish(std::move(done)); };
      return;
    }
    flush(true, true);
    finish_done_ = std::move(done);
    if (all_acked()) return std::exchange(finish_done_, {})();
    finish_started_ = clock_now();
  }

  /// The consistency model of the next run (system::set_staleness); call between runs, on the
  /// worker's thread. Only the staleness bounds may differ from the current model.
  void set_model(const model_params& mp) { mp_ = mp; }

  /// Makes the worker new for another run of the same system: clock 0, empty cache, logs and
  /// statistics (the shards are reset alongside). Call between runs, on the worker's thread.
  void reset() {
    clock_ = 0;
    for (auto& t : tables_) t->reset();
    std::fill(seq_.begin(), seq_.end(), 0);
    std::fill(push_reflects_.begin(), push_reflects_.end(), no_clock);
    clear_views();
    for (auto& q : inflight_mass_) q.clear();
    std::fill(oplog_mass_.begin(), oplog_mass_.end(), 0.0);
    std::fill(oplog_incs_.begin(), oplog_incs_.end(), 0);
    unacked_incs_ = 0;
    inflight_total_ = oplog_total_ = 0;
    inc_waiters_ = 0;
    round_ = 0;
    gathered_.clear();
    spawned_.clear();
    live_ = 0;
    deferred_finish_ = {};
    spawn_error_ = {};
    finish_done_ = {};
    stats_ = {};
    unrecorded_wait_ = 0;
    reset_wait();
    clear_inbox();
  }

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
  std::uint32_t view_of(node_id s, const wire::rows& m) {
    const std::size_t P = wm_.workers();
    auto at = [&](std::size_t q) { return m.writers.empty() ? m.reflects : m.writers[q]; };
    if (const std::uint32_t last = last_view_[s]) {
      const clock_type* b = &view_clocks_[std::size_t{last} * P];
      std::size_t q = 0;
      while (q < P && b[q] == at(q)) ++q;
      if (q == P) return last;
    }
    const auto id = static_cast<std::uint32_t>(view_reads_.size());
    view_reads_.push_back(0);
    for (std::size_t q = 0; q < P; ++q) view_clocks_.push_back(at(q));
    return last_view_[s] = id;
  }
  /// Expands the reads counted since the last call into `writer_staleness`: for each view read n
  /// times at clock c, n reads of (c - 1) - clock of q, for every other worker q not finished.
  void settle_reads() const {
    const std::size_t P = wm_.workers();
    for (const std::uint32_t v : touched_) {
      const std::uint64_t n = std::exchange(view_reads_[v], 0);
      if (v == 0) continue;  // rows without writer clocks (none reach a counted read today)
      const clock_type* b = &view_clocks_[std::size_t{v} * P];
      for (std::size_t q = 0; q < P; ++q)
        if (q != id_ && b[q] != finished_clock) stats_.writer_staleness.add((clock_ - 1) - b[q], n);
    }
    touched_.clear();
  }
  /// Drops the views that nothing refers to any more (no cached row, no shard's latest view or
  /// push, no read of this clock), keeping the order of the rest (reads compare view numbers).
  /// Without it a long run keeps one view per shard and clock, P clocks each: memory that grows
  /// with the run (found by benchmarks/soak_test.sh). Runs when the views have doubled since the
  /// last compaction, so its cost (a pass over the cached rows) is spread over as many new views.
  void compact_views() {
    const std::size_t n = view_reads_.size();
    if (n < std::max<std::size_t>(min_views_to_compact, 2 * live_views_)) return;
    const std::size_t P = wm_.workers();
    std::vector<std::uint32_t> map(n, 0);
    std::vector<bool> live(n, false);
    live[0] = true;
    auto mark = [&](std::uint32_t& v) { live[v] = true; };
    for (auto& t : tables_) t->for_each_view(mark);
    for (auto& v : last_view_) mark(v);
    for (auto& v : push_view_) mark(v);
    for (auto& v : touched_) mark(v);
    std::uint32_t next = 0;
    for (std::size_t v = 0; v < n; ++v) {
      if (!live[v]) continue;
      if (next != v) {
        std::copy_n(view_clocks_.begin() + static_cast<std::ptrdiff_t>(v * P), P, view_clocks_.begin() + static_cast<std::ptrdiff_t>(std::size_t{next} * P));
        view_reads_[next] = view_reads_[v];
      }
      map[v] = next++;
    }
    view_clocks_.resize(std::size_t{next} * P);  // the capacity stays: the next views reuse it
    view_reads_.resize(next);
    auto renumber = [&](std::uint32_t& v) { v = map[v]; };
    for (auto& t : tables_) t->for_each_view(renumber);
    for (auto& v : last_view_) renumber(v);
    for (auto& v : push_view_) renumber(v);
    for (auto& v : touched_) renumber(v);
    live_views_ = next;
  }
  void clear_views() {
    live_views_ = 0;
    touched_.clear();
    view_reads_.assign(1, 0);
    view_clocks_.assign(wm_.workers(), no_clock);
    last_view_.assign(wm_.nodes, 0);
    push_view_.assign(wm_.nodes, 0);
  }

  /// Sends one flush to every shard (a clock flush also to shards with no rows for the clock).
  /// Writes this worker's checkpoint of clock m (runtime/impl/worker.ipp: the checkpoint files'
  /// code stays out of the files that only use a worker).
  STRATA_DECL void write_checkpoint(clock_type m);

  void flush(bool advance_clock, bool done = false) {
    const clock_type tag = clock_;
    if (advance_clock) settle_reads(), compact_views(), ++clock_;
    for (node_id s = 0; s < wm_.nodes; ++s) {
      wire::flush f;
      f.from = id_;
      f.tag = tag;
      f.new_clock = clock_;
      f.done = done;
      byte_writer w(f.payload.bytes);
      const std::uint64_t seq = seq_[s] + 1;
      for (auto& t : tables_) f.count += t->flush_to(s, seq, w);
      if (f.count == 0 && !advance_clock && !done) continue;
      f.seq = seq_[s] = seq;
      // The mass of the increments to this shard is un-propagated until this flush is acknowledged.
      inflight_mass_[s].push_back({seq, oplog_mass_[s], oplog_incs_[s]});
      inflight_total_ += oplog_mass_[s];
      oplog_mass_[s] = 0;
      oplog_incs_[s] = 0;
      ++stats_.flushes;
      send_raw(endpoint{s, 0}, std::move(f));
    }
    oplog_total_ = 0;  // every shard's oplog went out (a skipped shard had none): exactly nothing left
  }

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
  void after_wake() override {
    // A coroutine still waits in inc: what others added meanwhile must be on its way, or no
    // acknowledgement would ever wake it.
    if (inc_waiters_ > 0 && unacked_incs_ > 0 && all_acked()) flush(false);
    if (finish_done_ && all_acked()) {
      add_wait(clock_now() - finish_started_);
      std::exchange(finish_done_, {})();
    }
  }

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

#if STRATA_HEADER_ONLY
#include "impl/worker.ipp"
#endif
