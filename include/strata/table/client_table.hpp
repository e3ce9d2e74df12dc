#pragma once
/// \file Worker-side state of one table: row cache, oplog (aggregated pending increments) and the
/// flushed-but-unacknowledged increments that keep reads seeing the worker's own writes.
///
/// The cache may be bounded (`bound`): a CLOCK (second chance) sweep evicts rows to keep at most
/// `capacity` rows, but never a pinned row: one with an oplog entry (un-flushed increments), one a
/// request is on its way for (a pending get or prefetch), one a suspended read waits on, or one a
/// read returned during the worker's current turn (since its coroutines last suspended). When
/// every cached row is pinned a new row is admitted anyway, so after each admission
/// rows <= max(capacity, pinned rows). Evicting loses nothing: increments live in the oplog and
/// in-flight logs, which every row received from a shard is rebuilt from. A bounded cache takes
/// in only the rows it asked for: a reply or push for a row it does not hold is dropped.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <strata/core/bytes.hpp>
#include <strata/core/ids.hpp>
#include <strata/table/node_pool.hpp>
#include <strata/table/row.hpp>
#include <strata/table/table.hpp>

namespace strata {

/// The type-erased face of a worker's table (the worker flushes and receives tables of any row type).
class client_table_base {
 public:
  virtual ~client_table_base() = default;
  /// Writes the oplog rows owned by `shard` to `out` and keeps them as in flight under `seq`;
  /// returns how many rows it wrote.
  virtual std::uint32_t flush_to(node_id shard, std::uint64_t seq, byte_writer& out) = 0;
  /// Forgets in-flight increments to `shard` with sequence numbers <= `acked` (now in the server's rows).
  virtual void ack(node_id shard, std::uint64_t acked) = 0;
  /// Marks every cached row stale, so the next read of it asks its shard again.
  virtual void invalidate() = 0;
  /// Forgets everything: cache, oplog, in-flight increments (between runs).
  virtual void reset() = 0;
  /// Takes a row from `shard` that holds the worker's flushes through the last ack. `view` names the
  /// per-writer clocks that came with it (the worker's numbering; 0: none). `hold`: the row came in
  /// the middle of the worker's turn (a reply taken in inline), and stays pinned until the turn ends,
  /// as its request pinned it until then when replies waited in the worker's queue.
  virtual void on_row(node_id shard, row_id row, byte_reader& in, clock_type reflects, bool push, std::uint32_t view,
                      bool hold) = 0;
  /// Calls `f` on the view number of every cached row (the worker renumbers them, see
  /// worker::compact_views).
  virtual void for_each_view(const std::function<void(std::uint32_t&)>& f) = 0;
  /// Bounds the cache to `capacity` rows (0: unbounded); rows read while `*turn` is unchanged are pinned.
  virtual void bound(std::size_t capacity, const std::uint64_t* turn) = 0;
  /// Rows evicted since the last reset.
  virtual std::uint64_t evictions() const noexcept = 0;
  /// The most rows cached at once since the last reset.
  virtual std::size_t peak_rows() const noexcept = 0;
};

/// A worker's cached rows, oplog and in-flight increments for a table of rows R.
template <row_type R>
class client_table final : public client_table_base {
 public:
  struct entry {
    R data;                         ///< server row + in-flight + oplog increments (read-my-writes)
    clock_type reflects = no_clock; ///< every update through this clock is in `data`
    std::uint32_t view = 0;         ///< the worker's record of the per-writer clocks `data` holds (0: none)
    bool valid = false;             ///< holds server data
    bool requested = false;         ///< a request is on its way
    bool used = false;              ///< CLOCK reference bit (bounded cache): read since the hand passed
    std::uint32_t waiters = 0;      ///< suspended reads of this row (pinned while > 0)
    std::uint64_t held = 0;         ///< the worker's turn in which a read last returned this row
    R* pending = nullptr;           ///< this row's oplog entry, valid while pending_epoch is current
    std::uint64_t pending_epoch = 0;
  };

  client_table(table_id id, std::size_t width, std::uint32_t nodes)
      : id_(id), width_(width), nodes_(nodes), oplog_(nodes), inflight_(nodes), spare_(width) {}

  /// Bounds the cache to `capacity` rows (0: unbounded); `turn` is the worker's turn counter
  /// (rows read in the current turn are pinned). Call before the table is used.
  void bound(std::size_t capacity, const std::uint64_t* turn) override {
    capacity_ = capacity;
    turn_ = turn;
  }
  std::size_t capacity() const noexcept { return capacity_; }

