#pragma once
/// \file A server shard: applies flushed increments, tracks every worker's clock, parks reads until
/// rows are fresh enough, and pushes rows to subscribers (ESSP at clock advances, VAP/async at once).
#include <algorithm>
#include <compare>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../core/bytes.hpp"
#include "../core/error.hpp"
#include "../table/server_table.hpp"
#include "../wire/messages.hpp"
#include "checkpoint.hpp"
#include "params.hpp"

namespace strata {

/// One process's server shard. Not thread-safe: the runtime calls it from one thread.
class server_shard {
 public:
  /// A finished worker's clock (so the minimum clock is over the workers still running).
  static constexpr clock_type finished = finished_clock;

  server_shard(node_id me, worker_map wm, model_params mp, std::vector<std::unique_ptr<server_table_base>> tables,
               send_fn send)
      : me_(me), wm_(wm), mp_(mp), tables_(std::move(tables)), send_(std::move(send)),
        clock_(wm.workers(), 0), folded_seq_(wm.workers(), 0), has_subs_(wm.workers(), false),
        newest_(wm.workers(), no_clock), done_tag_(wm.workers(), 0) {}

  void on_message(endpoint src, wire::message&& m) {
    std::visit([&](auto& x) { handle(src, x); }, m);
  }

  clock_type min_clock() const noexcept { return min_; }
  /// Per worker, the newest clock tag of its flushes whose increments this shard's rows hold
  /// (`no_clock` before the first): what rows replied and pushed carry as `wire::rows::writers`,
  /// except for a worker that is `complete`.
  const std::vector<clock_type>& newest_applied() const noexcept { return newest_; }
  /// Whether worker q has finished and this shard's rows hold every update it made (its last
  /// flush applied; under exact snapshots, folded): rows sent from then on carry `finished_clock`
  /// as its writer clock, so readers leave it out of their per-writer staleness (it can write
  /// nothing more that they could miss).
  bool complete(worker_id q) const noexcept { return clock_[q] == finished && newest_[q] >= done_tag_[q]; }
  server_table_base& table(table_id t) { return *tables_.at(t); }
  std::size_t num_tables() const noexcept { return tables_.size(); }

 private:
  /// A row changed since its last push, and by whom (`many_writers`: more than one, or not known).
  struct changed_row {
    table_id table;
    row_id row;
    worker_id by;
    auto operator<=>(const changed_row&) const = default;
  };
  static constexpr worker_id many_writers = std::numeric_limits<worker_id>::max();

