#pragma once
/// \file The run-time face of a consistency policy, so the runtime is compiled once for every model.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>

#include "../consistency/model.hpp"
#include "../consistency/models.hpp"
#include "../core/error.hpp"
#include "../core/ids.hpp"
#include "../wire/messages.hpp"

namespace strata {

/// Shape and bounds of a run, given by the user.
/// Checkpoints of a run (runtime/checkpoint.hpp): written every `every` clocks into `dir`, and a
/// run that resumes from the newest complete one in `resume`. Every process of a run gives the same.
struct checkpoint_config {
  std::string dir;         ///< where this run writes checkpoints ("" with every = 0: none)
  clock_type every = 0;    ///< a checkpoint each time every worker has passed a multiple of `every` clocks
  std::string resume;      ///< resume from the newest complete checkpoint in this folder ("" : start at clock 0)
  std::string run_tag;     ///< the program's own signature (data, hyper-parameters): a checkpoint of another tag is refused
  std::uint32_t keep = 2;  ///< complete checkpoints kept in `dir`, the newest (older ones are deleted); 0: all
};

/// Adds --checkpoint-dir, --checkpoint-every, --resume and --checkpoint-keep to a CLI11-style `app` (anything with
/// `add_option_function<T>(name, f, description)`), filling `c`. Returns nothing: add checks
/// (positive K, dir needs every) on the app's options if the program wants them.
template <class App>
void add_checkpoint_options(App& app, checkpoint_config& c) {
  app.template add_option_function<std::string>(
      "--checkpoint-dir", [&c](const std::string& v) { c.dir = v; }, "write checkpoints into DIR (with --checkpoint-every)");
  app.template add_option_function<clock_type>(
      "--checkpoint-every", [&c](const clock_type& v) { c.every = v; }, "a checkpoint every K clocks, when every worker has passed it");
  app.template add_option_function<std::string>(
      "--resume", [&c](const std::string& v) { c.resume = v; },
      "resume from the newest complete checkpoint in DIR (the run's other flags must match it)");
  app.template add_option_function<std::uint32_t>(
      "--checkpoint-keep", [&c](const std::uint32_t& v) { c.keep = v; },
      "keep the newest K complete checkpoints in --checkpoint-dir, deleting older ones (0: keep all; default 2)");
}

struct system_config {
  std::uint32_t nodes = 1;             ///< processes (each a server shard and a set of workers)
  std::uint32_t workers_per_node = 1;  ///< worker threads per process
  int staleness = 0;                   ///< used by ssp<dynamic_bound> / essp<dynamic_bound>
  double value_bound = 1.0;            ///< used by vap<V> with V < 0
  std::size_t max_message = 16u << 20; ///< largest app message or collective contribution, in bytes
  checkpoint_config checkpoint{};      ///< checkpoints and resume (first run of a system only)
  /// Rows each worker caches per table (0: unbounded). Rows with un-flushed increments, requested,
  /// or read since the worker last suspended are never evicted, so a cache may briefly hold more.
  std::size_t cache_rows = 0;
  /// A message from a worker (or the coordinator) to a shard of its own process is handled at once
  /// on the sender's thread, under the shard's lock, instead of being handed to the shard's thread:
  /// a cache miss whose row is ready costs no thread switch, and a BSP clock round wakes each
  /// waiting worker once. Off: every message to a shard goes through the shard's thread.
  bool local_shard_calls = true;
  /// Microseconds a worker's (or the coordinator's) thread keeps polling for work, yielding between
  /// polls, before it sleeps (0: it sleeps at once). A BSP round of 2 workers takes ~3x less time.
  int spin_us = 50;
  /// The runtime's worker threads, and a shard's thread once it handles messages itself, ask for
  /// transparent huge pages under their malloc heaps and set glibc's malloc to keep what it grows
  /// (`advise_thread_heap_huge_pages`, core/huge_pages.hpp): fewer, cheaper page faults while a
  /// run's rows and buffers first take their memory. Process-wide malloc settings, so off unless
  /// asked for (the example trainers turn it on).
  bool huge_page_heap = false;
  /// Each worker thread runs on one CPU of the process's affinity mask (worker id modulo their
  /// number: core/affinity.hpp), when the process has exactly as many workers as those CPUs: two busy
  /// workers are never left sharing a CPU for a scheduler tick while another CPU idles, which under
  /// a staleness bound stalls every worker. It fixes the threads' placement for the system's life,
  /// so off unless asked for (the example trainers turn it on).
  bool pin_workers = false;
};

/// The consistency policy's answers, with run-time bounds filled in: what the runtime asks at run
/// time. The runtime is compiled once for every policy; a policy's hooks reach it as plain
/// function pointers (`staleness_of`, `push_at`), so a user's policy changes behaviour without a
/// second copy of the runtime.
struct model_params {
  const char* name = "bsp";
  int staleness = 0;  ///< the policy's `staleness` (the largest bound over tables)
  push_mode push = push_mode::none;
  bool exact = true;
  double value_bound = std::numeric_limits<double>::infinity();
  int (*table_staleness)(table_id) = nullptr;  ///< the policy's staleness_of hook, if any
  bool (*push_at_hook)(clock_type) = nullptr;  ///< the policy's push_at hook, if any
  int config_staleness = 0;                    ///< system_config::staleness, for dynamic_bound
  bool dynamic_staleness = false;              ///< the policy's bound is dynamic_bound (ssp<dynamic_bound>, essp<dynamic_bound>)

