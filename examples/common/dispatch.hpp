#pragma once
/// \file Maps the run-time --transport flag onto strata's transport types, once, at the edge of an
/// example: `dispatch(opts, f)` calls the generic lambda
/// `f(std::type_identity<Transport>{}, transport_config)`. The --consistency flag maps onto a
/// policy through the library (`strata::model_params::named`: bsp, ssp<dynamic_bound>,
/// essp<dynamic_bound>, vap<-1.0>, async), so the bounds come from system_config (--staleness,
/// --value-bound) and the trainer is compiled once per transport.
///
/// Transports: inproc (threads of one process; --nodes in-process shards), delayed<inproc>
/// (--delay / --straggler), tcp (one process per node, started by scripts/launch.sh, mpirun or
/// srun; the cluster flags of strata::add_cluster_options), delayed<tcp> (tcp with --delay /
/// --straggler: the latency is added on top of the network's), and, in a build with MPI
/// (STRATA_HAVE_MPI), mpi (one process per node under mpirun or srun; rank and size are MPI's), and,
/// in a build with SimGrid (STRATA_HAVE_SIMGRID), sim (every node in this process, node n on host n
/// of the simulated cluster --platform FILE; the trainer's times are simulated seconds).
/// Register the cluster flags with add_cluster_flags(app, opts.cluster_flags); with tcp or mpi,
/// call resolve() after parsing: it reads the rank and world size (flags, hostfile, the
/// launcher's environment, or MPI) and sets nodes = world size; --workers stays the worker
/// threads per process.
#include <CLI/CLI.hpp>
#include "cli.hpp"
#include <strata/runtime/cluster.hpp>
#include <strata/strata.hpp>
#include <strata/transport/tcp.hpp>
#if STRATA_HAVE_MPI
#include <strata/runtime/mpi_cluster.hpp>
#endif
#if STRATA_HAVE_SIMGRID
#include <strata/sim/simulated.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace strata::examples {

/// The flags shared by the example trainers that choose the system.
struct system_options {
  std::string consistency = "essp";  ///< bsp | ssp | essp | vap | async
  int staleness = 2;                 ///< s of SSP / ESSP
  double value_bound = 1000;         ///< V of VAP (total un-propagated update mass)
  std::uint32_t workers = 4;         ///< worker threads per node
  std::uint32_t nodes = 1;           ///< server shards (in-process nodes; with tcp: the processes)
  std::string transport = "inproc";  ///< inproc | delayed | tcp | mpi | sim
  std::string platform;              ///< --platform FILE (sim)
  std::string sim_cpu = "measured";  ///< --sim-cpu measured | none (sim)
  double delay_us = 0;               ///< --delay: latency per message, µs (selects delayed)
  double jitter_us = -1;             ///< jitter per message, µs (default: delay / 2)
  int straggler = -1;                ///< worker id whose messages are slowed (-1: none)
  double straggler_factor = 4;       ///< delay multiplier for the straggler's messages
  std::uint64_t seed = 1;
  std::size_t cache_rows = 0;        ///< --cache-rows: rows each worker caches per table (0: unbounded)
  strata::checkpoint_config checkpoint;   ///< --checkpoint-dir, --checkpoint-every, --resume (trainer_cli::add_checkpoint_flags)
  bool local_shard_calls = true;          ///< off with --shard-thread (system_config::local_shard_calls)
  int spin_us = 50;                       ///< --spin-us (system_config::spin_us)
  bool huge_page_heap = true;             ///< off with --no-huge-page-heap (system_config::huge_page_heap)
  bool pin_workers = true;                ///< off with --no-pin-workers (system_config::pin_workers)
  strata::cluster_options cluster_flags;  ///< --rank, --size, --hostfile, --base-port, ... (tcp)
  strata::cluster cluster;                ///< resolved by resolve() (tcp; with mpi only rank, size and rank_source)
#if STRATA_HAVE_MPI
  strata::mpi::config mpi_config;         ///< resolved by resolve() (mpi)
#endif
  bool nodes_given = false;               ///< --nodes was on the command line (tcp: it must equal the world size)

