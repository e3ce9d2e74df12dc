#pragma once
/// \file node_pool<R>: rows kept in their hash nodes between uses, so that a warm run allocates
/// nothing per oplog entry, delta row or held server delta.
#include <algorithm>
#include <cstddef>
#include <unordered_map>
#include <utility>
#include <vector>

#include <strata/core/ids.hpp>
#include <strata/table/row.hpp>

namespace strata {

/// Rows of a map `std::unordered_map<row_id, R>` that a table no longer needs, kept with their
/// hash nodes (and the row's storage: a dense row's values, a sparse row's entry capacity) for
/// the next entry of the same table. Only rows of the table's width are kept, as many as
/// `budget_bytes` of values allows with each row counted at its width x sizeof(value_type) (a
/// sparse row holds at most that many values, plus a column id each), so an idle table holds
/// bounded memory.
///
/// A row type opts in with `void zero()`: every value zero, storage kept (see row.hpp). For
/// other row types `enabled` is false and the pool keeps nothing.
template <row_type R>
class node_pool {
 public:
  using map = std::unordered_map<row_id, R>;
  using node = typename map::node_type;
  static constexpr bool enabled = requires(R& r) { r.zero(); };
  static constexpr std::size_t budget_bytes = std::size_t{4} << 20;

  explicit node_pool(std::size_t width)
      : width_(width), cap_(budget_bytes / std::max<std::size_t>(1, width * sizeof(typename R::value_type))) {}

  bool empty() const noexcept { return nodes_.empty(); }
  std::size_t size() const noexcept { return nodes_.size(); }
  /// A kept node, its row as it was left (the caller zeroes or overwrites it). Not when empty().
  node take() {
    node n = std::move(nodes_.back());
    nodes_.pop_back();
    return n;
  }
  /// A kept node for row `r`, its row zeroed. Not when empty().
  node take_zeroed(row_id r) {
    node n = take();
    n.key() = r;
    if constexpr (enabled) n.mapped().zero();
    return n;
  }
  /// Keeps `n` when its row is of the table's width and the budget allows; else it is freed.
  void give(node&& n) {
    if (keeps(n.mapped())) nodes_.push_back(std::move(n));
  }
  /// Calls `f(row, delta)` on every entry of `m`, keeping the nodes it may, then empties `m`
  /// (which keeps its buckets).
  template <class F>
  void drain(map& m, F&& f) {
    for (auto it = m.begin(); it != m.end();) {
      auto next = std::next(it);
      f(it->first, it->second);
      if (keeps(it->second)) nodes_.push_back(m.extract(it));
      it = next;
    }
    m.clear();
  }
  void drain(map& m) {
    drain(m, [](row_id, const R&) {});
  }
  void clear() noexcept { nodes_.clear(); }

 private:
  bool keeps(const R& row) const noexcept {
    if constexpr (enabled) return nodes_.size() < cap_ && row.width() == width_;
    else return false;
  }
  std::size_t width_;
  std::size_t cap_;
  std::vector<node> nodes_;
};

}  // namespace strata
