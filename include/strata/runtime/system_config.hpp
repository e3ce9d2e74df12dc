#pragma once
/// \file What a user gives a run: its shape and bounds (`system_config`) and its checkpoints
/// (`checkpoint_config`, with the command-line options that fill it).
#include <cstddef>
#include <cstdint>
#include <string>

#include <strata/core/ids.hpp>

namespace strata {

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

/// Shape and bounds of a run, given by the user.
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

}  // namespace strata