  void handle(endpoint, wire::flush& f) {
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

  /// Walks a flush's payload and throws `bad_frame` naming worker, table and row at the first row
  /// that does not decode (wrong table, truncated, column out of range), or at trailing bytes.
  void check_payload(const wire::flush& f) const {
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

  void handle(endpoint, wire::row_request& q) {
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

  void handle(endpoint, wire::rows&) { throw error(errc::bad_frame, "server shard got a rows message"); }
  void handle(endpoint src, wire::app&) {
    throw error(errc::bad_frame, "server shard " + std::to_string(me_) + " got an app message from " + wm_.who(src).describe() +
                                     " (app messages go to workers or the coordinator)");
  }
  void handle(endpoint, wire::gathered&) { throw error(errc::bad_frame, "server shard got a collective result"); }

  /// Shard 0: one more shard has written checkpoint `clock`; when every shard has, it is complete.
  void handle(endpoint, wire::checkpoint_done& d) {
    if (me_ != 0 || ckpt_every_ == 0) throw error(errc::bad_frame, "checkpoint notice sent to a shard that does not record checkpoints");
    if (d.node >= wm_.nodes) throw error(errc::bad_frame, "checkpoint notice from unknown node " + std::to_string(d.node));
    checkpoint_written(d.clock);
  }

  /// Shard 0 collects every worker's part of each collective round, then sends them all to every worker.
  void handle(endpoint, wire::gather& g) {
    if (me_ != 0) throw error(errc::bad_frame, "collective sent to shard " + std::to_string(me_) + ", not shard 0");
    if (g.from >= wm_.workers()) throw error(errc::bad_frame, "collective from unknown worker " + std::to_string(g.from));
    if (clock_[g.from] == finished)
      throw error(errc::bad_frame, "collective from worker " + std::to_string(g.from) + " after it finished");
    auto& c = collectives_[g.round];
    if (c.parts.empty()) c.parts.resize(wm_.workers()), c.have.assign(wm_.workers(), false);
    if (c.have[g.from]) throw error(errc::bad_frame, "worker " + std::to_string(g.from) + " joined collective round " + std::to_string(g.round) + " twice");
    c.have[g.from] = true;
    c.parts[g.from] = std::move(g.payload);
    for (worker_id w = 0; w < wm_.workers(); ++w)
      if (clock_[w] == finished && !c.have[w])
        throw error(errc::bad_input, "collective round " + std::to_string(g.round) + " waits for worker " + std::to_string(w) +
                                         ", which has finished (every worker must call the same collectives in the same order)");
    if (++c.count < wm_.workers()) return;
    wire::gathered out;
    out.round = g.round;
    out.parts = std::move(c.parts);
    collectives_.erase(g.round);
    for (worker_id w = 0; w < wm_.workers(); ++w) {
      wire::gathered copy;
      copy.round = out.round;
      copy.parts = out.parts;
      send_(wm_.of(w), std::move(copy));
    }
  }

  /// Start barrier of a repeated run: shard 0 counts ready nodes, then tells every shard.
  void handle(endpoint, wire::run_start& r) {
    if (me_ == 0 && r.node != starter_) {
      if (++start_count_[r.run] < wm_.nodes) return;
      start_count_.erase(r.run);
      for (node_id n = 0; n < wm_.nodes; ++n) send_(wm_.shard(n), wire::run_start{starter_, r.run});
      return;
    }
    started_run_ = std::max(started_run_, r.run);  // from shard 0: everybody is ready
  }

 public:
  /// Node id that shard 0 puts in its "go" messages (never a real node).
  static constexpr node_id starter_ = 0xffffffffu;
  /// The highest run number shard 0 has declared started (see system::run).
  std::uint64_t started_run() const noexcept { return started_run_; }
  /// Runs completed: incremented when every worker has finished.
  std::uint64_t runs_finished() const noexcept { return runs_finished_; }
  /// Shard 0: every checkpoint some shard has written is complete (in the manifest). A run is over
  /// only then: the other shards' notices may still be queued when the last worker finishes.
  bool checkpoints_settled() const noexcept { return ckpt_count_.empty(); }

  /// Writes a checkpoint into `dir` each time every worker has passed a multiple of `every` clocks:
  /// the tables holding exactly the updates of clocks below it. Models that apply updates at once
  /// (SSP, ESSP, VAP, async) keep a second copy of the tables for it, fed by clock (twice the memory
  /// and the apply work); BSP's tables are that copy already.
  /// Shard 0 keeps the newest `keep` complete checkpoints (0: all).
  void enable_checkpoints(std::filesystem::path dir, clock_type every, ckpt::digest sig, std::uint32_t keep = 0) {
    if (every <= 0) throw error(errc::bad_input, "checkpoint interval must be >= 1 clock");
    ckpt_dir_ = std::move(dir);
    ckpt_every_ = every;
    ckpt_keep_ = keep;
    ckpt_sig_ = sig;
    if (!mp_.exact && shadow_.empty())
      for (auto& t : tables_) shadow_.push_back(t->make_empty());
  }
  /// Before the first run: the tables of checkpoint `body` (at clock m), every worker at clock m.
  void restore(clock_type m, std::span<const std::byte> body, const std::string& what) {
    ckpt::decode_tables(body, tables_, what);
    if (!shadow_.empty()) ckpt::decode_tables(body, shadow_, what);
    std::fill(clock_.begin(), clock_.end(), m);
    std::fill(newest_.begin(), newest_.end(), m - 1);  // the rows hold every worker's updates through m - 1
    min_ = m;
    ckpt_last_ = m;
  }

  /// Makes the shard new for another run: every worker back at clock 0, nothing parked or pending,
  /// no subscriptions; the tables' rows are kept unless `clear_tables`. The start barrier's state
  /// is kept (another node may already be waiting in it).
  void reset(bool clear_tables) {
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

 private:

  /// The writer clocks that go with rows encoded now: newest_applied, and `finished_clock` for a
  /// complete writer (empty when every one is at `reflects`).
  std::vector<clock_type> writers(clock_type reflects) const {
    const std::size_t P = newest_.size();
    auto at = [&](std::size_t q) { return complete(static_cast<worker_id>(q)) ? finished_clock : newest_[q]; };
    std::size_t q = 0;
    while (q < P && at(q) == reflects) ++q;
    if (q == P) return {};
    std::vector<clock_type> out(P);
    for (q = 0; q < P; ++q) out[q] = at(q);
    return out;
  }

  /// A reply to worker `w` being filled: rows as the shard holds them now, in messages of about
  /// `reply_bytes` of payload at most (a batched request or the parked reads of a barrier go out
  /// as one message, a whole-table read as a few).
  struct reply_to {
    static constexpr std::size_t reply_bytes = std::size_t{4} << 20;
    server_shard& s;
    worker_id w;
    wire::rows out{};
    /// Adds row r of table t; `more`: how many rows are still to come (to reserve room once).
    void add(table_id t, row_id r, std::size_t more) {
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
    void send() {
      if (out.count > 0) s.send_(s.wm_.of(w), std::exchange(out, wire::rows{}));
    }
  };

  /// Answers the parked reads that the minimum clock now allows: one reply per worker.
  void serve_parked() {
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

  /// The minimum clock moved up: fold held updates (exact snapshots), acknowledge them, push changed
  /// rows to subscribers with the new clock (ESSP), and serve the reads that can now be served.
  void advance() {
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

  /// Every checkpoint clock m the minimum clock has reached since the last one: fold the updates of
  /// clocks < m (exact tables, or the shadow copy), write them, tell shard 0.
  void write_checkpoints(std::vector<changed_row>& changed) {
    auto& tabs = shadow_.empty() ? tables_ : shadow_;
    std::vector<row_id> rows;
    for (clock_type m = (ckpt_last_ / ckpt_every_ + 1) * ckpt_every_; m <= min_; m += ckpt_every_) {
      for (table_id t = 0; t < tabs.size(); ++t) {
        rows.clear();
        tabs[t]->fold(m, rows);
        if (shadow_.empty())
          for (auto r : rows) changed.push_back({t, r, many_writers});
      }
      const auto body = ckpt::encode_tables(tabs);
      ckpt::write_atomic(ckpt::shard_file(ckpt_dir_, m, me_), ckpt::seal(ckpt::kind::shard, me_, m, ckpt_sig_, body));
      ckpt_last_ = m;
      if (me_ == 0) checkpoint_written(m);
      else send_(wm_.shard(0), wire::checkpoint_done{me_, m});
    }
    if (!shadow_.empty()) {  // keep the held updates few: fold what every worker has passed
      for (auto& t : shadow_) {
        rows.clear();
        t->fold(min_, rows);
      }
    }
  }
  /// Shard 0: a shard wrote checkpoint m. Every worker wrote its own state before the flush that
  /// let the minimum clock reach m, so when every shard has written, checkpoint m is complete.
  void checkpoint_written(clock_type m) {
    if (++ckpt_count_[m] < wm_.nodes) return;
    ckpt_count_.erase(m);
    ckpt::add_to_manifest(ckpt_dir_, m, ckpt_keep_);
  }

  /// Applied-at-once models: send `from` its acknowledgement and each subscriber the rows it holds.
  void push_rows(std::vector<std::pair<table_id, row_id>>& touched, worker_id from) {
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

  node_id me_;
  worker_map wm_;
  model_params mp_;
  std::vector<std::unique_ptr<server_table_base>> tables_;
  send_fn send_;
  std::vector<clock_type> clock_;
  clock_type min_ = 0;
  std::vector<std::uint64_t> folded_seq_;
  std::vector<bool> has_subs_;
  std::vector<clock_type> newest_;    // per worker: newest flush tag applied to the rows
  std::vector<clock_type> done_tag_;  // per finished worker: the tag of its last ("done") flush
  /// Exact models: a flush's sequence number, acknowledged when the minimum clock passes its tag.
  struct held_seq {
    clock_type tag;
    worker_id from;
    std::uint64_t seq;
  };
  std::vector<held_seq> pending_seq_;
  std::vector<wire::row_request> parked_;
  // Scratch kept between messages so that a warm round allocates nothing for them.
  std::vector<std::pair<table_id, row_id>> touched_;
  std::vector<changed_row> changed_;
  std::vector<bool> acked_;
  std::vector<row_id> fold_rows_;
  std::vector<wire::row_request> still_parked_;
  std::vector<std::optional<reply_to>> replies_;
  std::vector<changed_row> dirty_;     // applied since the last push (ESSP, applied at once)
  std::vector<changed_row> unpushed_;  // changed, waiting for an advance that pushes
  struct collective {
    std::vector<wire::blob> parts;
    std::vector<bool> have;
    std::uint32_t count = 0;
  };
  std::map<std::uint64_t, collective> collectives_;  // shard 0: open collective rounds
  std::map<std::uint64_t, std::uint32_t> start_count_;  // shard 0: nodes ready, per run
  std::uint64_t started_run_ = 0, runs_finished_ = 0;
  std::filesystem::path ckpt_dir_;
  clock_type ckpt_every_ = 0, ckpt_last_ = 0;
  std::uint32_t ckpt_keep_ = 0;
  ckpt::digest ckpt_sig_{};
  std::vector<std::unique_ptr<server_table_base>> shadow_;  // checkpoints of applied-at-once models
  std::map<clock_type, std::uint32_t> ckpt_count_;           // shard 0: shards that wrote each checkpoint
};

}  // namespace strata
