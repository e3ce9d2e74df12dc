#pragma once
/// \file The runtime's body: system_base's members and the threads, queues and locks behind them
/// (detail::system_impl; starting it: impl/system_start.ipp; the threads' loop: detail/thread_loop.hpp).
/// Included by system.hpp in the header-only mode; compiled once into the runtime library in the
/// compiled mode (src/system.cpp).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include <strata/runtime/checkpoint.hpp>
#include <strata/runtime/detail/party_access.hpp>
#include <strata/runtime/detail/thread_loop.hpp>
#include <strata/runtime/server.hpp>
#include <strata/runtime/system.hpp>

namespace strata {
namespace detail {

/// What a system_base holds: its shards, workers and coordinator, each with a thread and an
/// io_context, and the run's progress and first error.
class system_impl {
 public:
  system_impl(system_config cfg, model_params mp, std::unique_ptr<any_transport> t)
      : cfg_(cfg), wm_{cfg.nodes, cfg.workers_per_node}, mp_(mp), owned_transport_(std::move(t)), transport_(*owned_transport_),
        runner_(transport_.runner()) {
    if (cfg.nodes == 0 || cfg.workers_per_node == 0) throw error(errc::bad_input, "system needs >= 1 node and worker");
    // A runner (sim) runs every party as its own actor: a message to a shard is the shard's to
    // handle, on its own host, never a worker's call under the shard's lock.
    if (runner_) cfg_.local_shard_calls = false;
  }
  system_impl(const system_impl&) = delete;
  system_impl& operator=(const system_impl&) = delete;
  ~system_impl() { stop_threads(); }

  table_id add_table(std::size_t width, std::string row_kind, std::function<std::unique_ptr<server_table_base>()> server,
                     std::function<void(worker&, table_id)> setup) {
    if (runs_ > 0 || resumed_) throw error(errc::bad_input, "add_table after the first run or resumed(): add every table before them");
    const auto id = static_cast<table_id>(tables_.size());
    tables_.push_back({id, width, std::move(row_kind)});
    server_factories_.push_back(std::move(server));
    worker_setup_.push_back([id, setup = std::move(setup)](worker& w) { setup(w, id); });
    return id;
  }

  void run(program_ref<worker> program, program_ref<coordinator> coord) {
    if (failed_) throw error(errc::shutdown, "system::run after a failed run");
    ++runs_;
    if (runs_ == 1) start();
    else if (checkpointing()) throw error(errc::bad_input, "checkpoints and resume cover a system's first run only");
    else restart();
    for (auto& ws : workers_) {
      asio::post(ws->ctx, [this, ws = ws.get(), program] {
        ws->program = std::make_unique<task<>>(program(*ws->p));
        ws->program->start([this, ws](std::exception_ptr e) {
          if (e) record_error(e);
          party_access::finish(*ws->p, [this, ws] {
            if (auto se = party_access::spawn_error(*ws->p)) record_error(se);
            ws->finished = true;
            progress();
          });
        });
      });
    }
    if (coord_) {
      asio::post(coord_->ctx, [this, c = coord_.get(), coord] {
        c->program = std::make_unique<task<>>(coord(*c->p));
        c->program->start([this, c](std::exception_ptr e) {
          if (e) record_error(e);
          c->finished = true;
          progress();
        });
      });
    }
    wait_until_finished();
    if (has_error()) {
      failed_ = true;
      abort_transport_on_error();
      stop_threads();
      std::rethrow_exception(error_);
    }
  }

  /// The next run starts from zero rows instead of keeping this run's tables (every process of
  /// the run must call it).
  void clear_tables() noexcept { clear_tables_ = true; }

  /// Sets the dynamic staleness bound (system_config::staleness) for the next run and the ones after
  /// it: ssp<dynamic_bound> and essp<dynamic_bound> (as `model_params::named` gives them), and tables
  /// whose `staleness_of` is dynamic_bound, read with bound s. Call between runs; every process of
  /// a multi-process run must make the same call. Throws strata::error(bad_input) when s < 0 or
  /// the model has no dynamic bound (bsp, ssp<2>, vap, async: there is nothing to set).
  void set_staleness(int s) {
    if (!mp_.dynamic_staleness && !mp_.table_staleness)
      throw error(errc::bad_input, std::string("set_staleness: the consistency model ") + mp_.name +
                                       " has no dynamic staleness bound (use ssp<dynamic_bound> or essp<dynamic_bound>)");
    mp_ = mp_.with_dynamic_staleness(s);
    cfg_.staleness = s;
    model_changed_ = true;
  }

