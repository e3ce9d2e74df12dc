#pragma once
/// \file system<Consistency, Transport>: a parameter-server run composed from policy types.
/// `system_base` is the runtime, one piece of code for every model and transport (compiled once
/// in the compiled mode, core/config.hpp); `basic_system<T>` adds the transport T; `system<...>`
/// names the model and transport as types.
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include <strata/consistency/model.hpp>
#include <strata/core/config.hpp>
#include <strata/core/error.hpp>
#include <strata/table/server_table.hpp>
#include <strata/table/table.hpp>
#include <strata/transport/inproc.hpp>
#include <strata/transport/transport.hpp>
#include <strata/runtime/checkpoint_types.hpp>
#include <strata/runtime/coordinator.hpp>
#include <strata/runtime/detail/party_access.hpp>
#include <strata/runtime/options.hpp>
#include <strata/runtime/params.hpp>
#include <strata/runtime/program.hpp>
#include <strata/runtime/task.hpp>
#include <strata/runtime/worker.hpp>

namespace strata {

namespace detail {
class system_impl;
}

/// A parameter-server system over any transport: add tables, then `run` a worker program (a
/// coroutine `task<>(worker&)`) on every worker thread of every local process, and optionally a
/// coordinator program (`task<>(coordinator&)`, on node 0's process). Functions that work with
/// any system (the trainers, sched::run) take a `system_base&`.
///
///     strata::system<strata::essp<2>> sys({.nodes = 2, .workers_per_node = 2});
///     auto t = sys.add_table<strata::dense_row<float>>(16);
///     sys.run([&](strata::worker& w) -> strata::task<> { ... co_await w.clock(); });
///
/// `run` may be called again: the next run starts every worker at clock 0 with an empty cache
/// and keeps the tables' rows (`clear_tables()` before it starts from zero rows). Every process of
/// a multi-process run must make the same sequence of runs.
class system_base {
 public:
  /// A system whose consistency model is given at run time (`model_params::of<C>(cfg)`, or
  /// `model_params::named("essp", cfg)`) over transport `t`.
  STRATA_DECL system_base(system_config cfg, model_params mp, std::unique_ptr<any_transport> t);
  system_base(const system_base&) = delete;
  system_base& operator=(const system_base&) = delete;
  STRATA_DECL virtual ~system_base();

  /// The program a run without a coordinator gives the coordinator.
  static task<> no_coordinator(coordinator&) { co_return; }

  /// Adds a table of rows R, each `width` wide. Every process must add the same tables in the same order.
  template <class R>
  auto add_table(std::size_t width) {
    static_assert(detail::check_row_type<R>());
    const auto id = add_table_erased(
        width, typeid(R).name(), [width] { return std::unique_ptr<server_table_base>(new server_table<R>(width)); },
        [width](worker& w, table_id id) { detail::party_access::add_table<R>(w, id, width); });
    return table_handle<R>{id, width};
  }

  /// Runs `program(worker&) -> task<>` on every local worker, and `coord(coordinator&) -> task<>`
  /// on the coordinator (node 0's process); returns when every worker of the run has finished, all
  /// of its updates are applied, and the coordinator's program has returned. Rethrows the first
  /// exception of a worker or the coordinator; after a failed run the system cannot run again.
  template <class F, class G = decltype(&no_coordinator)>
  void run(F&& program, G&& coord = &no_coordinator) {
    if constexpr (std::is_function_v<std::remove_reference_t<F>>) {
      return run(&program, std::forward<G>(coord));
    } else if constexpr (std::is_function_v<std::remove_reference_t<G>>) {
      return run(std::forward<F>(program), &coord);
    } else {
      static_assert(program_for<std::remove_reference_t<F>, worker>,
                    "strata::system::run: the worker program must be callable as program(strata::worker&) and return "
                    "strata::task<> (a coroutine: [&](strata::worker& w) -> strata::task<> { ... })");
      static_assert(program_for<std::remove_reference_t<G>, coordinator>,
                    "strata::system::run: the coordinator program must be callable as coord(strata::coordinator&) and "
                    "return strata::task<> (a coroutine: [&](strata::coordinator& c) -> strata::task<> { ... })");
      if constexpr (program_for<std::remove_reference_t<F>, worker> && program_for<std::remove_reference_t<G>, coordinator>)
        run_programs(program_ref<worker>(program), program_ref<coordinator>(coord));
    }
  }
  /// `run` without the program's type: what every `run` call comes down to.
  STRATA_DECL void run_programs(program_ref<worker> program, program_ref<coordinator> coord);

  /// The next run starts from zero rows instead of keeping this run's tables (every process of
  /// the run must call it).
  STRATA_DECL void clear_tables() noexcept;

