// system_config::pin_workers: each worker thread runs on one CPU of the process's, distinct within
// the process, when the process has exactly as many workers as CPUs; otherwise (and by default)
// the threads keep the process's CPUs. Checked from inside each worker's program, on its own
// thread, with the test's thread (whose mask the system's threads inherit) confined to at most
// two CPUs so that the case is the same on every machine.
#include <doctest/doctest.h>

#include <strata/core/affinity.hpp>
#include <strata/strata.hpp>

#include <algorithm>
#include <set>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_runtime_affinity {

namespace {

/// The CPUs each worker's thread may run on, seen from its program; a run of `workers` workers.
std::vector<std::vector<int>> worker_masks(std::uint32_t workers, bool pin) {
  strata::system<strata::ssp<1>, strata::inproc> sys({.workers_per_node = workers, .pin_workers = pin});
  auto t = sys.add_table<strata::dense_row<long>>(1);
  std::vector<std::vector<int>> masks(workers);
  sys.run([&](strata::worker& w) -> strata::task<> {
    masks[w.id()] = strata::this_thread_cpus();
    co_await w.inc(t, 0, 0, 1L);  // a run that does something, pinned or not
    co_await w.clock();
  });
  CHECK(sys.row(t, 0).get(0) == static_cast<long>(workers));
  return masks;
}

/// Confines the calling thread to `cpus` for its lifetime, then gives its old mask back.
struct confined {
  std::vector<int> before = strata::this_thread_cpus();
  explicit confined(const std::vector<int>& cpus) { REQUIRE(strata::set_this_thread_cpus(cpus)); }
  ~confined() { strata::set_this_thread_cpus(before); }
};

}  // namespace

TEST_CASE("worker_cpu: one CPU per worker by worker id when the workers fill the CPUs exactly, none otherwise") {
  const std::vector<int> cpus{2, 3, 5};
  CHECK(strata::worker_cpu(0, 3, cpus) == 2);
  CHECK(strata::worker_cpu(2, 3, cpus) == 5);
  CHECK(strata::worker_cpu(3, 3, cpus) == 2);   // a second process of three workers (ids 3..5) on the same CPUs
  CHECK(strata::worker_cpu(0, 4, cpus) == -1);  // 4 workers, 3 CPUs: left to the kernel
  CHECK(strata::worker_cpu(0, 2, cpus) == -1);  // 2 workers, 3 CPUs: jobs side by side would share the first ones
  CHECK(strata::worker_cpu(0, 1, {}) == -1);    // CPUs unknown
  // Consecutive ids (one process's workers) never share a CPU.
  for (std::size_t first = 0; first < 7; ++first) {
    std::set<int> seen;
    for (std::size_t k = 0; k < cpus.size(); ++k) seen.insert(strata::worker_cpu(first + k, cpus.size(), cpus));
    CHECK(seen.size() == cpus.size());
  }
}

TEST_CASE("pin_workers puts each worker thread on its own CPU when they fill the CPUs, and leaves them alone otherwise") {
  const std::vector<int> all = strata::this_thread_cpus();
  REQUIRE(!all.empty());
  const std::vector<int> cpus(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(all.size(), 2)));
  confined c(cpus);
  REQUIRE(strata::this_thread_cpus() == cpus);
  const auto fit = static_cast<std::uint32_t>(cpus.size());
  SUBCASE("pinned: one CPU each, distinct, of the process's") {
    const auto masks = worker_masks(fit, true);
    std::set<int> used;
    for (std::uint32_t w = 0; w < fit; ++w) {
      REQUIRE(masks[w].size() == 1);
      CHECK(masks[w][0] == strata::worker_cpu(w, fit, cpus));
      CHECK(std::find(cpus.begin(), cpus.end(), masks[w][0]) != cpus.end());
      used.insert(masks[w][0]);
    }
    CHECK(used.size() == fit);
  }
  SUBCASE("more workers than CPUs: every thread keeps the process's CPUs") {
    for (const auto& m : worker_masks(fit + 1, true)) CHECK(m == cpus);
  }
  SUBCASE("fewer workers than CPUs: every thread keeps the process's CPUs") {
    if (fit > 1)
      for (const auto& m : worker_masks(fit - 1, true)) CHECK(m == cpus);
  }
  SUBCASE("off (the default): every thread keeps the process's CPUs") {
    for (const auto& m : worker_masks(fit, false)) CHECK(m == cpus);
    strata::system_config d;
    CHECK_FALSE(d.pin_workers);
  }
}

}  // namespace test_runtime_affinity