  bool read_local_row(table_id t, row_id r, const std::function<void(server_table_base&)>& read) {
    if (servers_.empty() || workers_.empty()) throw error(errc::bad_input, "system::row before the first run");
    const node_id n = owner_of(t, r, wm_.nodes);
    for (auto& s : servers_)
      if (s->node == n) {
        on_shard_thread(*s, [&] { read(s->shard->table(t)); return 0; });
        return true;
      }
    if (stopped_) throw error(errc::shutdown, "row " + std::to_string(r) + " is held by another process and the run failed");
    return false;
  }
  void fetch_on_worker(program_ref<worker> fetch) {
    auto* ws = workers_.front().get();
    asio::post(ws->ctx, [this, ws, fetch] {
      fetch_ = std::make_unique<task<>>(fetch(*ws->p));
      fetch_->start([](std::exception_ptr) {});
    });
  }

  /// Statistics of each local worker of the last run (in worker-id order).
  std::vector<worker_stats> stats() {
    std::vector<worker_stats> out;
    for (auto& ws : workers_) out.push_back(on_thread(ws->ctx, [&] { return ws->p->stats(); }));
    return out;
  }
  /// All local workers' statistics merged.
  worker_stats total_stats() {
    worker_stats t;
    for (const auto& st : stats()) t.merge(st);
    return t;
  }
  /// With system_config::checkpoint.resume set: the checkpoint the first run starts from (the clock,
  /// and why each newer checkpoint was refused), found on the first call (add every table before
  /// it); throws when the folder holds no complete checkpoint of this run. nullptr without resume.
  /// A program may call it before `run` to learn where its workers will start.
  const ckpt::resume_point* resumed() {
    if (cfg_.checkpoint.resume.empty()) return nullptr;
    if (!resumed_) resumed_ = ckpt::find_resume(cfg_.checkpoint.resume, wm_.nodes, wm_.workers(), checkpoint_signature());
    return &*resumed_;
  }
  /// The clock the first run's workers start at: the resumed checkpoint's, else 0.
  clock_type start_clock() {
    const auto* r = resumed();
    return r ? r->clock : 0;
  }
  const system_config& config() const noexcept { return cfg_; }
  const model_params& model() const noexcept { return mp_; }
  any_transport& transport() const noexcept { return transport_; }
  /// Tables, model and shape as text; processes of one run must agree on it.
  std::string signature() const {
    std::string s = mp_.describe() + ";nodes=" + std::to_string(wm_.nodes) + ";wpn=" + std::to_string(wm_.per_node);
    for (auto& t : tables_) s += ";t" + std::to_string(t.id) + ":" + t.row_kind + "/" + std::to_string(t.width);
    return s;
  }

 private:
  struct server_slot {
    node_id node;
    asio::io_context ctx{1};  // run by one thread (concurrency hint 1): posts from that thread skip the queue lock
    std::mutex mu;  // held by whichever thread runs the shard's code: its own, or a sender's (local_shard_calls)
    std::unique_ptr<server_shard> shard;
    std::thread thread;
  };
  /// Handles one message on shard `s`, on whatever thread calls it. In a local call (a party's
  /// thread sending to a shard of its process), the shard's messages to that same party are handed
  /// to it once the lock is released, without a trip through its queue (see bind_party).
  void on_shard(server_slot& s, endpoint src, wire::message&& m, bool local_call = false) {
    const bool start_msg = std::holds_alternative<wire::run_start>(m);
    bool finished = false;
    {
      std::unique_lock lk(s.mu, std::defer_lock);
      lock_briefly_yielding(lk);
      const bool outer = std::exchange(may_call_shard(), false);
      if (local_call) inline_target() = this_party();
      guarded([&] { party_access::on_message(*s.shard, src, std::move(m)); });
      inline_target() = nullptr;
      finished = s.shard->min_clock() == server_shard::finished;
      may_call_shard() = outer;
    }
    if (local_call && !inline_stash().empty()) this_party()->drain(*this);
    if (start_msg || finished) progress();
  }

  template <class P>
  struct party_slot;
  /// A party that runs on a thread of its own (party_slot<worker>, party_slot<coordinator>), as the
  /// shard code of its process sees it: what a local shard call addressed to it (inline_stash) is
  /// handed over with.
  struct local_party {
    /// Hands this party the stashed messages, on its own thread (drain_stash).
    virtual void drain(system_impl& sys) = 0;