  entry* find(row_id r) noexcept {
    auto it = cache_.find(r);
    return it == cache_.end() ? nullptr : &it->second;
  }
  /// The cached entry of row r, made (after evicting, in a bounded cache) when it is not cached.
  entry& slot(row_id r) {
    auto [it, fresh] = cache_.try_emplace(r);
    if (capacity_ > 0) {
      if (fresh) admit(r, it->second);
      it->second.used = true;
    }
    return it->second;
  }
  /// A read returned row r's entry `e` in the worker's current turn: pinned until the turn ends.
  void hold(entry& e) noexcept {
    if (turn_) e.held = *turn_;
  }
  /// A suspended read of `e` ended: it may be evictable again.
  void release(entry& e) noexcept {
    --e.waiters;
    ++unpins_;
  }
  std::size_t cached_rows() const noexcept { return cache_.size(); }
  /// The most rows cached at once since the last reset.
  std::size_t peak_rows() const noexcept override { return std::max(peak_, cache_.size()); }
  /// Rows evicted since the last reset.
  std::uint64_t evictions() const noexcept override { return evictions_; }
  /// Replies and pushes dropped since the last reset because their row was not cached (bounded cache).
  std::uint64_t dropped_rows() const noexcept { return dropped_; }
  /// How many cached rows may not be evicted now (O(rows): for tests and diagnostics).
  std::size_t pinned_rows() const {
    std::size_t n = 0;
    for (const auto& [r, e] : cache_) n += pinned(r, e);
    return n;
  }

  /// Adds `v` at (r, c) to the oplog and to the cached row.
  void inc(row_id r, col_id c, typename R::value_type v) {
    auto it = cache_.find(r);
    if (it == cache_.end()) return pending(r).inc(c, v);
    pending_of(it->second, r).inc(c, v);
    if (it->second.valid) it->second.data.inc(c, v);
  }
  /// Adds a whole delta row to the oplog and to the cached row (a copy of d: see below).
  void inc_row(row_id r, const R& d) { inc_row(r, R(d)); }
  /// As above, taking the delta: a row with nothing in the oplog yet keeps the delta itself
  /// (no zero row to allocate and add into; the common case, one inc_row per row per clock).
  void inc_row(row_id r, R&& d) {
    auto it = cache_.find(r);
    if (it == cache_.end()) return void(take_pending(r, std::move(d)));
    entry& e = it->second;
    if (e.valid) e.data.add(d);
    if (e.pending_epoch == epoch_) return e.pending->add(d);
    e.pending = &take_pending(r, std::move(d));
    e.pending_epoch = epoch_;
  }

  std::uint32_t flush_to(node_id shard, std::uint64_t seq, byte_writer& out) override {
    auto& log = oplog_[shard];
    if (log.empty()) return 0;
    std::uint32_t n = 0;
    const std::size_t at = out.size();
    for (const auto& [r, d] : log) {
      out.put(id_);
      out.put(r);
      d.encode(out);
      if (++n == 1) out.reserve((out.size() - at) * (log.size() - 1));  // rows are about this size
    }
    auto& f = inflight_[shard].push();
    f.seq = seq;
    f.log.swap(log);  // the oplog goes on with the slot's emptied map (its buckets)
    ++epoch_;  // cached oplog pointers now point into in-flight maps
    ++unpins_;
    return n;
  }
  void ack(node_id shard, std::uint64_t acked) override {
    auto& q = inflight_[shard];
    while (!q.empty() && q.front().seq <= acked) {
      spare_.drain(q.front().log);
      q.pop_front();
    }
  }
  /// A zeroed row of the table's width to fill with a delta and hand to `inc_row`: one of the rows
  /// acknowledged flushes gave back when there is one (a dense row's values, a sparse row's entry
  /// capacity: no allocation once a run is warm), else a new one.
  R delta_row() {
    if constexpr (pool::enabled) {
      if (!spare_.empty()) {
        auto node = spare_.take();
        R d = std::move(node.mapped());
        if (husks_.size() < max_husks) husks_.push_back(std::move(node));  // inc_row puts the delta back into it
        d.zero();
        return d;
      }
    }
    return R(width_);
  }
  /// Rows kept for delta_row now (for tests).
  std::size_t spare_rows() const noexcept { return spare_.size(); }
  void invalidate() override {
    for (auto& [r, e] : cache_) e.valid = false, e.requested = false;
    ++unpins_;
  }
  void reset() override {
    cache_.clear();
    ring_.clear();
    hand_ = 0;
    for (auto& l : oplog_) l.clear();
    for (auto& q : inflight_) q.clear();
    spare_.clear();
    husks_.clear();
    ++epoch_;
    peak_ = 0;
    evictions_ = dropped_ = 0;
    ++unpins_;
  }
  void on_row(node_id shard, row_id row, byte_reader& in, clock_type reflects, bool push, std::uint32_t view,
              bool hold_row) override {
    auto at = cache_.find(row);
    if constexpr (requires(R& r) { r.assign_encoded(in); }) {  // opt-in: refresh a cached row in place
      if (at != cache_.end() && at->second.data.width() == width_) {
        entry& e = at->second;
        e.data.assign_encoded(in);
        add_unacknowledged(shard, row, e.data);
        return stored(e, reflects, push, view, hold_row);
      }
    }
    R d = R::decode(in, width_);
    if (at == cache_.end() && capacity_ > 0) {
      // Evicted (or never asked for): re-growing the cache with it would defeat the bound, and a
      // later read asks its shard again with its own clock's requirement.
      ++dropped_;
      return;
    }
    add_unacknowledged(shard, row, d);
    auto& e = at != cache_.end() ? at->second : cache_[row];
    e.data = std::move(d);
    stored(e, reflects, push, view, hold_row);
  }
  void for_each_view(const std::function<void(std::uint32_t&)>& f) override {
    for (auto& [r, e] : cache_) f(e.view);
  }
  std::size_t width() const noexcept { return width_; }
  table_id id() const noexcept { return id_; }

