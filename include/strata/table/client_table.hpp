#pragma once
/// \file Worker-side state of one table: row cache, oplog (aggregated pending increments) and the
/// flushed-but-unacknowledged increments that keep reads seeing the worker's own writes.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../core/bytes.hpp"
#include "../core/ids.hpp"
#include "row.hpp"
#include "table.hpp"

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
  /// per-writer clocks that came with it (the worker's numbering; 0: none).
  virtual void on_row(node_id shard, row_id row, byte_reader& in, clock_type reflects, bool push, std::uint32_t view) = 0;
  /// Calls `f` on the view number of every cached row (the worker renumbers them, see
  /// worker::compact_views).
  virtual void for_each_view(const std::function<void(std::uint32_t&)>& f) = 0;
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
    R* pending = nullptr;           ///< this row's oplog entry, valid while pending_epoch is current
    std::uint64_t pending_epoch = 0;
  };

  client_table(table_id id, std::size_t width, std::uint32_t nodes)
      : id_(id), width_(width), nodes_(nodes), oplog_(nodes), inflight_(nodes) {}

  entry* find(row_id r) noexcept {
    auto it = cache_.find(r);
    return it == cache_.end() ? nullptr : &it->second;
  }
  entry& slot(row_id r) { return cache_[r]; }

  /// Adds `v` at (r, c) to the oplog and to the cached row.
  void inc(row_id r, col_id c, typename R::value_type v) {
    auto it = cache_.find(r);
    if (it == cache_.end()) return pending(r).inc(c, v);
    pending_of(it->second, r).inc(c, v);
    if (it->second.valid) it->second.data.inc(c, v);
  }
  /// Adds a whole delta row to the oplog and to the cached row.
  void inc_row(row_id r, const R& d) {
    auto it = cache_.find(r);
    if (it == cache_.end()) return pending(r).add(d);
    pending_of(it->second, r).add(d);
    if (it->second.valid) it->second.data.add(d);
  }

  std::uint32_t flush_to(node_id shard, std::uint64_t seq, byte_writer& out) override {
    auto& log = oplog_[shard];
    if (log.empty()) return 0;
    std::uint32_t n = 0;
    for (const auto& [r, d] : log) {
      out.put(id_);
      out.put(r);
      d.encode(out);
      ++n;
    }
    inflight_[shard].emplace_back(seq, std::move(log));
    log = {};
    ++epoch_;  // cached oplog pointers now point into in-flight maps
    return n;
  }
  void ack(node_id shard, std::uint64_t acked) override {
    auto& q = inflight_[shard];
    while (!q.empty() && q.front().first <= acked) q.pop_front();
  }
  void invalidate() override {
    for (auto& [r, e] : cache_) e.valid = false, e.requested = false;
  }
  void reset() override {
    cache_.clear();
    for (auto& l : oplog_) l.clear();
    for (auto& q : inflight_) q.clear();
    ++epoch_;
  }
  void on_row(node_id shard, row_id row, byte_reader& in, clock_type reflects, bool push, std::uint32_t view) override {
    R d = R::decode(in, width_);
    // The server's row lacks what is still in flight or in the oplog: add it back.
    for (const auto& [seq, log] : inflight_[shard])
      if (auto it = log.find(row); it != log.end()) d.add(it->second);
    if (auto it = oplog_[shard].find(row); it != oplog_[shard].end()) d.add(it->second);
    auto& e = cache_[row];
    e.data = std::move(d);
    e.reflects = reflects;
    e.view = view;
    e.valid = true;
    if (!push) e.requested = false;
  }
  void for_each_view(const std::function<void(std::uint32_t&)>& f) override {
    for (auto& [r, e] : cache_) f(e.view);
  }
  std::size_t width() const noexcept { return width_; }
  table_id id() const noexcept { return id_; }

 private:
  R& pending(row_id r) {
    auto& log = oplog_[owner_of(id_, r, nodes_)];
    auto [it, fresh] = log.try_emplace(r);
    if (fresh) it->second = R(width_);
    return it->second;
  }
  /// The oplog entry of a cached row, remembered in the entry until the next flush (saves a lookup).
  R& pending_of(entry& e, row_id r) {
    if (e.pending_epoch != epoch_) {
      e.pending = &pending(r);
      e.pending_epoch = epoch_;
    }
    return *e.pending;
  }
  using log_map = std::unordered_map<row_id, R>;
  table_id id_;
  std::size_t width_;
  std::uint32_t nodes_;
  std::uint64_t epoch_ = 1;
  std::unordered_map<row_id, entry> cache_;
  std::vector<log_map> oplog_;                                          // per shard
  std::vector<std::deque<std::pair<std::uint64_t, log_map>>> inflight_;  // per shard, by seq
};

}  // namespace strata