   protected:
    ~local_party() = default;
  };
  /// The party whose thread this is (null on a thread that runs no party).
  static local_party*& this_party() {
    thread_local local_party* p = nullptr;
    return p;
  }
  /// During a local shard call: the calling party, whose messages from the shard are stashed.
  static local_party*& inline_target() {
    thread_local local_party* p = nullptr;
    return p;
  }
  struct stashed {
    endpoint src;
    wire::message m;
  };
  static std::vector<stashed>& inline_stash() {
    thread_local std::vector<stashed> v;
    return v;
  }
  /// Hands the stashed messages to the party of `slot` on its own thread, in the middle of its turn:
  /// it takes them in at once (a reply's row is in its cache when its `get` looks again, an
  /// acknowledgement counted before `clock` returns) and resumes none of its coroutines there;
  /// one that may wait for them gets a wake on its queue instead. `on_message` must send nothing
  /// here (it does not: wakes are deferred, so no coroutine runs): a local shard call from inside
  /// the loop would add to the stash being drained.
  template <class P>
  static void drain_stash(system_impl& sys, party_slot<P>& ps) {
    auto& st = inline_stash();
    party_access::begin_inline(*ps.p);
    for (auto& x : st) sys.guarded([&] { party_access::on_message(*ps.p, x.src, std::move(x.m)); });
    st.clear();
    if (party_access::end_inline(*ps.p)) post_counted(ps, [&sys, &ps] { sys.guarded([&] { party_access::wake_now(*ps.p); }); });
  }
  /// Runs `f` on shard `s`'s thread under its lock.
  template <class F>
  auto on_shard_thread(server_slot& s, F&& f) -> decltype(f()) {
    return on_thread(s.ctx, [&] {
      std::lock_guard lk(s.mu);
      return f();
    });
  }
  /// A party that runs a program on a thread of its own (a worker, the coordinator).
  template <class P>
  struct party_slot final : local_party {
    asio::io_context ctx{1};  // run by one thread (concurrency hint 1): posts from that thread skip the queue lock
    std::unique_ptr<P> p;
    std::unique_ptr<task<>> program;
    /// Messages and resumptions posted to ctx and not yet run. A shard's message to this party is
    /// handed over inline only when this is 0, so that it cannot overtake an earlier one from the
    /// same shard (those are posted under that shard's lock, which the inline sender holds).
    std::atomic<std::uint32_t> queued{0};
    bool finished = false;  // touched on the party's thread only
    std::thread thread;
    bool done() const { return program && program->done() && finished; }
    /// Between runs, on the party's thread.
    void reset() {
      party_access::reset(*p);
      program.reset();
      finished = false;
    }
    void drain(system_impl& sys) override { drain_stash(sys, *this); }
  };
  using worker_slot = party_slot<worker>;
  using coordinator_slot = party_slot<coordinator>;

  /// Posts `f` to party `ps`'s thread, counted in `ps.queued` until it runs (every post of a
  /// message, resumption or wake to a party goes through here, or a message could be taken in
  /// inline ahead of one still queued).
  template <class P, class F>
  static void post_counted(party_slot<P>& ps, F&& f) {
    ps.queued.fetch_add(1, std::memory_order_relaxed);
    asio::post(ps.ctx, [q = &ps.queued, f = std::forward<F>(f)]() mutable {
      q->fetch_sub(1, std::memory_order_relaxed);
      f();
    });
  }
  /// Makes `slot` reachable at `at`: its coroutines resume on its thread, its messages are
  /// delivered there.
  template <class P>
  void bind_party(party_slot<P>& slot, endpoint at) {
    party_access::set_reschedule(*slot.p, [ps = &slot](std::coroutine_handle<> h) { post_counted(*ps, [h] { h.resume(); }); }, &slot.queued);
    transport_.bind(at, [this, ps = &slot](endpoint src, wire::message&& m) {
      if (inline_target() == ps && ps->queued.load(std::memory_order_relaxed) == 0) {
        inline_stash().push_back({src, std::move(m)});  // a reply to ps's own local shard call
        return;
      }
      post_counted(*ps, [this, ps, src, m = std::move(m)]() mutable { guarded([&] { party_access::on_message(*ps->p, src, std::move(m)); }); });
    });
  }