  template <consistency_model C>
  static model_params of(const system_config& cfg) {
    static_assert(detail::check_consistency_model<C>());
    if (C::staleness == dynamic_bound && cfg.staleness < 0)  // a negative bound would make every read wait forever
      throw error(errc::bad_input, std::string(C::name()) + ": system_config::staleness " + std::to_string(cfg.staleness) + " (want >= 0)");
    if (C::value_bound < 0 && !(cfg.value_bound > 0))  // NaN or <= 0
      throw error(errc::bad_input, std::string(C::name()) + ": system_config::value_bound " + std::to_string(cfg.value_bound) + " (want > 0)");
    model_params p;
    p.name = C::name();
    p.config_staleness = cfg.staleness;
    p.staleness = C::staleness == dynamic_bound ? cfg.staleness : C::staleness;
    p.dynamic_staleness = C::staleness == dynamic_bound;
    p.push = C::push;
    p.exact = C::exact_snapshots;
    p.value_bound = C::value_bound < 0 ? cfg.value_bound : C::value_bound;
    if constexpr (requires(table_id t) { C::staleness_of(t); }) p.table_staleness = [](table_id t) { return strata::staleness_of<C>(t); };
    if constexpr (requires(clock_type c) { C::push_at(c); }) p.push_at_hook = [](clock_type c) { return strata::push_at<C>(c); };
    return p;
  }
  /// The model named `name` (bsp, ssp, essp, vap, async), with its bounds from `cfg` (ssp/essp:
  /// cfg.staleness; vap: cfg.value_bound): the one place a run-time name becomes a policy.
  static model_params named(const std::string& name, const system_config& cfg);

