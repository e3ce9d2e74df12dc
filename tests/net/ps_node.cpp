// ps_node: one process of a deterministic parameter-server run, for the TCP and MPI tests.
//
// Every worker follows a seeded plan of integer increments (worker w only ever adds to column w),
// checks every read against its consistency model's bound, and, for the bounded models, reads every
// row again once all updates are guaranteed in and compares it with the exact expected table (so
// the final table is the same whichever process reads it). Each process then prints the rows its
// shard holds ("ROW r v0 v1 ...") and a RESULT line. Exit status: 0 ok, 1 run failed (transport or
// worker error, message on stderr), 2 a consistency violation or lost update.
//
//   ps_node --model bsp --clocks 20 --rank 0 --size 3 --base-port 7000      (tcp)
//   ps_node --model bsp --transport inproc --size 3                           (one process)
//   mpirun -n 3 ps_node --model bsp --transport mpi                           (MPI)
//   ps_node --model essp2 --transport sim --platform P.txt --size 16 --wpn 16 (simulated, one process)
#include <strata/runtime/cluster.hpp>
#include <strata/strata.hpp>
#include <strata/transport/tcp.hpp>
#if STRATA_HAVE_MPI
#include <strata/runtime/mpi_cluster.hpp>
#endif
#if STRATA_HAVE_SIMGRID
#include <strata/sim/simulated.hpp>
#endif

#include "../support/ps_plan.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using counts = strata::dense_row<long>;
using strata_test::check_read;
using strata_test::plan;
using strata_test::violations;

struct options {
  std::string model = "bsp";
  std::string transport = "tcp";
  std::uint32_t wpn = 2;
  int clocks = 20;
  int rows = 8;
  std::uint64_t seed = 1;
  int extra_width = 0;  // wider rows: a different signature, or frames over a small --max-frame
  int sleep_ms = 0;     // per clock, to make a run last (killed-peer test)
  int throw_at = -1;    // worker 0 of this process throws at this clock (failed-run test)
  strata::model_name parsed{"bsp", 0};  // from --model: essp2 is {essp, 2}
  bool mpi_init_single = false;  // --mpi-init-single: the program initialises MPI itself with MPI_Init
  std::string platform;      // --platform FILE (sim)
  std::string sim_cpu = "none";  // --sim-cpu measured|none (sim)
  std::size_t sim_max_lanes = 0;  // --sim-max-lanes N (sim): transfers in flight at once
  std::string scenario = "plan";  // plan: the seeded workload; runtime: roles, messages, collectives, repeated runs
  strata::checkpoint_config checkpoint;  // plan: --checkpoint-dir, --checkpoint-every, --resume
  strata::cluster_options cluster;
};