  /// Runs `f` on the thread of `ctx` and returns its result (that thread owns the state f reads).
  template <class F>
  auto on_thread(asio::io_context& ctx, F&& f) -> decltype(f()) {
    // The threads are gone (a failed run), or there are none (a runner runs the parties, and not now):
    // nothing else touches the state.
    if (stopped_ || runner_) return f();
    using R = decltype(f());
    std::promise<R> p;
    auto fut = p.get_future();
    asio::post(ctx, [&] {
      try {
        p.set_value(f());
      } catch (...) {
        p.set_exception(std::current_exception());
      }
    });
    return fut.get();
  }

  /// A run after the first: reset every local party on its own thread, then wait until shard 0
  /// says every node has done so (so no message of the new run can reach a party still in the old one).
  void restart();  // impl/system_start.ipp

  void start();  // impl/system_start.ipp

  ckpt::digest checkpoint_signature() const { return ckpt::signature_digest(signature() + ";tag=" + cfg_.checkpoint.run_tag); }
  bool checkpointing() const noexcept { return cfg_.checkpoint.every > 0 || !cfg_.checkpoint.resume.empty(); }

  /// Before the first run's threads start: every local shard and worker writes checkpoints, and
  /// starts from the newest complete one in `resume` (each process checks every file, so all
  /// processes of a run pick the same checkpoint from a shared folder). Each local node locks the
  /// folder it writes (ckpt::folder_lock, held while the system lives), and a folder whose newest
  /// checkpoint is another run's is refused.
  void setup_checkpoints();  // impl/system_start.ipp

  /// When the run failed, tells a transport that can (`tcp::abort`) so that the other processes stop
  /// at once instead of waiting for this one's shutdown barrier. Transports without `abort` are untouched.
  bool has_error() {
    std::lock_guard lk(mu_);
    return error_ != nullptr;
  }
  void abort_transport_on_error() {
    {
      std::exception_ptr e;
      {
        std::lock_guard lk(mu_);
        e = error_;
      }
      if (!e) return;
      std::string what = "unknown error";
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        what = x.what();
      } catch (...) {
      }
      transport_.abort(what);
    }
  }


  template <class F>
  void guarded(F&& f) {
    try {
      f();
    } catch (...) {
      record_error(std::current_exception());
      progress();
    }
  }

  void record_error(std::exception_ptr e) {
    std::lock_guard lk(mu_);
    if (!error_) error_ = e;
  }
  void progress() {
    std::lock_guard lk(mu_);
    ++progress_;
    cv_.notify_all();
    if (runner_) runner_->poke();
  }
  /// Waits until every local party has finished the run (or one failed). With a runner: runs the
  /// parties until then.
  void wait_until_finished() {
    if (runner_) return run_parties_until([this] { return all_finished(); });
    std::unique_lock lk(mu_);
    for (;;) {
      if (error_) return;
      const auto seen = progress_;
      lk.unlock();
      // Read the workers' and shards' state on their own threads, so no state is shared unsynchronised.
      const bool done = all_on_threads();
      lk.lock();
      if (done || error_) return;
      cv_.wait(lk, [&] { return progress_ != seen || error_; });
    }
  }
  /// With a runner: runs the parties until `ready()` holds or one failed; a run that cannot go on
  /// (every party waits) is this run's error.
  template <class F>
  void run_parties_until(F&& ready) {
    try {
      runner_->run_until([&] { return has_error() || ready(); });
    } catch (...) {
      record_error(std::current_exception());
    }
  }
  /// Whether every local party has finished the run: read on the calling thread (a runner's parties
  /// are not running, or this is one of their handlers).
  bool all_finished() {
    for (auto& ws : workers_)
      if (!ws->done()) return false;
    for (auto& s : servers_)
      if (!shard_finished(*s)) return false;
    return !coord_ || coord_->done();
  }
  /// Whether shard `s` has finished the run and settled its checkpoints (under its lock, or with no
  /// other thread running).
  bool shard_finished(server_slot& s) {
    return party_access::runs_finished(*s.shard) >= runs_ && party_access::checkpoints_settled(*s.shard);
  }
  bool all_on_threads() {
    const int parties = static_cast<int>(workers_.size() + servers_.size() + (coord_ ? 1 : 0));
    int ok = 0, pending = parties;  // under m: the waiter may return (and m, cv go) once pending is 0
    std::mutex m;
    std::condition_variable cv;
    auto note = [&](bool good) {
      std::lock_guard l(m);
      if (good) ++ok;
      if (--pending == 0) cv.notify_all();
    };
    for (auto& ws : workers_)
      asio::post(ws->ctx, [&, ws = ws.get()] { note(ws->done()); });
    for (auto& s : servers_)
      asio::post(s->ctx, [&, s = s.get()] {
        std::unique_lock lk(s->mu);
        const bool good = shard_finished(*s);
        lk.unlock();
        note(good);
      });
    if (coord_) asio::post(coord_->ctx, [&, c = coord_.get()] { note(c->done()); });
    std::unique_lock l(m);
    cv.wait(l, [&] { return pending == 0; });
    return ok == parties;
  }

