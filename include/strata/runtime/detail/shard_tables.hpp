#pragma once
/// \file server_shard's table service (runtime/server.hpp): applying flushes, acknowledging them, answering
/// and parking reads, folding at each advance of the minimum clock, pushing rows to subscribers.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>
#include <strata/runtime/server.hpp>
#include <strata/wire/messages.hpp>

namespace strata {

inline void server_shard::handle(endpoint, wire::flush& f) {
  if (f.from >= wm_.workers()) throw error(errc::bad_frame, "flush from unknown worker " + std::to_string(f.from));
  check_payload(f);  // a bad row anywhere rejects the whole flush before any of it is applied
  byte_reader in(f.payload.bytes);
  auto& touched = touched_;
  touched.clear();
  for (std::uint32_t i = 0; i < f.count; ++i) {
    const auto t = in.get<table_id>();
    const auto r = in.get<row_id>();
    if (t >= tables_.size()) throw error(errc::bad_frame, "flush names unknown table " + std::to_string(t));
    tables_[t]->apply(r, in, f.tag, f.from, !mp_.exact);
    if (!mp_.exact) touched.emplace_back(t, r);
  }
  if (!shadow_.empty()) {  // checkpoints of a model that applies at once: the same updates, held by clock
    byte_reader again(f.payload.bytes);
    for (std::uint32_t i = 0; i < f.count; ++i) {
      const auto t = again.get<table_id>();
      const auto r = again.get<row_id>();
      shadow_[t]->apply(r, again, f.tag, f.from, false);
    }
  }
  if (mp_.exact) pending_seq_.push_back({f.tag, f.from, f.seq});
  else folded_seq_[f.from] = f.seq, newest_[f.from] = std::max(newest_[f.from], f.tag);
  clock_[f.from] = f.done ? finished : std::max(clock_[f.from], f.new_clock);
  if (f.done) done_tag_[f.from] = f.tag;  // complete once the rows hold this flush (newest_ reaches it)
  if (f.done)
    for (const auto& [round, c] : collectives_)
      if (!c.have[f.from])
        throw error(errc::bad_input, "worker " + std::to_string(f.from) + " finished without joining collective round " +
                                         std::to_string(round) + " that other workers wait in (every worker must call "
                                         "the same collectives in the same order)");
  const clock_type before = min_;
  min_ = *std::min_element(clock_.begin(), clock_.end());
  if (min_ == finished && before != finished) ++runs_finished_;

  if (!mp_.exact) {
    // Applied at once: acknowledge to the sender; push now (VAP, async) or at the next advance (ESSP).
    if (mp_.push == push_mode::on_min_clock) {
      for (auto [t, r] : touched) dirty_.push_back({t, r, f.from});
      touched.clear();
    }
    push_rows(touched, f.from);
  }
  if (min_ > before) advance();
}

inline void server_shard::check_payload(const wire::flush& f) const {
  byte_reader in(f.payload.bytes);
  for (std::uint32_t i = 0; i < f.count; ++i) {
    const auto t = in.get<table_id>();
    const auto r = in.get<row_id>();
    if (t >= tables_.size()) throw error(errc::bad_frame, "flush from worker " + std::to_string(f.from) + " names unknown table " + std::to_string(t));
    try {
      tables_[t]->check(in);
    } catch (const error& e) {
      throw error(errc::bad_frame, "flush from worker " + std::to_string(f.from) + ", table " + std::to_string(t) +
                                       ", row " + std::to_string(r) + " rejected, nothing applied: " + e.what());
    }
  }
  if (!in.done()) throw error(errc::bad_frame, "flush from worker " + std::to_string(f.from) + " has trailing bytes; nothing applied");
}

inline void server_shard::handle(endpoint, wire::row_request& q) {
  if (q.from >= wm_.workers() || q.table >= tables_.size())
    throw error(errc::bad_frame, "row request names unknown worker or table");
  if (q.rows.empty() || q.rows.size() > wire::max_request_rows)
    throw error(errc::bad_frame, "row request from worker " + std::to_string(q.from) + " names " + std::to_string(q.rows.size()) + " rows");
  if (q.subscribe) {
    for (row_id r : q.rows) tables_[q.table]->subscribe(r, q.from);
    has_subs_[q.from] = true;
  }
  if (q.need <= min_ - 1) {
    reply_to out{*this, q.from};
    for (std::size_t i = 0; i < q.rows.size(); ++i) out.add(q.table, q.rows[i], q.rows.size() - 1 - i);
    out.send();
  } else {
    parked_.push_back(std::move(q));
  }
}

inline void server_shard::reset(bool clear_tables) {
  std::fill(clock_.begin(), clock_.end(), 0);
  min_ = 0;
  std::fill(folded_seq_.begin(), folded_seq_.end(), 0);
  std::fill(has_subs_.begin(), has_subs_.end(), false);
  std::fill(newest_.begin(), newest_.end(), no_clock);
  std::fill(done_tag_.begin(), done_tag_.end(), 0);
  pending_seq_.clear();
  parked_.clear();
  dirty_.clear();
  unpushed_.clear();
  collectives_.clear();
  for (auto& t : tables_) t->reset(clear_tables);
}

inline std::vector<clock_type> server_shard::writers(clock_type reflects) const {
  const std::size_t P = newest_.size();
  auto at = [&](std::size_t q) { return complete(static_cast<worker_id>(q)) ? finished_clock : newest_[q]; };
  std::size_t q = 0;
  while (q < P && at(q) == reflects) ++q;
  if (q == P) return {};
  std::vector<clock_type> out(P);
  for (q = 0; q < P; ++q) out[q] = at(q);
  return out;
}

inline void server_shard::reply_to::add(table_id t, row_id r, std::size_t more) {
  if (out.count == 0) {
    out.shard = s.me_;
    out.reflects = s.min_ - 1;
    out.writers = s.writers(out.reflects);
    out.acked_seq = s.folded_seq_[w];
  }
  byte_writer wr(out.payload.bytes);
  wr.put(t);
  wr.put(r);
  s.tables_[t]->encode(r, wr);
  if (++out.count == 1 && more > 0)  // rows of a batch are about this size
    wr.reserve(std::min(wr.size() * more, reply_bytes));
  if (out.payload.bytes.size() >= reply_bytes) send();
}

inline void server_shard::reply_to::send() {
  if (out.count > 0) s.send_(s.wm_.of(w), std::exchange(out, wire::rows{}));
}

inline void server_shard::serve_parked() {
  if (parked_.empty()) return;
  auto& still = still_parked_;
  still.clear();
  replies_.resize(wm_.workers());
  for (auto& q : parked_) {
    if (q.need > min_ - 1) {
      still.push_back(std::move(q));
      continue;
    }
    auto& o = replies_[q.from];
    if (!o) o.emplace(reply_to{*this, q.from});
    for (std::size_t i = 0; i < q.rows.size(); ++i) o->add(q.table, q.rows[i], q.rows.size() - 1 - i);
  }
  parked_.swap(still);
  for (auto& o : replies_)
    if (o) o->send(), o.reset();
}

inline void server_shard::advance() {
  auto& changed = changed_;
  changed.clear();
  auto& acked = acked_;
  acked.assign(wm_.workers(), false);
  if (ckpt_every_ > 0 && min_ != finished) write_checkpoints(changed);
  if (mp_.exact) {
    auto& rows = fold_rows_;
    for (table_id t = 0; t < tables_.size(); ++t) {
      rows.clear();
      tables_[t]->fold(min_, rows);
      for (auto r : rows) changed.push_back({t, r, many_writers});
    }
    std::erase_if(pending_seq_, [&](const held_seq& h) {
      if (h.tag >= min_) return false;
      folded_seq_[h.from] = std::max(folded_seq_[h.from], h.seq);
      newest_[h.from] = std::max(newest_[h.from], h.tag);
      acked[h.from] = true;
      return true;
    });
  } else {
    changed.swap(dirty_);
  }
  // Rows changed since the last push wait for the next advance the policy pushes at.
  const bool eager = mp_.pushes_at(min_);
  if (mp_.push == push_mode::on_min_clock) {
    unpushed_.insert(unpushed_.end(), changed.begin(), changed.end());
    changed.clear();
    if (eager) changed.swap(unpushed_);
  }
  // One entry per row, naming its writer when it had only one since it was last pushed.
  std::sort(changed.begin(), changed.end());
  std::size_t n = 0;
  for (const auto& c : changed) {
    if (n > 0 && changed[n - 1].table == c.table && changed[n - 1].row == c.row) {
      if (changed[n - 1].by != c.by) changed[n - 1].by = many_writers;
    } else {
      changed[n++] = c;
    }
  }
  changed.resize(n);
  // A worker with a parked read served below learns of its acknowledgement from that reply (it
  // carries acked_seq): one message instead of two, the usual case in a BSP round.
  for (const auto& q : parked_)
    if (q.need <= min_ - 1) acked[q.from] = false;
  for (worker_id w = 0; w < wm_.workers(); ++w) {
    const bool subscribed = eager && has_subs_[w] && clock_[w] != finished;
    if (!acked[w] && !subscribed) continue;
    wire::rows out;
    out.shard = me_;
    out.reflects = min_ - 1;
    out.acked_seq = folded_seq_[w];
    out.push = subscribed;
    if (subscribed) {
      out.writers = writers(out.reflects);
      byte_writer wr(out.payload.bytes);
      for (std::size_t k = 0; k < changed.size(); ++k) {
        const auto [t, r, by] = changed[k];
        // A row only w wrote since its last push is already right in w's cache: w added its own
        // increments there when it made them (read-my-writes) to the value it last received, and
        // the shard added the same increments to that value. The push's clock still reaches the
        // row (push_reflects_ is per shard), so it counts as pushed; its bytes are not sent. (With
        // several increments to the row in one clock, the cache's one-by-one sums and the shard's
        // sum of the flush may differ in the last bit until another writer's change is pushed.)
        if (by == w) continue;
        const auto* subs = tables_[t]->subscribers(r);
        if (!subs || std::find(subs->begin(), subs->end(), w) == subs->end()) continue;
        wr.put(t);
        wr.put(r);
        tables_[t]->encode(r, wr);
        if (++out.count == 1) wr.reserve(wr.size() * (changed.size() - k - 1));  // rows are about this size
      }
    }
    send_(wm_.of(w), std::move(out));
  }
  serve_parked();
}

inline void server_shard::push_rows(std::vector<std::pair<table_id, row_id>>& touched, worker_id from) {
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  std::unordered_map<worker_id, wire::rows> out;
  auto msg = [&](worker_id w) -> wire::rows& {
    auto [it, fresh] = out.try_emplace(w);
    if (fresh) {
      it->second.shard = me_;
      it->second.acked_seq = folded_seq_[w];
      it->second.reflects = min_ - 1;
    }
    return it->second;
  };
  msg(from);
  if (mp_.push == push_mode::on_update) {
    for (auto [t, r] : touched) {
      const auto* subs = tables_[t]->subscribers(r);
      if (!subs) continue;
      for (worker_id w : *subs) {
        if (clock_[w] == finished) continue;
        auto& m = msg(w);
        if (m.count == 0) m.writers = writers(m.reflects);
        byte_writer wr(m.payload.bytes);
        wr.put(t);
        wr.put(r);
        tables_[t]->encode(r, wr);
        ++m.count;
      }
    }
  }
  for (auto& [w, m] : out) send_(wm_.of(w), std::move(m));
}

}  // namespace strata
