#pragma once
/// \file The MPI process strata runs in: `mpi_world()` initialises MPI once (or adopts the
/// caller's initialisation), checks the thread level, and returns this process's rank, the world
/// size and its host name (the other ranks' hosts arrive in the transport's hello). Needs <mpi.h>
/// (Debian libopenmpi-dev; CMake: link strata::mpi, Meson: the mpi feature).
///
/// Thread level. The mpi transport makes every MPI call from one progress thread of its own
/// (transport/mpi.hpp says why), so it needs MPI_THREAD_SERIALIZED: calls from several threads,
/// never at once. strata asks for it when it initialises MPI itself; a program that initialised
/// MPI before with less (MPI_Init gives MPI_THREAD_SINGLE) is refused with a sentence that says so.
///
/// Ending. When strata initialised MPI it also ends it, at exit: MPI_Finalize when every mpi
/// transport of the process finished its run cleanly (its shutdown barrier completed), else
/// MPI_Abort, because MPI_Finalize waits for every rank and a failed run's peers may never come.
// MPI's C API only: Open MPI's and MPICH's mpi.h otherwise pull in their deprecated C++ bindings
// (which do not compile warning-free) when a C++ compiler includes them.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include <strata/core/error.hpp>
#include <strata/core/ids.hpp>

namespace strata {

/// This process in its MPI world.
struct mpi_world_info {
  node_id rank = 0;
  std::uint32_t size = 1;
  std::string host;            ///< MPI_Get_processor_name
  int thread_level = 0;        ///< MPI_THREAD_SINGLE .. MPI_THREAD_MULTIPLE, as provided
  bool initialised_here = false;  ///< strata called MPI_Init_thread (and ends MPI at exit)
};

namespace detail {
/// Process-wide MPI bookkeeping of the mpi transport.
struct mpi_process_state {
  std::mutex mu;
  bool ready = false;
  mpi_world_info info;
  std::atomic<int> active{0};     ///< mpi transports started and not yet stopped
  std::atomic<bool> dirty{false};  ///< a run started and did not end cleanly: abort MPI at exit
};
inline mpi_process_state& mpi_state() {
  static mpi_process_state s;
  return s;
}

inline std::string mpi_thread_level_name(int level) {
  if (level == MPI_THREAD_SINGLE) return "MPI_THREAD_SINGLE";
  if (level == MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  if (level == MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  if (level == MPI_THREAD_MULTIPLE) return "MPI_THREAD_MULTIPLE";
  return "thread level " + std::to_string(level);
}

/// The text of an MPI error code.
inline std::string mpi_error_text(int rc) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(buf, static_cast<std::size_t>(len));
}

/// Whether this process was started by an MPI launcher (mpirun/mpiexec, srun with PMI/PMIx): one
/// of the variables that Open MPI, MPICH/Hydra or Slurm's PMI plugins give every rank.
inline bool mpi_launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "PMI_FD", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

/// At exit, when strata initialised MPI: finalise after clean runs, abort after a failed one.
inline void mpi_end_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  std::fflush(stdout);
  std::fflush(stderr);
  if (mpi_state().dirty.load()) MPI_Abort(MPI_COMM_WORLD, 1);
  else MPI_Finalize();
}
}  // namespace detail

/// Initialises MPI once per process (MPI_THREAD_SERIALIZED), or adopts the program's own
/// initialisation, and returns this process's rank and the world size. Throws strata::error with a
/// sentence naming the cause when the process was not started by an MPI launcher (and MPI is not
/// initialised), when MPI was already finalised, or when the thread level is too low.
inline const mpi_world_info& mpi_world() {
  auto& st = detail::mpi_state();
  std::lock_guard lk(st.mu);
  if (st.ready) return st.info;
  int finalized = 0, initialized = 0;
  MPI_Finalized(&finalized);
  if (finalized)
    throw error(errc::bad_input, "mpi transport: MPI has already been finalised in this process (MPI_Finalize was called); "
                                 "a run over MPI must start before it");
  MPI_Initialized(&initialized);
  mpi_world_info in;
  if (!initialized) {
    if (!detail::mpi_launched())
      throw error(errc::bad_input,
                  "mpi transport: this process was not started by an MPI launcher (no OMPI_COMM_WORLD_SIZE, PMIX_RANK or "
                  "PMI_RANK in its environment) and MPI is not initialised: start it as mpirun -n N program ... "
                  "(or srun --mpi=pmix), or use --transport tcp");
    int provided = 0;
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) throw error(errc::bad_input, "mpi transport: MPI_Init_thread failed: " + detail::mpi_error_text(rc));
    in.initialised_here = true;
    in.thread_level = provided;
    std::atexit(detail::mpi_end_at_exit);
  } else {
    MPI_Query_thread(&in.thread_level);
  }
  if (in.thread_level < MPI_THREAD_SERIALIZED)
    throw error(errc::bad_input,
                "mpi transport: MPI runs at " + detail::mpi_thread_level_name(in.thread_level) +
                    ", and strata's progress thread calls MPI from a thread of its own, which needs MPI_THREAD_SERIALIZED: " +
                    (in.initialised_here ? std::string("this MPI library does not provide it")
                                         : std::string("initialise MPI with MPI_Init_thread(..., MPI_THREAD_SERIALIZED, ...) "
                                                       "or leave MPI to strata")));
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  in.rank = static_cast<node_id>(rank);
  in.size = static_cast<std::uint32_t>(size);
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  if (MPI_Get_processor_name(name, &len) == MPI_SUCCESS) in.host.assign(name, static_cast<std::size_t>(len));
  st.info = in;
  st.ready = true;
  return st.info;
}

}  // namespace strata