template <class Transport>
int run(const options& o, std::uint32_t nodes, typename Transport::config tc, strata::node_id rank) {
  const std::uint32_t P = nodes * o.wpn;
  const plan pl(static_cast<int>(P), o.clocks, o.rows, o.seed);
  violations bad;
  const strata::system_config cfg{.nodes = nodes, .workers_per_node = o.wpn, .staleness = o.parsed.staleness, .checkpoint = o.checkpoint};
  strata::basic_system<Transport> sys(cfg, strata::model_params::named(o.parsed.name, cfg), std::move(tc));
  auto t = sys.template add_table<counts>(static_cast<std::size_t>(P) + static_cast<std::size_t>(o.extra_width));
  const auto mp = sys.model();
  try {
    if (const auto* r = sys.resumed()) {
      for (const auto& why : r->refused) std::cerr << "REFUSED " << why << std::endl;
      std::cout << "RESUMED rank=" << rank << " clock=" << r->clock << std::endl;
    }
  } catch (const std::exception& e) {
    std::cerr << "ERROR: " << e.what() << std::endl;
    return 1;
  }
  const bool bounded = mp.staleness != strata::unbounded;
  try {
    sys.run([&](strata::worker& w) -> strata::task<> {
      const int self = static_cast<int>(w.id());
      if (self % static_cast<int>(o.wpn) == 0) std::cout << "STARTED rank=" << rank << " pid=" << ::getpid() << std::endl;  // connected
      std::vector<long> v(P);
      auto read = [&](const counts& row) {
        for (std::uint32_t k = 0; k < P; ++k) v[k] = row.get(static_cast<strata::col_id>(k));
      };
      for (int c = static_cast<int>(w.current_clock()); c < pl.clocks; ++c) {  // a resumed run starts at its checkpoint
        for (int r : pl.reads[self][c]) {
          const counts& row = co_await w.get(t, static_cast<strata::row_id>(r));
          read(row);
          check_read(pl, mp, self, r, c, 0, v, bad);
        }
        for (int r : pl.incs[self][c])
          co_await w.inc(t, static_cast<strata::row_id>(r), static_cast<strata::col_id>(self), 1L);
        if (!pl.incs[self][c].empty()) {
          const int r = pl.incs[self][c].front();
          const counts& row = co_await w.get(t, static_cast<strata::row_id>(r));
          long own = 0;
          for (int x : pl.incs[self][c]) own += x == r;
          read(row);
          check_read(pl, mp, self, r, c, own, v, bad);
        }
        if (o.sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.sleep_ms));
        if (c == o.throw_at && self % static_cast<int>(o.wpn) == 0)
          throw std::runtime_error("worker " + std::to_string(self) + " failed on purpose at clock " + std::to_string(c));
        co_await w.clock();
      }
      if (bounded) {
        // s empty clocks later, a read needs every update through the last real clock: the exact table.
        for (int k = 0; k < mp.staleness; ++k) co_await w.clock();
        for (int r = 0; r < pl.rows; ++r) {
          const counts& row = co_await w.get(t, static_cast<strata::row_id>(r));
          read(row);
          for (std::uint32_t k = 0; k < P; ++k)
            if (v[k] != pl.cum(static_cast<int>(k), r, pl.clocks - 1))
              bad.add("worker " + std::to_string(self) + " final read of row " + std::to_string(r) + " column " +
                      std::to_string(k) + ": " + std::to_string(v[k]) + ", expected " +
                      std::to_string(pl.cum(static_cast<int>(k), r, pl.clocks - 1)));
        }
      }
    });
  } catch (const std::exception& e) {
    std::cerr << "ERROR: " << e.what() << std::endl;
    return 1;
  }
  // No lost update: every row this process's shard holds equals the exact sums.
  std::ostringstream rows;
  for (int r = 0; r < pl.rows; ++r) {
    if (!sys.transport().is_local(strata::owner_of(t.id, static_cast<strata::row_id>(r), nodes))) continue;
    const counts row = sys.row(t, static_cast<strata::row_id>(r));
    rows << "ROW " << r;
    for (std::uint32_t k = 0; k < P; ++k) {
      const long x = row.get(static_cast<strata::col_id>(k));
      rows << ' ' << x;
      if (x != pl.cum(static_cast<int>(k), r, pl.clocks - 1))
        bad.add("lost update: row " + std::to_string(r) + " column " + std::to_string(k) + " is " + std::to_string(x) +
                ", expected " + std::to_string(pl.cum(static_cast<int>(k), r, pl.clocks - 1)));
    }
    rows << '\n';
  }
  const auto st = sys.total_stats();
  if (bounded && st.reads > 0 && st.min_clock_staleness.stats().max() > mp.staleness) bad.add("observed staleness above the bound");
#if STRATA_HAVE_SIMGRID
  if constexpr (std::is_same_v<Transport, strata::simulated>)
    std::cout << "SIMULATED seconds=" << sys.transport().simulated_seconds() << " messages=" << sys.transport().messages()
              << " lanes=" << sys.transport().lanes_used() << " lane_waits=" << sys.transport().lane_waits() << std::endl;
#endif
  std::cout << rows.str() << "RESULT rank=" << rank << " model=" << mp.describe() << " reads=" << st.reads
            << " max_staleness=" << (st.reads ? st.min_clock_staleness.stats().max() : 0) << " bytes_sent=" << sys.transport().bytes_sent()
            << (bad.count ? " VIOLATIONS" : " ok") << std::endl;
  if (bad.count) {
    std::cerr << "VIOLATION (" << bad.count << "): " << bad.first << std::endl;
    return 2;
  }
  return 0;
}

struct work {
  std::uint32_t round = 0;
  std::int64_t x = 0;
  template <class Ar>
  void serialize(Ar& ar) { ar(round, x); }
};
struct answer {
  std::uint32_t round = 0;
  std::int64_t y = 0;
  template <class Ar>
  void serialize(Ar& ar) { ar(round, y); }
};