 private:
  /// Rows (with `zero()`: dense and sparse) are kept, in their hash nodes, for the oplog and
  /// delta_row once their flush is acknowledged (node_pool); the emptied maps keep their buckets
  /// for later flushes. A warm run allocates nothing per inc or per flushed row.
  using pool = node_pool<R>;
  using log_map = typename pool::map;
  using log_node = typename pool::node;
  /// Husks kept at most: a caller that drops delta rows instead of inc_row-ing them grows nothing.
  static constexpr std::size_t max_husks = 4096;
  /// The server's row lacks this worker's increments to it still in flight or in the oplog: adds them to `into`.
  void add_unacknowledged(node_id shard, row_id row, R& into) const {
    const auto& q = inflight_[shard];
    for (std::size_t i = 0; i < q.size(); ++i)
      if (auto it = q[i].log.find(row); it != q[i].log.end()) into.add(it->second);
    if (auto it = oplog_[shard].find(row); it != oplog_[shard].end()) into.add(it->second);
  }
  /// Row r's oplog entry, a zero row when it has none yet.
  R& pending(row_id r) {
    auto& log = oplog_[owner_of(id_, r, nodes_)];
    if constexpr (pool::enabled) {
      if (!spare_.empty()) {
        if (auto it = log.find(r); it != log.end()) return it->second;
        return log.insert(spare_.take_zeroed(r)).position->second;
      }
    }
    auto [it, fresh] = log.try_emplace(r);
    if (fresh) it->second = delta_row();
    return it->second;
  }
  /// Adds d to row r's oplog entry; a new entry is d itself (in a node delta_row emptied, when
  /// there is one), else d is added and its row kept for delta_row.
  R& take_pending(row_id r, R&& d) {
    auto& log = oplog_[owner_of(id_, r, nodes_)];
    if constexpr (pool::enabled) {
      if (!husks_.empty()) {
        auto it = log.find(r);
        auto node = std::move(husks_.back());
        husks_.pop_back();
        node.mapped() = std::move(d);
        if (it != log.end()) {
          it->second.add(node.mapped());
          spare_.give(std::move(node));
          return it->second;
        }
        node.key() = r;
        return log.insert(std::move(node)).position->second;
      }
    }
    auto [it, fresh] = log.try_emplace(r, std::move(d));
    if (!fresh) it->second.add(d);
    return it->second;
  }
  /// Marks entry e's new data (a reply or a push reflecting clock `reflects`) as the cached row.
  void stored(entry& e, clock_type reflects, bool push, std::uint32_t view, bool hold_row) {
    e.reflects = reflects;
    e.view = view;
    e.valid = true;
    if (hold_row) hold(e);
    if (!push && e.requested) e.requested = false, ++unpins_;
  }
  /// The oplog entry of a cached row, remembered in the entry until the next flush (saves a lookup).
  R& pending_of(entry& e, row_id r) {
    if (e.pending_epoch != epoch_) {
      e.pending = &pending(r);
      e.pending_epoch = epoch_;
    }
    return *e.pending;
  }
  /// True when row r (entry e) may not be evicted now.
  bool pinned(row_id r, const entry& e) const {
    if (e.requested || e.waiters > 0 || (turn_ && e.held == *turn_)) return true;
    if (e.pending_epoch == epoch_) return true;  // inc'd since the last flush: in the oplog
    const auto& log = oplog_[owner_of(id_, r, nodes_)];
    return !log.empty() && log.count(r) > 0;
  }
  /// Keeps a new entry `e` of row r within the bound: evicts unpinned rows (CLOCK) until there is
  /// room or every row is pinned, then puts r on the ring.
  void admit(row_id r, entry& e) {
    while (cache_.size() > capacity_) {
      // A sweep that found every row pinned is not repeated until something may have been unpinned.
      if (stuck_ && stuck_turn_ == (turn_ ? *turn_ : 0) && stuck_unpins_ == unpins_) break;
      const std::size_t v = victim();
      if (v == ring_.size()) {
        stuck_ = true;
        stuck_turn_ = turn_ ? *turn_ : 0;
        stuck_unpins_ = unpins_;
        break;
      }
      cache_.erase(ring_[v].row);
      ++evictions_;
      ring_[v] = ring_.back();
      ring_.pop_back();
      if (hand_ >= ring_.size()) hand_ = 0;
    }
    ring_.push_back({r, &e});
    peak_ = std::max(peak_, cache_.size());
  }
  /// The ring position of an evictable row (ring_.size() when every row is pinned): the first the
  /// hand reaches that is unpinned and not used since the hand last passed it.
  std::size_t victim() {
    const std::size_t n = ring_.size();
    for (std::size_t step = 0; step < 2 * n; ++step) {
      if (hand_ >= n) hand_ = 0;
      auto& [r, e] = ring_[hand_];
      if (!pinned(r, *e)) {
        if (!e->used) return hand_;
        e->used = false;
      }
      ++hand_;
    }
    return n;
  }

