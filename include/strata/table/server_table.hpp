#pragma once
/// \file Server-side storage of one table's rows on one shard: data, pending updates, subscribers.
#include <algorithm>
#include <cstddef>
#include <deque>
#include <iterator>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <strata/core/bytes.hpp>
#include <strata/core/ids.hpp>
#include <strata/table/node_pool.hpp>
#include <strata/table/row.hpp>

namespace strata {

/// The type-erased face of a server table (the shard handles tables of any row type).
class server_table_base {
 public:
  virtual ~server_table_base() = default;
  /// Decodes one row delta from `in` and applies it now (immediate) or holds it under `tag` (exact).
  /// Consumes one encoded row delta of writer `from` from `in`: added to the row when
  /// `immediate`, else held with clock `tag` until fold().
  virtual void apply(row_id row, byte_reader& in, clock_type tag, worker_id from, bool immediate) = 0;
  /// Consumes one encoded row delta from `in`, checking it (width, columns) without applying it.
  virtual void check(byte_reader& in) const = 0;
  /// Folds the held deltas with tag < `below` into the rows, oldest clock first and, for rows of
  /// floating-point values, each clock's writers in the order of their ids, so that the sums do
  /// not depend on the order in which flushes arrived; appends the rows it changed.
  virtual void fold(clock_type below, std::vector<row_id>& changed) = 0;
  /// Appends the current row (zero row if never written) in wire form.
  virtual void encode(row_id row, byte_writer& out) = 0;
  virtual void subscribe(row_id row, worker_id w) = 0;
  /// Between runs: drops held deltas and subscriptions, and the rows too when `clear_rows`.
  virtual void reset(bool clear_rows) = 0;
  virtual const std::vector<worker_id>* subscribers(row_id row) const = 0;
  virtual std::size_t width() const noexcept = 0;
  /// Row ids stored on this shard.
  virtual std::vector<row_id> row_ids() const = 0;
  /// A new, empty table of the same row type and width.
  virtual std::unique_ptr<server_table_base> make_empty() const = 0;
};

/// Rows of type R stored on one shard.
template <row_type R>
class server_table final : public server_table_base {
 public:
  explicit server_table(std::size_t width) : width_(width), spare_(width) {}

  void apply(row_id row, byte_reader& in, clock_type tag, worker_id from, bool immediate) override {
    if constexpr (requires(R& r) { r.add_encoded(in); }) {  // opt-in: add straight from the bytes
      if (immediate) return slot(row).data.add_encoded(in);
      auto& p = held(tag, from);
      if (auto it = p.find(row); it != p.end()) it->second.add_encoded(in);
      else hold(p, row, in);
    } else {
      R d = R::decode(in, width_);
      if (immediate) slot(row).data.add(d);
      else {
        auto& p = held(tag, from);
        auto [it, fresh] = p.try_emplace(row, std::move(d));
        if (!fresh) it->second.add(d);
      }
    }
  }
  void check(byte_reader& in) const override { skip_row<R>(in, width_); }
  void fold(clock_type below, std::vector<row_id>& changed) override {
    for (;;) {  // oldest clock first, then the lowest writer id
      held_clock* h = nullptr;
      for (auto& c : pending_)
        if (c.used && c.tag < below && (!h || std::pair(c.tag, c.from) < std::pair(h->tag, h->from))) h = &c;
      if (!h) return;
      auto apply_held = [&](row_id r, const R& d) {
        slot(r).data.add(d);
        changed.push_back(r);
      };
      if constexpr (recyclable) {
        spare_.drain(h->rows, apply_held);  // the map keeps its buckets for a later clock
      } else {
        for (const auto& [r, d] : h->rows) apply_held(r, d);
        h->rows.clear();
      }
      h->used = false;
    }
  }
  void encode(row_id row, byte_writer& out) override { slot(row).data.encode(out); }
  void subscribe(row_id row, worker_id w) override {
    auto& s = slot(row).subs;
    if (std::find(s.begin(), s.end(), w) == s.end()) s.push_back(w);
  }
  void reset(bool clear_rows) override {
    for (auto& c : pending_) c.rows.clear(), c.used = false;
    if (clear_rows) {
      near_.clear();
      far_.clear();
      store_.clear();
    } else {
      for (auto& e : store_) e.subs.clear();
    }
  }
  const std::vector<worker_id>* subscribers(row_id row) const override {
    const entry* e = find(row);
    return e ? &e->subs : nullptr;
  }
  std::size_t width() const noexcept override { return width_; }
  std::vector<row_id> row_ids() const override {
    std::vector<row_id> ids;
    ids.reserve(store_.size());
    for (const auto& e : store_) ids.push_back(e.id);
    return ids;
  }
  /// Rows kept for held deltas now (for tests).
  std::size_t spare_rows() const noexcept { return spare_.size(); }
  std::unique_ptr<server_table_base> make_empty() const override { return std::make_unique<server_table<R>>(width_); }
  /// The stored row (for reading final tables in process).
  const R& row(row_id r) { return slot(r).data; }

