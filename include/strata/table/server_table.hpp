#pragma once
/// \file Server-side storage of one table's rows on one shard: data, pending updates, subscribers.
#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "../core/bytes.hpp"
#include "../core/ids.hpp"
#include "row.hpp"

namespace strata {

/// The type-erased face of a server table (the shard handles tables of any row type).
class server_table_base {
 public:
  virtual ~server_table_base() = default;
  /// Decodes one row delta from `in` and applies it now (immediate) or holds it under `tag` (exact).
  virtual void apply(row_id row, byte_reader& in, clock_type tag, bool immediate) = 0;
  /// Consumes one encoded row delta from `in`, checking it (width, columns) without applying it.
  virtual void check(byte_reader& in) const = 0;
  /// Folds the held deltas with tag < `below` into the rows; appends the rows it changed.
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
  explicit server_table(std::size_t width) : width_(width) {}

  void apply(row_id row, byte_reader& in, clock_type tag, bool immediate) override {
    if constexpr (requires(R& r) { r.add_encoded(in); }) {  // opt-in: add straight from the bytes
      if (immediate) return slot(row).data.add_encoded(in);
      auto& p = pending_[tag];
      if (auto it = p.find(row); it != p.end()) it->second.add_encoded(in);
      else p.emplace(row, R::decode(in, width_));  // decoded first: a short payload leaves no entry behind
    } else {
      R d = R::decode(in, width_);
      if (immediate) slot(row).data.add(d);
      else {
        auto& p = pending_[tag];
        auto [it, fresh] = p.try_emplace(row, std::move(d));
        if (!fresh) it->second.add(d);
      }
    }
  }
  void check(byte_reader& in) const override { skip_row<R>(in, width_); }
  void fold(clock_type below, std::vector<row_id>& changed) override {
    while (!pending_.empty() && pending_.begin()->first < below) {
      for (auto& [row, d] : pending_.begin()->second) {
        slot(row).data.add(d);
        changed.push_back(row);
      }
      pending_.erase(pending_.begin());
    }
  }
  void encode(row_id row, byte_writer& out) override { slot(row).data.encode(out); }
  void subscribe(row_id row, worker_id w) override {
    auto& s = slot(row).subs;
    if (std::find(s.begin(), s.end(), w) == s.end()) s.push_back(w);
  }
  void reset(bool clear_rows) override {
    pending_.clear();
    if (clear_rows) rows_.clear();
    else
      for (auto& [r, e] : rows_) e.subs.clear();
  }
  const std::vector<worker_id>* subscribers(row_id row) const override {
    auto it = rows_.find(row);
    return it == rows_.end() ? nullptr : &it->second.subs;
  }
  std::size_t width() const noexcept override { return width_; }
  std::vector<row_id> row_ids() const override {
    std::vector<row_id> ids;
    ids.reserve(rows_.size());
    for (const auto& [r, _] : rows_) ids.push_back(r);
    return ids;
  }
  std::unique_ptr<server_table_base> make_empty() const override { return std::make_unique<server_table<R>>(width_); }
  /// The stored row (for reading final tables in process).
  const R& row(row_id r) { return slot(r).data; }

 private:
  struct entry {
    R data;
    std::vector<worker_id> subs;
  };
  entry& slot(row_id r) {
    auto [it, fresh] = rows_.try_emplace(r);
    if (fresh) it->second.data = R(width_);
    return it->second;
  }
  std::size_t width_;
  std::unordered_map<row_id, entry> rows_;
  std::map<clock_type, std::unordered_map<row_id, R>> pending_;
};

}  // namespace strata