  void stop_threads() {
    stopped_ = true;
    transport_.stop();
    for (auto& s : servers_) s->ctx.stop();
    for (auto& w : workers_) w->ctx.stop();
    if (coord_) coord_->ctx.stop();
    for (auto& s : servers_)
      if (s->thread.joinable()) s->thread.join();
    for (auto& w : workers_)
      if (w->thread.joinable()) w->thread.join();
    if (coord_ && coord_->thread.joinable()) coord_->thread.join();
  }

  system_config cfg_;
  worker_map wm_;
  model_params mp_;
  std::unique_ptr<any_transport> owned_transport_;
  any_transport& transport_;
  party_runner* runner_;  // the transport's, when it runs the parties (sim); null: a thread per party
  std::vector<table_info> tables_;
  std::vector<std::function<std::unique_ptr<server_table_base>()>> server_factories_;
  std::vector<std::function<void(worker&)>> worker_setup_;
  std::vector<std::unique_ptr<server_slot>> servers_;
  std::vector<std::unique_ptr<worker_slot>> workers_;
  std::unique_ptr<coordinator_slot> coord_;  // on node 0's process
  std::unique_ptr<task<>> fetch_;            // the last remote row read (system::row)
  std::optional<ckpt::resume_point> resumed_;
  std::vector<std::unique_ptr<ckpt::folder_lock>> ckpt_locks_;  // this process's nodes' claims on checkpoint.dir
  std::uint64_t runs_ = 0;
  bool failed_ = false, clear_tables_ = false, stopped_ = false, model_changed_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t progress_ = 0;
  std::exception_ptr error_;
};

}  // namespace detail

STRATA_DECL system_base::system_base(system_config cfg, model_params mp, std::unique_ptr<any_transport> t)
    : impl_(std::make_unique<detail::system_impl>(cfg, mp, std::move(t))) {}
STRATA_DECL system_base::~system_base() = default;
STRATA_DECL void system_base::run_programs(program_ref<worker> program, program_ref<coordinator> coord) {
  impl_->run(program, coord);
}
STRATA_DECL void system_base::clear_tables() noexcept { impl_->clear_tables(); }
STRATA_DECL void system_base::set_staleness(int s) { impl_->set_staleness(s); }
STRATA_DECL std::vector<worker_stats> system_base::stats() { return impl_->stats(); }
STRATA_DECL worker_stats system_base::total_stats() { return impl_->total_stats(); }
STRATA_DECL const ckpt::resume_point* system_base::resumed() { return impl_->resumed(); }
STRATA_DECL clock_type system_base::start_clock() { return impl_->start_clock(); }
STRATA_DECL const system_config& system_base::config() const noexcept { return impl_->config(); }
STRATA_DECL const model_params& system_base::model() const noexcept { return impl_->model(); }
STRATA_DECL std::string system_base::signature() const { return impl_->signature(); }
STRATA_DECL bool system_base::is_local(node_id n) const { return impl_->transport().is_local(n); }
STRATA_DECL std::uint64_t system_base::bytes_sent() const { return impl_->transport().bytes_sent(); }
STRATA_DECL any_transport& system_base::transport_base() noexcept { return impl_->transport(); }
STRATA_DECL table_id system_base::add_table_erased(std::size_t width, std::string row_kind, server_factory f, worker_setup w) {
  return impl_->add_table(width, std::move(row_kind), std::move(f), std::move(w));
}
STRATA_DECL bool system_base::read_local_row(table_id t, row_id r, const std::function<void(server_table_base&)>& read) {
  return impl_->read_local_row(t, r, read);
}
STRATA_DECL void system_base::fetch_on_worker(row_id, program_ref<worker> fetch) { impl_->fetch_on_worker(fetch); }

}  // namespace strata

#include <strata/runtime/impl/system_start.ipp>