  /// Sets the dynamic staleness bound (system_config::staleness) for the next run and the ones after
  /// it: ssp<dynamic_bound> and essp<dynamic_bound> (as `model_params::named` gives them), and tables
  /// whose `staleness_of` is dynamic_bound, read with bound s. Call between runs; every process of
  /// a multi-process run must make the same call. Throws strata::error(bad_input) when s < 0 or
  /// the model has no dynamic bound (bsp, ssp<2>, vap, async: there is nothing to set).
  STRATA_DECL void set_staleness(int s);

  /// The final value of a row after `run`: read from the local shard, or fetched from the process
  /// that holds it (through a local worker), so every process can read the whole model.
  template <row_type R>
  R row(table_handle<R> h, row_id r) {
    std::optional<R> local;
    if (read_local_row(h.id, r, [&](server_table_base& t) { local = static_cast<server_table<R>&>(t).row(r); }))
      return std::move(*local);
    std::promise<R> p;
    auto fut = p.get_future();
    auto fetch = [&p, h, r](worker& w) { return fetch_into(w, h, r, &p); };
    fetch_on_worker(r, fetch);
    return fut.get();
  }

  /// Statistics of each local worker of the last run (in worker-id order).
  STRATA_DECL std::vector<worker_stats> stats();
  /// All local workers' statistics merged.
  STRATA_DECL worker_stats total_stats();
  /// With system_config::checkpoint.resume set: the checkpoint the first run starts from (the clock,
  /// and why each newer checkpoint was refused), found on the first call (add every table before
  /// it); throws when the folder holds no complete checkpoint of this run. nullptr without resume.
  /// A program may call it before `run` to learn where its workers will start.
  STRATA_DECL const ckpt::resume_point* resumed();
  /// The clock the first run's workers start at: the resumed checkpoint's, else 0.
  STRATA_DECL clock_type start_clock();
  STRATA_DECL const system_config& config() const noexcept;
  STRATA_DECL const model_params& model() const noexcept;
  /// Tables, model and shape as text; processes of one run must agree on it.
  STRATA_DECL std::string signature() const;
  /// Whether node n's shard and workers live in this process.
  STRATA_DECL bool is_local(node_id n) const;
  /// Bytes the transport has sent (what it counts: tcp counts socket bytes, inproc payloads).
  STRATA_DECL std::uint64_t bytes_sent() const;

 protected:
  STRATA_DECL any_transport& transport_base() noexcept;

 private:
  using server_factory = std::function<std::unique_ptr<server_table_base>()>;
  using worker_setup = std::function<void(worker&, table_id)>;
  STRATA_DECL table_id add_table_erased(std::size_t width, std::string row_kind, server_factory f, worker_setup w);
  /// Calls `read` with table `t` of the shard that holds row `r`, under its lock, when that shard
  /// is in this process; false otherwise.
  STRATA_DECL bool read_local_row(table_id t, row_id r, const std::function<void(server_table_base&)>& read);
  /// Runs `fetch` on a local worker's thread (system::row of a row held by another process).
  STRATA_DECL void fetch_on_worker(row_id r, program_ref<worker> fetch);

  template <row_type R>
  static task<> fetch_into(worker& w, table_handle<R> h, row_id r, std::promise<R>* out) {
    try {
      out->set_value(co_await w.fetch(h, r));
    } catch (...) {
      out->set_exception(std::current_exception());
    }
  }

  std::unique_ptr<detail::system_impl> impl_;
};

/// A system over transport T whose consistency model is given at run time (`model_params`).
template <class T>
class basic_system : public system_base {
  static_assert(transport<T>, "strata::basic_system<T>: T must model strata::transport");

 public:
  using transport_type = T;

  basic_system(system_config cfg, model_params mp, typename T::config tcfg = {})
      : system_base(cfg, mp, std::make_unique<transport_model<T>>(std::move(tcfg))) {}

  T& transport() noexcept { return static_cast<transport_model<T>&>(transport_base()).get(); }
};

/// A system composed from policy types: `system<essp<2>>`, `system<essp<2>, tcp>`, or named
/// options in any order, `system<options::transport<tcp>, options::consistency<bsp>>`. What is not
/// named takes its default (`bsp`, `inproc`). The runtime underneath is `system_base`, shared
/// by every consistency model and transport.
template <class... Options>
class system : public basic_system<typename detail::resolve_options<Options...>::transport> {
  using resolved = detail::resolve_options<Options...>;

 public:
  using consistency = typename resolved::consistency;
  using transport_type = typename resolved::transport;

  explicit system(system_config cfg, typename transport_type::config tcfg = {})
      : basic_system<transport_type>(cfg, model_params::of<consistency>(cfg), std::move(tcfg)) {}
};

#if !STRATA_HEADER_ONLY
extern template class transport_model<inproc>;
#endif

}  // namespace strata

#if STRATA_HEADER_ONLY
#include <strata/runtime/impl/system.ipp>
#endif