 private:
  struct entry {
    R data;
    std::vector<worker_id> subs;
    row_id id = 0;
  };
  // Rows live in store_ (a deque: entries never move) and are found through near_, a vector indexed
  // by row id, for the ids a table of this size plausibly uses densely (rows are spread round-robin
  // over shards, so a shard holds every nodes-th id), else through far_. A hash lookup here was 3-6%
  // of a two-worker MF run, mostly cache misses along hash-node chains.
  static constexpr std::size_t near_floor = 1u << 16;
  entry* find(row_id r) const noexcept {
    if (r < near_.size() && near_[r]) return near_[r];
    if (far_.empty()) return nullptr;
    auto it = far_.find(r);  // (an id near_ has grown past since its row was made is still here)
    return it == far_.end() ? nullptr : it->second;
  }
  entry& slot(row_id r) {
    if (entry* e = find(r)) return *e;
    entry& e = store_.emplace_back();
    e.data = R(width_);
    e.id = r;
    if (r < near_floor + 16 * store_.size()) {
      if (r >= near_.size()) near_.resize(std::max<std::size_t>(r + 1, 2 * near_.size()), nullptr);
      near_[r] = &e;
    } else {
      far_.emplace(r, &e);
    }
    return e;
  }
  using held_rows = typename node_pool<R>::map;
  /// A slot for the held deltas of one clock (exact models, and the checkpoint copy of the
  /// others). Slots are one per clock not yet folded (a few under a staleness bound) and outlive
  /// their clocks, keeping the map's buckets.
  struct held_clock {
    clock_type tag = 0;
    worker_id from = 0;  ///< the writer, where the order of the sums matters (else 0)
    bool used = false;
    held_rows rows;
  };
  /// Floating-point sums depend on their order: each writer's deltas of a clock are held apart
  /// and folded in writer order, so that a BSP run's tables are the same bits whatever order
  /// flushes arrive in (threads, sockets). Integer sums are the same in any order: one slot per
  /// clock. The cost: up to one held copy of a row per writer that changed it in the clock.
  static constexpr bool order_matters = std::is_floating_point_v<typename R::value_type>;
  /// The held deltas of clock `tag` (and writer `from`, where the order matters): in a free slot
  /// if there are none yet. A flush's rows share one slot, so the slot found last is tried first
  /// (the others are searched once per flush).
  held_rows& held(clock_type tag, worker_id from) {
    if constexpr (!order_matters) from = 0;
    if (last_held_ && last_held_->used && last_held_->tag == tag && last_held_->from == from) return last_held_->rows;
    held_clock* free = nullptr;
    for (auto& c : pending_) {
      if (c.used && c.tag == tag && c.from == from) return (last_held_ = &c)->rows;
      if (!c.used && !free) free = &c;
    }
    if (!free) free = &pending_.emplace_back();
    free->tag = tag;
    free->from = from;
    free->used = true;
    return (last_held_ = free)->rows;
  }
  /// Rows that held deltas (exact models) were folded from are kept, with their hash nodes, to
  /// hold the next ones (node_pool): no allocation per held row once a run is warm.
  static constexpr bool recyclable = node_pool<R>::enabled && requires(R& r, byte_reader& in) { r.assign_encoded(in); };
  /// Holds row `row`'s delta decoded from `in` in `p`: in a kept node when there is one. Decoded
  /// first: a short payload throws and leaves no entry behind.
  void hold(held_rows& p, row_id row, byte_reader& in) {
    if constexpr (recyclable) {
      if (!spare_.empty()) {
        auto node = spare_.take();
        node.mapped().assign_encoded(in);
        node.key() = row;
        p.insert(std::move(node));
        return;
      }
    }
    p.emplace(row, R::decode(in, width_));
  }
  std::size_t width_;
  std::deque<entry> store_;
  std::vector<entry*> near_;
  std::unordered_map<row_id, entry*> far_;
  std::deque<held_clock> pending_;  // a deque: a slot held() returned stays put as slots are added
  held_clock* last_held_ = nullptr;
  node_pool<R> spare_;
};

}  // namespace strata
