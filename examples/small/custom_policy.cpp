// A consistency policy that is none of the five built-in ones: SSP(2) reads, with the server
// pushing changed rows to their readers only at every third advance of the global minimum clock
// (ESSP pushes at every one). Written against strata::consistency_model's hooks alone.
#include <strata/strata.hpp>

#include <cstdio>
#include <limits>

struct push_every_third {
  using consistency_tag = void;
  static constexpr int staleness = 2;                                         // reads: SSP(2)
  static constexpr strata::push_mode push = strata::push_mode::on_min_clock;  // eager, but ...
  static constexpr bool push_at(strata::clock_type new_min) { return new_min % 3 == 0; }  // ... every 3rd clock
  static constexpr bool exact_snapshots = false;
  static constexpr double value_bound = std::numeric_limits<double>::infinity();
  static constexpr const char* name() noexcept { return "push_every_third"; }
};

int main() {
  strata::system<push_every_third> sys({.nodes = 2, .workers_per_node = 2});
  auto t = sys.add_table<strata::dense_row<long>>(4);
  sys.run([&](strata::worker& w) -> strata::task<> {
    for (int c = 0; c < 30; ++c) {
      const auto& row = co_await w.get(t, 0);  // holds every update of clocks <= c - 3
      if (row.get((w.id() + 1) % 4) < c - 2) throw std::runtime_error("staleness bound broken");
      co_await w.inc(t, 0, w.id(), 1L);
      co_await w.clock();
    }
  });
  const auto st = sys.total_stats();
  std::printf("push_every_third: %llu reads, mean staleness %.2f, max %lld (bound 2); row 0 = %ld %ld %ld %ld\n",
              static_cast<unsigned long long>(st.reads), st.min_clock_staleness.stats().mean(),
              static_cast<long long>(st.min_clock_staleness.stats().max()), sys.row(t, 0).get(0), sys.row(t, 0).get(1),
              sys.row(t, 0).get(2), sys.row(t, 0).get(3));
  return st.min_clock_staleness.stats().max() <= 2 && sys.row(t, 0).get(3) == 30 ? 0 : 1;
}
