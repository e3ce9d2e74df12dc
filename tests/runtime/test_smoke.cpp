#include <doctest/doctest.h>

#include <strata/strata.hpp>

TEST_CASE("smoke: two nodes, two workers each, BSP, counts add up") {
  strata::system<strata::bsp> sys({.nodes = 2, .workers_per_node = 2});
  auto t = sys.add_table<strata::dense_row<long>>(4);
  sys.run([&](strata::worker& w) -> strata::task<> {
    for (int it = 0; it < 5; ++it) {
      const auto& r = co_await w.get(t, 1);
      CHECK(r.get(0) == it * 4 + 0 * 0 + (it == 0 ? 0 : 0));
      co_await w.inc(t, 1, 0, 1L);
      co_await w.clock();
    }
  });
  CHECK(sys.row(t, 1).get(0) == 20);
}
