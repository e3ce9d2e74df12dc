#pragma once
/// \file The runtime's body, continued (impl/system.ipp): starting a system's shards, workers,
/// coordinator and their threads, and their checkpoints; restarting them for a later run.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include <asio/post.hpp>

#include <strata/core/affinity.hpp>
#include <strata/runtime/checkpoint.hpp>
#include <strata/runtime/impl/system.ipp>

namespace strata::detail {

inline void system_impl::restart() {
  const bool clear = std::exchange(clear_tables_, false);
  if (std::exchange(model_changed_, false))
    for (auto& ws : workers_) on_thread(ws->ctx, [&] { party_access::set_model(*ws->p, mp_); return 0; });
  for (auto& s : servers_) on_shard_thread(*s, [&] { party_access::reset(*s->shard, clear); return 0; });
  for (auto& ws : workers_) on_thread(ws->ctx, [&] { ws->reset(); return 0; });
  if (coord_) on_thread(coord_->ctx, [&] { coord_->reset(); return 0; });
  for (auto& s : servers_) transport_.send(endpoint{s->node, 0}, wm_.shard(0), wire::run_start{s->node, runs_ - 1});
  auto started = [this] {
    bool all = true;
    for (auto& s : servers_) all = all && on_shard_thread(*s, [&] { return party_access::started_run(*s->shard) >= runs_ - 1; });
    return all;
  };
  if (runner_) run_parties_until(started);
  std::unique_lock lk(mu_);
  for (;;) {
    if (error_) break;
    const auto seen = progress_;
    lk.unlock();
    const bool all = started();
    lk.lock();
    if (all || error_) break;
    cv_.wait(lk, [&] { return progress_ != seen || error_; });
  }
  if (error_) {
    failed_ = true;
    lk.unlock();
    abort_transport_on_error();
    stop_threads();
    std::rethrow_exception(error_);
  }
}

inline void system_impl::start() {
  auto send = [this](endpoint src) {
    return [this, src](endpoint dst, wire::message&& m) { transport_.send(src, dst, std::move(m)); };
  };
  for (node_id n = 0; n < wm_.nodes; ++n) {
    if (!transport_.is_local(n)) continue;
    auto s = std::make_unique<server_slot>();
    s->node = n;
    std::vector<std::unique_ptr<server_table_base>> tabs;
    for (auto& f : server_factories_) tabs.push_back(f());
    s->shard = std::make_unique<server_shard>(n, wm_, mp_, std::move(tabs), send(endpoint{n, 0}));
    transport_.bind(endpoint{n, 0}, [this, s = s.get()](endpoint src, wire::message&& m) {
      if (cfg_.local_shard_calls && may_call_shard()) return on_shard(*s, src, std::move(m), true);
      asio::post(s->ctx, [this, s, src, m = std::move(m)]() mutable {
        if (cfg_.huge_page_heap) advise_heap_once();
        on_shard(*s, src, std::move(m));
      });
    });
    servers_.push_back(std::move(s));
    for (std::uint32_t i = 0; i < wm_.per_node; ++i) {
      const worker_id id = n * wm_.per_node + i;
      auto ws = std::make_unique<worker_slot>();
      ws->p = std::make_unique<worker>(id, wm_, mp_, send(wm_.of(id)), cfg_.max_message);
      party_access::set_cache_rows(*ws->p, cfg_.cache_rows);
      for (auto& f : worker_setup_) f(*ws->p);
      bind_party(*ws, wm_.of(id));
      workers_.push_back(std::move(ws));
    }
    if (n == 0) {
      coord_ = std::make_unique<coordinator_slot>();
      coord_->p = std::make_unique<coordinator>(wm_, send(wm_.coordinator()), cfg_.max_message);
      bind_party(*coord_, wm_.coordinator());
    }
  }
  if (checkpointing()) setup_checkpoints();
  transport_.on_fatal([this](std::error_code ec, const std::string& what) {
    record_error(std::make_exception_ptr(error(ec, what)));
    progress();
  });
  transport_.start(run_shape{wm_.nodes, wm_.per_node, signature()});
  if (runner_) {  // the runner runs every party (as an actor of its simulation): no threads
    // Its actors run on this thread: its heap takes huge pages as the worker threads' would.
    if (cfg_.huge_page_heap) advise_heap_once();
    for (auto& s : servers_) runner_->add(endpoint{s->node, 0}, s->ctx);
    for (auto& w : workers_) runner_->add(wm_.of(w->p->id()), w->ctx);
    if (coord_) runner_->add(wm_.coordinator(), coord_->ctx);
    return;
  }
  // Huge-page heaps (system_config::huge_page_heap) for the threads that take memory: every worker
  // thread at its start, a shard thread when it first handles a message itself (with local shard
  // calls and every node in this process it may never: the workers run the shard's code), not the
  // coordinator's. Advising a heap costs a 2 MiB page at once (core/huge_pages.hpp), and on a VM
  // that is milliseconds of a core the workers are starting on.
  const bool huge = cfg_.huge_page_heap;
  for (auto& s : servers_) s->thread = std::thread([c = &s->ctx] { run_ctx(*c, false); });
  const auto spin = std::chrono::microseconds(cfg_.spin_us);
  const std::vector<int> cpus = cfg_.pin_workers ? this_thread_cpus() : std::vector<int>{};
  // More parties than cores: a polling party yields, so that a party with work gets the core.
  const std::size_t cores = std::max<std::size_t>(1, this_thread_cpus().size());
  const bool yield = workers_.size() + (coord_ ? 1 : 0) > cores;
  for (auto& w : workers_) {
    const int cpu = worker_cpu(w->p->id(), workers_.size(), cpus);
    w->thread = std::thread([c = &w->ctx, slot = w.get(), huge, spin, yield, cpu] {
      this_party() = slot;
      if (cpu >= 0) pin_this_thread(cpu);  // a refusal leaves the thread unpinned: only speed is at stake
      run_ctx(*c, huge, true, spin, yield);
    });
  }
  if (coord_)
    coord_->thread = std::thread([c = &coord_->ctx, slot = coord_.get(), spin, yield] {
      this_party() = slot;
      run_ctx(*c, false, true, spin, yield);
    });
}

/// Before the first run's threads start: every local shard and worker writes checkpoints, and
/// starts from the newest complete one in `resume` (each process checks every file, so all
/// processes of a run pick the same checkpoint from a shared folder). Each local node locks the
/// folder it writes (ckpt::folder_lock, held while the system lives), and a folder whose newest
/// checkpoint is another run's is refused.
inline void system_impl::setup_checkpoints() {
  const auto& cc = cfg_.checkpoint;
  const auto sig = checkpoint_signature();
  if (!cc.resume.empty()) (void)resumed();  // a resume folder without a checkpoint of this run is named first
  if (cc.every > 0) {
    if (cc.dir.empty()) throw error(errc::bad_input, "checkpoint.every is set but checkpoint.dir is empty");
    std::filesystem::create_directories(cc.dir);
    for (auto& s : servers_) ckpt_locks_.push_back(std::make_unique<ckpt::folder_lock>(cc.dir, s->node));
    ckpt::check_folder_run(cc.dir, sig);
    for (auto& s : servers_) party_access::enable_checkpoints(*s->shard, std::filesystem::path(cc.dir), cc.every, sig, cc.keep);
    for (auto& ws : workers_) party_access::enable_checkpoints(*ws->p, cc.dir, cc.every, sig);
  } else if (cc.every < 0) {
    throw error(errc::bad_input, "checkpoint.every must be >= 0");
  }
  if (cc.resume.empty()) return;
  const clock_type m = resumed()->clock;
  for (auto& s : servers_) {
    const auto f = ckpt::shard_file(cc.resume, m, s->node);
    party_access::restore(*s->shard, m, ckpt::unseal(f, ckpt::kind::shard, s->node, m, sig), f.string());
  }
  for (auto& ws : workers_) {
    const auto id = ws->p->id();
    const auto body = ckpt::unseal(ckpt::worker_file(cc.resume, m, id), ckpt::kind::worker, id, m, sig);
    party_access::resume_at(*ws->p, m, std::string(reinterpret_cast<const char*>(body.data()), body.size()));
  }
}

}  // namespace strata::detail