  /// The same model with the dynamic bound set to s (what system_config::staleness would have
  /// given): the policy's `staleness` when it is dynamic_bound, and every table whose
  /// `staleness_of` is dynamic_bound. Throws strata::error(bad_input) when s < 0.
  model_params with_dynamic_staleness(int s) const {
    if (s < 0) throw error(errc::bad_input, "staleness bound " + std::to_string(s) + " (want >= 0)");
    model_params p = *this;
    p.config_staleness = s;
    if (p.dynamic_staleness) p.staleness = s;
    return p;
  }
  /// The staleness bound of reads of table t.
  int staleness_for(table_id t) const noexcept {
    if (!table_staleness) return staleness;
    const int s = table_staleness(t);
    return s == dynamic_bound ? config_staleness : s;
  }
  /// Whether the server pushes subscribed rows when the minimum clock advances to `new_min`.
  bool pushes_at(clock_type new_min) const noexcept {
    if (push != push_mode::on_min_clock) return false;
    return push_at_hook ? push_at_hook(new_min) : true;
  }
  /// True when every advance of the minimum clock pushes: a reader may then wait for the next push
  /// instead of asking for a stale subscribed row.
  bool pushes_every_advance() const noexcept { return push == push_mode::on_min_clock && !push_at_hook; }
  std::string describe() const {
    std::string s = name;
    if (staleness != unbounded) s += " s=" + std::to_string(staleness);
    if (std::isfinite(value_bound)) s += " v=" + std::to_string(value_bound);
    return s;
  }
};

/// Calls `f(std::type_identity<C>{})` with the policy named `name`: bsp, ssp (ssp<dynamic_bound>),
/// essp (essp<dynamic_bound>), vap (vap<-1.0>: V from the configuration) or async. Throws
/// `strata::error(bad_input)` listing the names for any other.
template <class F>
decltype(auto) visit_consistency(const std::string& name, F&& f) {
  if (name == "bsp") return f(std::type_identity<bsp>{});
  if (name == "ssp") return f(std::type_identity<ssp<dynamic_bound>>{});
  if (name == "essp") return f(std::type_identity<essp<dynamic_bound>>{});
  if (name == "vap") return f(std::type_identity<vap<-1.0>>{});
  if (name == "async") return f(std::type_identity<async>{});
  throw error(errc::bad_input, "unknown consistency model '" + name + "' (bsp|ssp|essp|vap|async)");
}

inline model_params model_params::named(const std::string& name, const system_config& cfg) {
  return visit_consistency(name, [&]<class C>(std::type_identity<C>) { return model_params::of<C>(cfg); });
}

/// A consistency model named with its staleness appended, as test and benchmark programs take it:
/// "essp2" is {"essp", 2}, "bsp" is {"bsp", 0}. An unknown name part is refused as
/// model_params::named refuses it.
struct model_name {
  std::string name;
  int staleness = 0;
  static model_name parse(const std::string& s) {
    const auto digits = s.find_first_of("0123456789");
    if (digits != std::string::npos &&
        (s.find_first_not_of("0123456789", digits) != std::string::npos || s.size() - digits > 6))
      throw error(errc::bad_input, "model '" + s + "': expected a name then a staleness, e.g. essp2");
    model_name m{s.substr(0, digits), digits == std::string::npos ? 0 : std::stoi(s.substr(digits))};
    (void)model_params::named(m.name, {});  // throws for an unknown name
    return m;
  }
};

/// A run's configuration as data (serialisable; what a planner names and a trace records): the
/// consistency model by name and its bounds, and the shape.
struct run_config {
  std::string consistency = "bsp";
  int staleness = 0;
  double value_bound = 1.0;
  std::uint32_t nodes = 1, workers_per_node = 1;
  system_config system() const {
    return {.nodes = nodes, .workers_per_node = workers_per_node, .staleness = staleness, .value_bound = value_bound};
  }
  model_params model() const { return model_params::named(consistency, system()); }
  template <class Ar>
  void serialize(Ar& ar) { ar(consistency, staleness, value_bound, nodes, workers_per_node); }
  friend bool operator==(const run_config&, const run_config&) = default;
};

/// How a runtime party sends a message (the transport's send, bound to the sender's endpoint).
using send_fn = std::function<void(endpoint dst, wire::message&& m)>;

/// The roles a party of a run can have.
enum class role : std::uint8_t {
  shard,        ///< a server shard (one per node)
  worker,       ///< a worker thread running the worker program
  coordinator,  ///< the one coordinator of a run (on node 0), running the coordinator program
};

/// A party of a run by role: worker i, shard n, or the coordinator. What app messages are
/// addressed to and say they came from.
struct peer {
  role kind = role::worker;
  std::uint32_t index = 0;  ///< worker id, node id of a shard; 0 for the coordinator
  static constexpr peer worker(worker_id w) noexcept { return {role::worker, w}; }
  static constexpr peer shard(node_id n) noexcept { return {role::shard, n}; }
  static constexpr peer coordinator() noexcept { return {role::coordinator, 0}; }
  bool is_worker() const noexcept { return kind == role::worker; }
  bool is_coordinator() const noexcept { return kind == role::coordinator; }
  friend bool operator==(const peer&, const peer&) = default;
  std::string describe() const {
    switch (kind) {
      case role::shard: return "shard " + std::to_string(index);
      case role::worker: return "worker " + std::to_string(index);
      case role::coordinator: return "the coordinator";
    }
    return "?";
  }
};

/// Where every party of a run lives: node n's slot 0 is its shard, slots 1..per_node its workers,
/// and slot per_node + 1 of node 0 the coordinator. The one place that maps roles to endpoints.
struct worker_map {
  std::uint32_t nodes = 1, per_node = 1;
  std::uint32_t workers() const noexcept { return nodes * per_node; }
  endpoint of(worker_id w) const noexcept { return {w / per_node, 1 + w % per_node}; }
  worker_id id(endpoint e) const noexcept { return e.node * per_node + (e.slot - 1); }
  endpoint shard(node_id n) const noexcept { return {n, 0}; }
  endpoint coordinator() const noexcept { return {0, per_node + 1}; }
  /// The endpoint of a party; throws `bad_input` for one that is not in the run.
  endpoint address(peer p) const {
    switch (p.kind) {
      case role::shard:
        if (p.index < nodes) return shard(p.index);
        break;
      case role::worker:
        if (p.index < workers()) return of(p.index);
        break;
      case role::coordinator: return coordinator();
    }
    throw error(errc::bad_input, p.describe() + " is not part of this run (" + std::to_string(workers()) + " workers, " +
                                     std::to_string(nodes) + " nodes)");
  }
  /// The party at an endpoint.
  peer who(endpoint e) const noexcept {
    if (e.slot == 0) return peer::shard(e.node);
    if (e.slot <= per_node) return peer::worker(id(e));
    return peer::coordinator();
  }
};

}  // namespace strata
