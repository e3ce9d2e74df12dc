#pragma once
/// \file The threads' side of the runtime (impl/system.ipp): the loop each shard, worker and
/// coordinator thread runs, how a party waits for a local shard's lock, and the CPU's spin-wait hint.
/// Detail: not for programs.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <strata/core/huge_pages.hpp>

namespace strata::detail {

/// The CPU's spin-wait hint (x86 pause, ARM yield): a waiting loop frees the core's resources
/// for its sibling and backs off the contended cache line.
inline void cpu_pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// True on a worker's or the coordinator's thread while it holds no shard's lock: there, a
/// message to a local shard may be handled at once (a shard's own sends are always queued, so a
/// thread never holds two shards' locks).
inline bool& may_call_shard() {
  thread_local bool on = false;
  return on;
}
/// Takes `lk`'s mutex: spins briefly, then yields between tries for a while before it sleeps on
/// it. A local shard call holds the shard's lock for a fraction of a µs to a few µs; a thread that
/// finds it taken and sleeps in the kernel costs the holder a futex wake and itself a wake-up,
/// more than the wait, most of all with more threads than cores (a BSP round's flushes and reads
/// come all at once): a BSP round of 4 workers on 2 cores took 27 µs with a plain lock and 16 µs
/// with yielding (strata_bench_core). In a 2-worker BSP round half the tries find the lock taken,
/// for about 0.3 µs: spinning with the CPU's pause instruction first (48 pauses, 1.5-2 µs here)
/// saves the system call of a yield, and took the round from 2.8-2.9 to 2.5-2.6 µs.
inline void lock_briefly_yielding(std::unique_lock<std::mutex>& lk) {
  for (int i = 0; i < 70; ++i) {
    if (lk.try_lock()) return;
    if (i < 6) {
      for (int k = 0; k < 8; ++k) cpu_pause();
    } else {
      std::this_thread::yield();
    }
  }
  lk.lock();
}

/// The calling thread's malloc heap gets huge pages, the first time per thread.
inline void advise_heap_once() {
  thread_local bool done = false;
  if (!std::exchange(done, true)) advise_thread_heap_huge_pages();
}
/// A thread's loop. A party thread (worker, coordinator) with `spin` > 0 polls its queue for up
/// to `spin` after it runs dry before it sleeps: a wake-up that arrives within that time (a BSP
/// round's last clock, a local shard's reply) costs no futex sleep and wake. With more parties
/// than cores (`yield`) it yields between polls, so a party with work gets the core (a BSP round
/// of 8 workers on 2 cores is faster with the polling too); otherwise it pauses the CPU.
///
/// A poll that comes back after more than 200 µs means the core is shared with busy threads of
/// other programs (this run's own parties give the core back within microseconds: 8 workers'
/// BSP round on 2 cores is ~25 µs): polling then costs a scheduler time slice (ms) where a
/// sleeping thread's wake-up preempts at once. With two busy processes beside it on 2 cores, a
/// 2-worker STRADS Lasso took 6.3 s yielding and 0.29 s sleeping at once. A slow poll costs ~100x
/// what a fast spin saves, so after one the thread sleeps at once for its next 256 idle periods,
/// then polls again, doubling that count at each further slow poll.
inline void run_ctx(asio::io_context& c, bool huge_page_heap, bool party = false, std::chrono::microseconds spin = {},
                    bool yield = true) {
  if (huge_page_heap) advise_heap_once();
  may_call_shard() = party;
  auto guard = asio::make_work_guard(c);
  if (!party || spin.count() <= 0) {
    c.run();
    return;
  }
  using clk = std::chrono::steady_clock;
  // After a contended spin: sleep at once for `skip` idle periods (`backoff`: 256, doubling up to
  // 65536 at each contended spin, halved after as many fast spins in a row as it counts).
  unsigned backoff = 0, skip = 0, fast = 0;
  while (!c.stopped()) {
    if (c.poll() > 0) continue;
    bool ran = false;
    if (skip > 0) {
      --skip;
    } else {
      bool contended = false;
      for (const auto until = clk::now() + spin; !ran && !c.stopped();) {
        const auto before = clk::now();
        if (before >= until) break;
        if (yield)
          std::this_thread::yield();
        else
          for (int k = 0; k < 16; ++k) cpu_pause();
        contended = clk::now() - before > std::chrono::microseconds(200);
        ran = c.poll() > 0;
        if (contended) break;
      }
      if (contended) {
        backoff = std::clamp(backoff * 2, 256u, 65536u);
        skip = backoff;
        fast = 0;
      } else if (backoff > 0 && ++fast >= backoff) {
        backoff /= 2;
        fast = 0;
      }
    }
    if (!ran) c.run_one();
  }
}

}  // namespace strata::detail
