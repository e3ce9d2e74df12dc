#pragma once
/// \file The runtime's side of a party (worker, coordinator): registering tables, delivering
/// messages, finishing and resetting runs, checkpoint setup, scheduling on the party's thread.
/// These members are private, so that `worker&` and `coordinator&` show a program only what it may
/// call; the runtime (and tests of the runtime) reach them through `detail::party_access`.
#include <atomic>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <utility>

#include "../coordinator.hpp"
#include "../worker.hpp"

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
};

}  // namespace strata::detail
