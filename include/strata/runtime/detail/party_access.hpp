#pragma once
/// \file The runtime's side of a party (worker, coordinator, server shard): registering tables,
/// delivering messages, finishing and resetting runs, checkpoint setup, scheduling on the party's
/// thread. These members are private, so that `worker&`, `coordinator&` and `server_shard&` show
/// only what their users may call; the runtime (and tests of the runtime) reach them through
/// `detail::party_access`.
#include <atomic>
#include <concepts>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <span>
#include <string>
#include <utility>

#include <strata/runtime/checkpoint_types.hpp>
#include <strata/runtime/coordinator.hpp>
#include <strata/runtime/worker.hpp>

namespace strata {
class server_shard;  // runtime/server.hpp
}

namespace strata::detail {

/// Static forwarders to the parties' runtime-side members (each documented where it is defined).
struct party_access {
  // ---- any party (actor) ---------------------------------------------------------------------
  static void set_reschedule(actor& a, std::function<void(std::coroutine_handle<>)> f,
                             const std::atomic<std::uint32_t>* queued = nullptr) {
    a.set_reschedule(std::move(f), queued);
  }
  static void begin_inline(actor& a) noexcept { a.begin_inline(); }
  static bool end_inline(actor& a) noexcept { return a.end_inline(); }
  static void wake_now(actor& a) { a.wake_now(); }

  // ---- worker --------------------------------------------------------------------------------
  template <row_type R>
  static void add_table(worker& w, table_id id, std::size_t width) {
    w.add_table<R>(id, width);
  }
  static void set_cache_rows(worker& w, std::size_t rows) { w.set_cache_rows(rows); }
  static void on_message(worker& w, endpoint src, wire::message&& m) { w.on_message(src, std::move(m)); }
  static void finish(worker& w, std::function<void()> done) { w.finish(std::move(done)); }
  static std::exception_ptr spawn_error(const worker& w) noexcept { return w.spawn_error(); }
  static void set_model(worker& w, const model_params& mp) { w.set_model(mp); }
  static void reset(worker& w) { w.reset(); }
  static void enable_checkpoints(worker& w, std::string dir, clock_type every, ckpt::digest sig) {
    w.enable_checkpoints(std::move(dir), every, sig);
  }
  static void resume_at(worker& w, clock_type m, std::string state) { w.resume_at(m, std::move(state)); }

  // ---- coordinator ---------------------------------------------------------------------------
  static void on_message(coordinator& c, endpoint src, wire::message&& m) { c.on_message(src, std::move(m)); }
  static void reset(coordinator& c) { c.reset(); }

  // ---- server shard --------------------------------------------------------------------------
  // Templates on the shard's type (only server_shard itself), so that this header, which
  // system.hpp includes, needs no runtime/server.hpp: a program's files do not parse the shard and
  // the checkpoint files' code (runtime/impl/system.ipp and the tests include server.hpp).
  template <std::same_as<server_shard> S>
  static void on_message(S& s, endpoint src, wire::message&& m) {
    s.on_message(src, std::move(m));
  }
  template <std::same_as<server_shard> S>
  static void reset(S& s, bool clear_tables) {
    s.reset(clear_tables);
  }
  template <std::same_as<server_shard> S>
  static std::uint64_t started_run(const S& s) noexcept {
    return s.started_run();
  }
  template <std::same_as<server_shard> S>
  static std::uint64_t runs_finished(const S& s) noexcept {
    return s.runs_finished();
  }
  template <std::same_as<server_shard> S>
  static bool checkpoints_settled(const S& s) noexcept {
    return s.checkpoints_settled();
  }
  template <std::same_as<server_shard> S, class Path>
  static void enable_checkpoints(S& s, Path dir, clock_type every, ckpt::digest sig, std::uint32_t keep) {
    s.enable_checkpoints(std::move(dir), every, sig, keep);
  }
  template <std::same_as<server_shard> S>
  static void restore(S& s, clock_type m, std::span<const std::byte> body, const std::string& what) {
    s.restore(m, body, what);
  }
};

}  // namespace strata::detail