/// --scenario runtime: two runs of one system. In each, workers add (id + 1) to column id of every
/// row at every clock, answer the coordinator's rounds of work (coordinator on rank 0, workers on
/// every process), meet in a barrier, and check all_reduce / all_gather. After each run every
/// process reads every row, local or not, and checks the exact sums (tables kept across runs).
template <class Transport>
int run_runtime(const options& o, std::uint32_t nodes, typename Transport::config tc, strata::node_id rank) {
  const std::uint32_t P = nodes * o.wpn;
  violations bad;
  const strata::system_config cfg{.nodes = nodes, .workers_per_node = o.wpn, .staleness = o.parsed.staleness};
  strata::basic_system<Transport> sys(cfg, strata::model_params::named(o.parsed.name, cfg), std::move(tc));
  auto t = sys.template add_table<counts>(P);
  constexpr std::uint32_t rounds = 10;
  try {
    for (int run = 1; run <= 2; ++run) {
      sys.run(
          [&](strata::worker& w) -> strata::task<> {
            const auto me = w.id();
            if (me % o.wpn == 0) std::cout << "STARTED rank=" << rank << " run=" << run << std::endl;
            for (int c = 0; c < o.clocks; ++c) {
              for (int r = 0; r < o.rows; ++r) co_await w.inc(t, static_cast<strata::row_id>(r), me, static_cast<long>(me + 1));
              co_await w.clock();
            }
            for (std::uint32_t k = 0; k < rounds; ++k) {
              auto m = co_await w.receive<work>();
              if (m.value.round != k || !m.from.is_coordinator()) bad.add("work out of order");
              w.send(strata::peer::coordinator(), answer{k, m.value.x * (me + 1)});
            }
            co_await w.barrier();
            const auto& row = co_await w.get(t, 0);
            for (strata::col_id k = 0; k < P; ++k)
              if (row.get(k) != static_cast<long>(run) * o.clocks * (k + 1)) bad.add("read after barrier misses updates");
            const long all = co_await w.all_reduce(static_cast<long>(me + 1), strata::sum{});
            if (all != static_cast<long>(P) * (P + 1) / 2) bad.add("all_reduce gave " + std::to_string(all));
            const auto names = co_await w.all_gather(std::to_string(me));
            for (std::uint32_t k = 0; k < P; ++k)
              if (names.size() != P || names[k] != std::to_string(k)) bad.add("all_gather out of order");
          },
          [&](strata::coordinator& c) -> strata::task<> {
            for (std::uint32_t k = 0; k < rounds; ++k) {
              c.broadcast(work{k, static_cast<std::int64_t>(k + 1)});
              std::int64_t sum = 0;
              for (std::uint32_t i = 0; i < c.num_workers(); ++i) {
                auto a = co_await c.receive<answer>();
                if (a.value.round != k) bad.add("answer of another round");
                sum += a.value.y;
              }
              if (sum != static_cast<std::int64_t>(k + 1) * P * (P + 1) / 2) bad.add("coordinator sum " + std::to_string(sum));
            }
          });
      for (int r = 0; r < o.rows; ++r) {
        const counts row = sys.row(t, static_cast<strata::row_id>(r));  // local or fetched from its process
        for (std::uint32_t k = 0; k < P; ++k)
          if (row.get(k) != static_cast<long>(run) * o.clocks * (k + 1))
            bad.add("run " + std::to_string(run) + ": row " + std::to_string(r) + " column " + std::to_string(k) + " is " +
                    std::to_string(row.get(k)));
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "ERROR: " << e.what() << std::endl;
    return 1;
  }
  std::cout << "RESULT rank=" << rank << " scenario=runtime runs=2" << (bad.count ? " VIOLATIONS" : " ok") << std::endl;
  if (bad.count) {
    std::cerr << "VIOLATION (" << bad.count << "): " << bad.first << std::endl;
    return 2;
  }
  return 0;
}

template <class Transport>
int run_scenario(const options& o, std::uint32_t nodes, typename Transport::config tc, strata::node_id rank) {
  if (o.scenario == "runtime") return run_runtime<Transport>(o, nodes, std::move(tc), rank);
  return run<Transport>(o, nodes, std::move(tc), rank);
}

int dispatch_transport(const options& o) {
  if (o.transport == "inproc") {
    const std::uint32_t nodes = o.cluster.size.value_or(1);
    return run_scenario<strata::inproc>(o, nodes, {}, 0);
  }
#if STRATA_HAVE_MPI
  if (o.transport == "mpi") {
    if (o.mpi_init_single) MPI_Init(nullptr, nullptr);  // as a program might: MPI_THREAD_SINGLE, too little for strata
    strata::mpi_cluster mc;
    try {
      mc = strata::make_mpi_cluster(o.cluster);
    } catch (const std::exception& e) {
      std::cerr << "ERROR: " << e.what() << std::endl;
      return 1;
    }
    return run_scenario<strata::mpi>(o, mc.size, mc.mpi_config, mc.rank);
  }
#endif
#if STRATA_HAVE_SIMGRID
  if (o.transport == "sim") {
    strata::simulated::config sc;
    try {
      sc.platform = strata::sim::load_platform(o.platform);
      sc.cpu = strata::sim::parse_cpu_charge(o.sim_cpu);
      sc.max_lanes = o.sim_max_lanes;
      return run_scenario<strata::simulated>(o, o.cluster.size.value_or(1), std::move(sc), 0);
    } catch (const std::exception& e) {
      std::cerr << "ERROR: " << e.what() << std::endl;
      return 1;
    }
  }
#endif
  if (o.transport != "tcp") {
    std::cerr << "ERROR: --transport " << o.transport << ": not one of tcp | inproc"
#if STRATA_HAVE_MPI
              << " | mpi"
#endif
#if STRATA_HAVE_SIMGRID
              << " | sim"
#endif
#if !STRATA_HAVE_MPI
              << " (this build has no MPI: install libopenmpi-dev and reconfigure)"
#endif
              << std::endl;
    return 1;
  }
  strata::cluster cl;
  try {
    cl = strata::make_cluster(o.cluster);
  } catch (const std::exception& e) {
    std::cerr << "ERROR: " << e.what() << std::endl;
    return 1;
  }
  return run_scenario<strata::tcp>(o, cl.size, cl.tcp_config, cl.rank);
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app("ps_node: one process of a deterministic strata run (tests of the tcp transport)");
  app.add_option("--model", o.model, "bsp | ssp2 | essp2 | async | vap (a name of strata::visit_consistency, then the staleness)");
  app.add_option("--transport", o.transport, "tcp | inproc | mpi (under mpirun; when built with MPI) | sim (with SimGrid: --size nodes on --platform)");
  app.add_option("--platform", o.platform, "sim: the platform file (examples/platforms)");
  app.add_option("--sim-cpu", o.sim_cpu, "sim: measured | none (what the parties' compute costs)");
  app.add_option("--sim-max-lanes", o.sim_max_lanes, "sim: transfers in flight at once (0: as many as the process's memory mappings allow)");
  app.add_option("--wpn", o.wpn, "workers per process");
  app.add_option("--clocks", o.clocks, "clocks per worker");
  app.add_option("--rows", o.rows, "rows in the table");
  app.add_option("--seed", o.seed, "plan seed");
  app.add_option("--extra-width", o.extra_width, "extra (unused) columns per row");
  app.add_option("--sleep-ms", o.sleep_ms, "sleep per clock");
  app.add_option("--throw-at", o.throw_at, "the first local worker throws at this clock");
  app.add_option("--scenario", o.scenario, "plan (seeded workload) | runtime (roles, messages, collectives, repeated runs)");
  app.add_flag("--mpi-init-single", o.mpi_init_single, "initialise MPI with MPI_Init before strata does (--transport mpi)");
  strata::add_checkpoint_options(app, o.checkpoint);  // scenario plan only
  strata::add_cluster_options(app, o.cluster);
  CLI11_PARSE(app, argc, argv);
  try {
    // "essp2" = essp with staleness 2: the name part maps onto a policy in the library.
    o.parsed = strata::model_name::parse(o.model);
  } catch (const std::exception& e) {
    std::cerr << "ERROR: --model " << o.model << ": " << e.what() << std::endl;
    return 1;
  }
  return dispatch_transport(o);
}