  bool delays() const noexcept { return delay_us > 0 || straggler >= 0; }
  bool is_tcp() const noexcept { return transport == "tcp"; }
  /// One process per node (tcp or mpi), as opposed to every node in this process.
  bool is_distributed() const noexcept { return transport == "tcp" || transport == "mpi"; }
  /// The same system with m workers in this process: on a simulated cluster m hosts of one worker
  /// each (an elastic run's or a CoCoA+ probe's m is machines), else m worker threads on one node.
  system_options with_machines(std::uint32_t m) const {
    system_options so = *this;
    if (transport == "sim") so.nodes = m, so.workers = 1;
    else so.nodes = 1, so.workers = m;
    return so;
  }
  /// This process's rank (0 unless tcp or mpi).
  strata::node_id rank() const noexcept { return is_distributed() ? cluster.rank : 0; }
  /// After parsing: inproc with --delay/--straggler becomes delayed; tcp and mpi resolve the
  /// cluster and take nodes from the world size. Throws strata::error when the cluster cannot be
  /// resolved (mpi: also when this build has no MPI, or the process was not started by mpirun).
  void resolve() {
    if (transport == "inproc" && delays()) transport = "delayed";
    if (transport == "sim") {
#if STRATA_HAVE_SIMGRID
      if (platform.empty()) throw std::invalid_argument("--transport sim needs --platform FILE (examples/platforms/*.txt)");
      if (delays())
        throw std::invalid_argument("--delay and --straggler do not apply to --transport sim: the platform file says what links "
                                    "and hosts cost (its straggler lines)");
#else
      throw strata::error(strata::errc::bad_input,
                          "--transport sim: this build has no SimGrid (install libsimgrid-dev, then configure again)");
#endif
    } else if (!platform.empty()) {
      throw std::invalid_argument("--platform applies to --transport sim only");
    }
    if (is_tcp()) cluster = strata::make_cluster(cluster_flags);
    if (transport == "mpi") {
#if STRATA_HAVE_MPI
      const auto mc = strata::make_mpi_cluster(cluster_flags);
      cluster.rank = mc.rank;
      cluster.size = mc.size;
      cluster.rank_source = "MPI_COMM_WORLD";
      mpi_config = mc.mpi_config;
#else
      throw strata::error(strata::errc::bad_input,
                          "--transport mpi: this build has no MPI (install libopenmpi-dev and openmpi-bin, then configure again)");
#endif
    }
    if (is_distributed()) {
      if (nodes_given && nodes != cluster.size)
        throw std::invalid_argument("--nodes " + std::to_string(nodes) + " disagrees with the launch's world size " +
                                    std::to_string(cluster.size) + " (with --transport " + transport +
                                    " each process is one node: drop --nodes)");
      nodes = cluster.size;
    }
  }
  /// "inproc", "delayed", "tcp", "delayed-tcp", "mpi" or "delayed-mpi" (for the metrics' configuration line).
  std::string transport_label() const { return is_distributed() && delays() ? "delayed-" + transport : transport; }

  strata::system_config system_config() const {
    return {.nodes = nodes, .workers_per_node = workers, .staleness = staleness, .value_bound = value_bound, .checkpoint = checkpoint,
            .cache_rows = cache_rows, .local_shard_calls = local_shard_calls,
            .spin_us = spin_us, .huge_page_heap = huge_page_heap, .pin_workers = pin_workers};
  }
  /// The consistency model named by --consistency, with its bounds (strata::model_params::named).
  strata::model_params model() const { return strata::model_params::named(consistency, system_config()); }
  /// "essp s=2" etc.
  std::string model_label() const {
    if (consistency == "ssp" || consistency == "essp") return consistency + " s=" + std::to_string(staleness);
    if (consistency == "vap") return "vap v=" + std::to_string(static_cast<long long>(value_bound));
    return consistency;
  }
};

