#pragma once
/// \file The bootstrap of a run over MPI: rank and world size are MPI_COMM_WORLD's; the cluster
/// flags that also apply (--size and --node-rank must agree with MPI's; --max-frame,
/// --connect-timeout-ms, --peer-timeout-ms) carry over into the mpi transport's settings. Needs
/// <mpi.h> (CMake: link strata::mpi).
#include <string>

#include <strata/core/error.hpp>
#include <strata/runtime/cluster.hpp>
#include <strata/transport/mpi.hpp>

namespace strata {

/// The resolved bootstrap of an MPI run.
struct mpi_cluster {
  node_id rank = 0;
  std::uint32_t size = 1;
  mpi::config mpi_config;  ///< pass to system<C, mpi>'s constructor
};

/// Initialises MPI (mpi_world) and checks the flags against it. Throws strata::error(bad_input)
/// with a sentence naming the cause: not started by an MPI launcher, a thread level too low, or a
/// --size / --node-rank that disagrees with MPI's.
inline mpi_cluster make_mpi_cluster(const cluster_options& o) {
  const auto& w = mpi_world();
  if (std::string d = launch_disagreement(o, w.rank, w.size, "MPI_COMM_WORLD under the MPI launcher"); !d.empty())
    throw error(errc::bad_input, d);
  mpi_cluster c;
  c.rank = w.rank;
  c.size = w.size;
  c.mpi_config.max_frame = o.max_frame;
  c.mpi_config.connect_timeout = o.connect_timeout;
  c.mpi_config.peer_timeout = o.peer_timeout;
  return c;
}

}  // namespace strata
