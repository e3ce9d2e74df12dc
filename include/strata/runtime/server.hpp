#pragma once
/// \file A server shard, one per process: the rows of its part of every table, every worker's clock,
/// and, on shard 0, the run's coordination. Its roles, each defined in its own file:
///   - table service (runtime/detail/shard_tables.hpp): applies flushed increments, parks reads
///     until rows are fresh enough, pushes rows to subscribers (ESSP at clock advances, VAP/async
///     at once);
///   - collectives and the start barrier of a run (runtime/detail/shard_collectives.hpp, shard 0);
///   - checkpoints (runtime/detail/shard_checkpoints.hpp).
/// Only the runtime drives a shard (messages, run start and end, checkpoint setup), through
/// detail::party_access; what anyone may ask of it is its public face below.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <strata/core/error.hpp>
#include <strata/core/ids.hpp>
#include <strata/runtime/checkpoint_types.hpp>
#include <strata/runtime/params.hpp>
#include <strata/table/server_table.hpp>
#include <strata/wire/messages.hpp>

namespace strata {

namespace detail {
struct party_access;
}

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

  /// The minimum over the workers' clocks (`finished` once every worker has finished).
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
  /// This shard's part of table t.
  server_table_base& table(table_id t) { return *tables_.at(t); }
  std::size_t num_tables() const noexcept { return tables_.size(); }

 private:
  // ---- runtime side (reached through detail::party_access) ---------------------------------
  friend struct detail::party_access;

  /// Handles a message sent to this shard (from a worker, the coordinator or another shard).
  void on_message(endpoint src, wire::message&& m) {
    std::visit([&](auto& x) { handle(src, x); }, m);
  }
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
  void enable_checkpoints(std::filesystem::path dir, clock_type every, ckpt::digest sig, std::uint32_t keep = 0);
  /// Before the first run: the tables of checkpoint `body` (at clock m), every worker at clock m.
  void restore(clock_type m, std::span<const std::byte> body, const std::string& what);

  /// Makes the shard new for another run: every worker back at clock 0, nothing parked or pending,
  /// no subscriptions; the tables' rows are kept unless `clear_tables`. The start barrier's state
  /// is kept (another node may already be waiting in it).
  void reset(bool clear_tables);

  // ---- table service (runtime/detail/shard_tables.hpp) ---------------------------------------
  /// A row changed since its last push, and by whom (`many_writers`: more than one, or not known).
  struct changed_row {
    table_id table;
    row_id row;
    worker_id by;
    auto operator<=>(const changed_row&) const = default;
  };
  static constexpr worker_id many_writers = std::numeric_limits<worker_id>::max();

  /// Applies a flush (held by clock under exact snapshots), acknowledges it, pushes or folds.
  void handle(endpoint, wire::flush& f);
  /// Walks a flush's payload and throws `bad_frame` naming worker, table and row at the first row
  /// that does not decode (wrong table, truncated, column out of range), or at trailing bytes.
  void check_payload(const wire::flush& f) const;
  /// Answers a row request now, or parks it until the minimum clock allows it.
  void handle(endpoint, wire::row_request& q);
  void handle(endpoint, wire::rows&) { throw error(errc::bad_frame, "server shard got a rows message"); }
  void handle(endpoint src, wire::app&) {
    throw error(errc::bad_frame, "server shard " + std::to_string(me_) + " got an app message from " + wm_.who(src).describe() +
                                     " (app messages go to workers or the coordinator)");
  }
  void handle(endpoint, wire::gathered&) { throw error(errc::bad_frame, "server shard got a collective result"); }

  /// The writer clocks that go with rows encoded now: newest_applied, and `finished_clock` for a
  /// complete writer (empty when every one is at `reflects`).
  std::vector<clock_type> writers(clock_type reflects) const;

  /// A reply to worker `w` being filled: rows as the shard holds them now, in messages of about
  /// `reply_bytes` of payload at most (a batched request or the parked reads of a barrier go out
  /// as one message, a whole-table read as a few).
  struct reply_to {
    static constexpr std::size_t reply_bytes = std::size_t{4} << 20;
    server_shard& s;
    worker_id w;
    wire::rows out{};
    /// Adds row r of table t; `more`: how many rows are still to come (to reserve room once).
    void add(table_id t, row_id r, std::size_t more);
    void send();
  };

  /// Answers the parked reads that the minimum clock now allows: one reply per worker.
  void serve_parked();

  /// The minimum clock moved up: fold held updates (exact snapshots), acknowledge them, push changed
  /// rows to subscribers with the new clock (ESSP), and serve the reads that can now be served.
  void advance();

  /// Applied-at-once models: send `from` its acknowledgement and each subscriber the rows it holds.
  void push_rows(std::vector<std::pair<table_id, row_id>>& touched, worker_id from);

  // ---- collectives and the start barrier, shard 0 (runtime/detail/shard_collectives.hpp) ------
  /// Shard 0 collects every worker's part of each collective round, then sends them all to every worker.
  void handle(endpoint, wire::gather& g);
  /// Start barrier of a repeated run: shard 0 counts ready nodes, then tells every shard.
  void handle(endpoint, wire::run_start& r);
  /// Node id that shard 0 puts in its "go" messages (never a real node).
  static constexpr node_id starter_ = 0xffffffffu;

  // ---- checkpoints (runtime/detail/shard_checkpoints.hpp) ------------------------------------
  /// Shard 0: one more shard has written checkpoint `clock`; when every shard has, it is complete.
  void handle(endpoint, wire::checkpoint_done& d);
  /// Every checkpoint clock m the minimum clock has reached since the last one: fold the updates of
  /// clocks < m (exact tables, or the shadow copy), write them, tell shard 0.
  void write_checkpoints(std::vector<changed_row>& changed);
  /// Shard 0: a shard wrote checkpoint m. Every worker wrote its own state before the flush that
  /// let the minimum clock reach m, so when every shard has written, checkpoint m is complete.
  void checkpoint_written(clock_type m);

  node_id me_;
  worker_map wm_;
  model_params mp_;
  std::vector<std::unique_ptr<server_table_base>> tables_;
  send_fn send_;
  // table service
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
  // collectives and the start barrier (shard 0)
  struct collective {
    std::vector<wire::blob> parts;
    std::vector<bool> have;
    std::uint32_t count = 0;
  };
  std::map<std::uint64_t, collective> collectives_;  // shard 0: open collective rounds
  std::map<std::uint64_t, std::uint32_t> start_count_;  // shard 0: nodes ready, per run
  std::uint64_t started_run_ = 0, runs_finished_ = 0;
  // checkpoints
  std::filesystem::path ckpt_dir_;
  clock_type ckpt_every_ = 0, ckpt_last_ = 0;
  std::uint32_t ckpt_keep_ = 0;
  ckpt::digest ckpt_sig_{};
  std::vector<std::unique_ptr<server_table_base>> shadow_;  // checkpoints of applied-at-once models
  std::map<clock_type, std::uint32_t> ckpt_count_;           // shard 0: shards that wrote each checkpoint
};

}  // namespace strata

#include <strata/runtime/detail/shard_checkpoints.hpp>
#include <strata/runtime/detail/shard_collectives.hpp>
#include <strata/runtime/detail/shard_tables.hpp>