/// Registers strata::add_cluster_options' flags on `app`; a flag whose name the trainer already
/// uses (strata_mf's --rank is the factor rank) is registered as --node-<name> instead
/// (--node-rank). Under scripts/launch.sh, mpirun or srun the rank comes from the environment.
namespace detail {
/// The App-like adapter add_cluster_flags hands to strata::add_cluster_options.
struct renaming_app {
  CLI::App& app;
  template <class T, class F>
  CLI::Option* add_option_function(std::string name, F&& f, const std::string& desc) {
    std::string kept;  // the names the program has not taken ("--node-rank,--rank": strata_mf's --rank is its factor rank)
    for (std::size_t b = 0; b <= name.size();) {
      const std::size_t e = std::min(name.find(',', b), name.size());
      const std::string one = name.substr(b, e - b);
      if (!app.get_option_no_throw(one)) kept += (kept.empty() ? "" : ",") + one;
      b = e + 1;
    }
    name = kept.empty() ? "--node-" + name.substr(2, name.find(',') - 2) : kept;
    return app.add_option_function<T>(name, std::forward<F>(f), desc)->group("Cluster (--transport tcp or mpi)");
  }
  template <class F>
  CLI::Option* add_flag_function(const std::string& name, F&& f, const std::string& desc) {
    return app.add_flag_function(name, std::forward<F>(f), desc)->group("Cluster (--transport tcp or mpi)");
  }
};
}  // namespace detail

/// The flags every trainer shares: consistency model and its bounds, shape, transport, injected
/// delays and seed (the cluster flags come separately, last: add_cluster_flags).
inline void add_system_flags(CLI::App& app, system_options& so, const std::string& value_bound_help) {
  app.add_option("--consistency", so.consistency, "bsp|ssp|essp|vap|async")
      ->check(CLI::IsMember({"bsp", "ssp", "essp", "vap", "async"}))
      ->capture_default_str();
  app.add_option("--staleness", so.staleness, "s of SSP/ESSP (>= 0)")->check(strata::examples::non_negative)->capture_default_str();
  app.add_option("--value-bound", so.value_bound, value_bound_help)->check(strata::examples::positive)->capture_default_str();
  app.add_option("--workers", so.workers, "worker threads (per node)")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--nodes", so.nodes, "server shards (in-process nodes; with tcp: the processes)")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--transport", so.transport,
                 "inproc|delayed|tcp|mpi|sim (tcp: one process per node, see scripts/launch.sh; mpi: under mpirun, in a build with "
                 "MPI; sim: --nodes hosts of the simulated cluster --platform, in a build with SimGrid)")
      ->check(CLI::IsMember({"inproc", "delayed", "tcp", "mpi", "sim"}))
      ->capture_default_str();
  app.add_option("--platform", so.platform, "the simulated cluster (--transport sim): a platform file, examples/platforms/*.txt");
  app.add_option("--sim-cpu", so.sim_cpu,
                 "--transport sim: what compute costs: measured (each party's CPU time here, scaled by its host's speed) or none "
                 "(only the network: the same run gives the same times)")
      ->check(CLI::IsMember({"measured", "none"}))
      ->capture_default_str();
  app.add_option("--delay", so.delay_us, "injected latency per message, microseconds")->check(strata::examples::non_negative)->capture_default_str();
  app.add_option("--jitter", so.jitter_us, "injected jitter per message, microseconds (default delay/2)")->check(strata::examples::non_negative);
  app.add_option("--straggler", so.straggler, "worker id whose messages are slowed (-1: none)")->check(CLI::Range(-1, 1 << 30))->capture_default_str();
  app.add_option("--straggler-factor", so.straggler_factor, "delay multiplier for the straggler")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--seed", so.seed, "random seed")->capture_default_str();
  app.add_flag("--shard-thread{false}", so.local_shard_calls,
               "hand every message to a shard to the shard's own thread (default: a worker handles its "
               "message to a shard of its own process itself, under the shard's lock)");
  app.add_option("--spin-us", so.spin_us,
                 "microseconds a worker thread polls for work (yielding) before it sleeps; 0: sleep at once")
      ->check(CLI::Range(0, 1'000'000))
      ->capture_default_str();
  app.add_flag("--no-huge-page-heap{false}", so.huge_page_heap,
               "leave malloc as it is (default: the runtime's threads ask for transparent huge pages under "
               "their heaps and malloc keeps what it grows; fewer page faults while rows and buffers first "
               "take memory)");
  app.add_flag("--no-pin-workers{false}", so.pin_workers,
               "let the kernel place the worker threads (default: each worker thread runs on one CPU of "
               "the process's, by worker id, when the process has exactly as many workers as CPUs: use taskset to choose them)");
}

