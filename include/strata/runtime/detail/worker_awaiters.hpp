#pragma once
/// \file The awaitables of `worker`'s get, inc and collectives (declared in the class, defined
/// here so that runtime/worker.hpp reads as the worker's interface). Included by worker.hpp.
#include <algorithm>
#include <cmath>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <strata/runtime/task.hpp>
#include <strata/runtime/worker.hpp>
#include <strata/wire/messages.hpp>

namespace strata {

template <row_type R>
class [[nodiscard]] worker::get_awaiter {
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

template <class Apply>
class [[nodiscard]] worker::inc_awaiter {
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

template <class T>
class [[nodiscard]] worker::gather_awaiter {
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

// After gather_awaiter: a barrier is an all_gather of nothing.
inline task<> worker::barrier() {
  if (!mp_.exact) {
    flush(false);
    if (!all_acked()) co_await until([this] { return all_acked(); });
  }
  (void)co_await all_gather(std::uint8_t{0});
  drop_cached_rows();
}

}  // namespace strata