  struct ring_slot {
    row_id row;
    entry* e;  // stable: unordered_map nodes do not move
  };
  table_id id_;
  std::size_t width_;
  std::uint32_t nodes_;
  std::uint64_t epoch_ = 1;
  std::unordered_map<row_id, entry> cache_;
  std::vector<log_map> oplog_;                                          // per shard
  /// Flushed oplogs not acknowledged yet, oldest first, in a ring whose slots keep their maps: an
  /// acknowledged log is emptied in place (its nodes kept in spare_) and its slot's map, buckets
  /// and all, becomes a later oplog. No map is made or destroyed per flush.
  struct flushed_log {
    std::uint64_t seq = 0;
    log_map log;
  };
  class log_ring {
   public:
    bool empty() const noexcept { return n_ == 0; }
    std::size_t size() const noexcept { return n_; }
    const flushed_log& operator[](std::size_t i) const { return slots_[(head_ + i) % slots_.size()]; }
    flushed_log& front() { return slots_[head_]; }
    /// The slot after the newest (its map empty), made when every slot is in use.
    flushed_log& push() {
      if (n_ == slots_.size()) {
        std::rotate(slots_.begin(), slots_.begin() + static_cast<std::ptrdiff_t>(head_), slots_.end());
        head_ = 0;
        slots_.resize(std::max<std::size_t>(4, 2 * slots_.size()));
      }
      return slots_[(head_ + n_++) % slots_.size()];
    }
    void pop_front() {
      head_ = (head_ + 1) % slots_.size();
      --n_;
    }
    void clear() {
      for (auto& f : slots_) f.log.clear();
      head_ = n_ = 0;
    }

   private:
    std::vector<flushed_log> slots_;
    std::size_t head_ = 0, n_ = 0;
  };
  std::vector<log_ring> inflight_;  // per shard, by seq
  pool spare_;                    // nodes holding rows of the table's width, for later entries
  std::vector<log_node> husks_;   // nodes whose row delta_row handed out
  // Bounded cache (capacity_ > 0): the CLOCK ring of cached rows and its hand.
  std::size_t capacity_ = 0;
  const std::uint64_t* turn_ = nullptr;
  std::vector<ring_slot> ring_;
  std::size_t hand_ = 0;
  std::uint64_t unpins_ = 0;  // events that may unpin rows (replies, flushes, reads ending)
  bool stuck_ = false;        // the last sweep found every row pinned, at this turn and unpins_
  std::uint64_t stuck_turn_ = 0, stuck_unpins_ = 0;
  std::size_t peak_ = 0;
  std::uint64_t evictions_ = 0, dropped_ = 0;
};

}  // namespace strata