inline void add_cluster_flags(CLI::App& app, strata::cluster_options& o) {
  detail::renaming_app r{app};
  strata::add_cluster_options(r, o);
}

/// Calls f(type_identity<T>, T::config) for the chosen transport; the consistency model is chosen
/// at run time (`system_options::model()`), so a trainer is compiled once per transport, not once
/// per (model, transport) pair.
template <class F>
decltype(auto) dispatch(const system_options& o, F&& f) {
  auto delays = [&o] {
    strata::delay_config d;
    const double jitter = o.jitter_us >= 0 ? o.jitter_us : o.delay_us / 2;
    d.latency = std::chrono::microseconds(static_cast<std::int64_t>(o.delay_us));
    d.jitter = std::chrono::microseconds(static_cast<std::int64_t>(jitter));
    if (o.straggler >= 0) {
      const strata::worker_map wm{o.nodes, o.workers};
      if (static_cast<std::uint32_t>(o.straggler) >= wm.workers())
        throw std::invalid_argument("--straggler " + std::to_string(o.straggler) + " is not a worker id (0.." +
                                    std::to_string(wm.workers() - 1) + ")");
      d.stragglers.push_back(wm.of(static_cast<strata::worker_id>(o.straggler)));
      d.straggler_factor = o.straggler_factor;
    }
    d.seed = o.seed + o.rank();  // each process draws its own delays
    return d;
  };
  if (o.transport == "inproc" && !o.delays()) return f(std::type_identity<strata::inproc>{}, strata::inproc::config{});
  if (o.transport == "inproc" || o.transport == "delayed") {
    using T = strata::delayed<strata::inproc>;
    return f(std::type_identity<T>{}, T::config{{}, delays()});
  }
  // A transport between processes, under delayed<> when --delay / --straggler ask for it.
  auto between_processes = [&]<class Net>(std::type_identity<Net>, const typename Net::config& c) -> decltype(auto) {
    if (!o.delays()) return f(std::type_identity<Net>{}, typename Net::config(c));
    using T = strata::delayed<Net>;
    return f(std::type_identity<T>{}, typename T::config{c, delays()});
  };
  if (o.is_tcp()) {
    if (o.nodes != o.cluster.size || o.cluster.tcp_config.peers.size() != o.nodes)
      throw std::invalid_argument("transport tcp: call system_options::resolve() after parsing the flags");
    return between_processes(std::type_identity<strata::tcp>{}, o.cluster.tcp_config);
  }
#if STRATA_HAVE_SIMGRID
  if (o.transport == "sim") {
    if (o.platform.empty()) throw std::invalid_argument("transport sim: call system_options::resolve() after parsing the flags");
    strata::simulated::config c;
    c.platform = strata::sim::load_platform(o.platform);
    c.cpu = strata::sim::parse_cpu_charge(o.sim_cpu);
    return f(std::type_identity<strata::simulated>{}, std::move(c));
  }
#endif
#if STRATA_HAVE_MPI
  if (o.transport == "mpi") {
    if (o.nodes != o.cluster.size) throw std::invalid_argument("transport mpi: call system_options::resolve() after parsing the flags");
    return between_processes(std::type_identity<strata::mpi>{}, o.mpi_config);
  }
#endif
  throw std::invalid_argument("unknown transport '" + o.transport + "' (inproc|delayed|tcp|mpi|sim)");
}

}  // namespace strata::examples
