#pragma once
/// \file Pinning a thread to one CPU (system_config::pin_workers).
///
/// Why: with as many busy worker threads as CPUs, the kernel now and then runs two of them on one
/// CPU for a scheduler tick or more (4 ms at HZ=250) before it moves one away. Under a bounded
/// staleness model every other worker then waits at the bound for the one left behind. On the
/// 2-core development VM, 2-worker MF runs to RMSE 0.90 took 16 ms in most runs and 25-43 ms in
/// about a third of them, in steps of a tick; with each worker on its own CPU the slow runs were gone.
/// Linux only; elsewhere nothing is pinned.
#include <cstddef>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace strata {

#if defined(__linux__)
namespace detail {
/// Sets the calling thread's mask to `set`; false when the system refuses.
inline bool set_this_thread_mask(const cpu_set_t& set) noexcept {
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}
}  // namespace detail
#endif

/// The CPUs the calling thread may run on, in increasing order; empty where unknown. Threads it
/// starts inherit them: on the thread that starts a system, the CPUs its workers may use.
inline std::vector<int> this_thread_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
#endif
  return cpus;
}

/// Restricts the calling thread to `cpus` (threads it starts afterwards inherit them); false when
/// the list is empty, names a CPU out of range, or the system refuses (the thread is left as it was).
inline bool set_this_thread_cpus(const std::vector<int>& cpus) {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE) return false;
    CPU_SET(c, &set);
  }
  return !cpus.empty() && detail::set_this_thread_mask(set);
#else
  (void)cpus;
  return false;
#endif
}

/// Restricts the calling thread to CPU `cpu`; false when the system refuses (the thread is left as it was).
/// It allocates nothing (so it is not set_this_thread_cpus({cpu})): a worker thread calls it first
/// thing, before its heap is set up for huge pages (system.hpp, run_ctx), and one small allocation
/// before that made 2-worker MF runs 8% slower (benchmarks/results/perf/REPORT.md).
inline bool pin_this_thread(int cpu) {
#if defined(__linux__)
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return detail::set_this_thread_mask(set);
#else
  (void)cpu;
  return false;
#endif
}

/// The CPU for the worker with global id `worker` when `local_workers` workers share this process
/// and `cpus` are the CPUs it may use: cpus[worker mod |cpus|] when the workers fill those CPUs
/// exactly, so that one process's workers (consecutive ids) get one CPU each; otherwise -1 (do not
/// pin). With more workers than CPUs the kernel's balancing does better than any fixed placement;
/// with fewer, pinning would put every job started beside this one (each with its worker 0) on the
/// same first CPUs while others idle. A job confined by `taskset` to as many CPUs as it has workers
/// is pinned within them.
inline int worker_cpu(std::size_t worker, std::size_t local_workers, const std::vector<int>& cpus) noexcept {
  if (cpus.empty() || local_workers != cpus.size()) return -1;
  return cpus[worker % cpus.size()];
}

}  // namespace strata
