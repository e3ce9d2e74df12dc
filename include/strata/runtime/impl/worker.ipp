#pragma once
/// \file The worker's members that are compiled once in the compiled mode (core/config.hpp):
/// included by worker.hpp in the header-only mode, by the runtime library (src/system.cpp) otherwise.
#include <algorithm>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <strata/core/bytes.hpp>
#include <strata/runtime/checkpoint.hpp>
#include <strata/runtime/worker.hpp>

namespace strata {

STRATA_DECL void worker::write_checkpoint(clock_type m) {
  const std::string state = save_state_ ? save_state_() : std::string();
  const auto body = std::as_bytes(std::span(state.data(), state.size()));
  ckpt::write_atomic(ckpt::worker_file(ckpt_dir_, m, id_), ckpt::seal(ckpt::kind::worker, id_, m, ckpt_sig_, body));
}

STRATA_DECL const worker_stats& worker::stats() const {
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

STRATA_DECL void worker::spawn(task<> t) {
  auto owned = std::make_unique<task<>>(std::move(t));
  auto* p = owned.get();
  spawned_.push_back(std::move(owned));
  ++live_;
  p->start([this](std::exception_ptr e) {
    if (e && !spawn_error_) spawn_error_ = e;
    if (--live_ == 0 && deferred_finish_) std::exchange(deferred_finish_, {})();
  });
}

STRATA_DECL void worker::on_message(endpoint src, wire::message&& m) {
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

STRATA_DECL void worker::finish(std::function<void()> done) {
  if (live_ > 0) {
    deferred_finish_ = [this, done = std::move(done)]() mutable { finish(std::move(done)); };
    return;
  }
  flush(true, true);
  finish_done_ = std::move(done);
  if (all_acked()) return std::exchange(finish_done_, {})();
  finish_started_ = clock_now();
}

STRATA_DECL void worker::reset() {
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

STRATA_DECL std::uint32_t worker::view_of(node_id s, const wire::rows& m) {
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

STRATA_DECL void worker::settle_reads() const {
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

STRATA_DECL void worker::compact_views() {
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

STRATA_DECL void worker::clear_views() {
  live_views_ = 0;
  touched_.clear();
  view_reads_.assign(1, 0);
  view_clocks_.assign(wm_.workers(), no_clock);
  last_view_.assign(wm_.nodes, 0);
  push_view_.assign(wm_.nodes, 0);
}

STRATA_DECL void worker::flush(bool advance_clock, bool done) {
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

STRATA_DECL void worker::after_wake() {
  // A coroutine still waits in inc: what others added meanwhile must be on its way, or no
  // acknowledgement would ever wake it.
  if (inc_waiters_ > 0 && unacked_incs_ > 0 && all_acked()) flush(false);
  if (finish_done_ && all_acked()) {
    add_wait(clock_now() - finish_started_);
    std::exchange(finish_done_, {})();
  }
}

}  // namespace strata
