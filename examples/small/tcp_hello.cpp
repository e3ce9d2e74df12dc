// Two processes over TCP, one screen: each runs one worker; the workers add to a shared row,
// meet in a barrier, and the coordinator (on rank 0) greets every worker with an app message.
//
//   scripts/launch.sh -n 2 -- build/examples/small/strata_tcp_hello
#include <strata/runtime/cluster.hpp>
#include <strata/strata.hpp>
#include <strata/transport/tcp.hpp>

#include <cstdio>
#include <string>

struct greeting {
  std::string text;
  template <class Ar>
  void serialize(Ar& ar) { ar(text); }
};

int main() {
  const strata::cluster cl = strata::make_cluster({});  // rank and size from launch.sh, mpirun or srun
  strata::system<strata::ssp<1>, strata::tcp> sys({.nodes = cl.size, .workers_per_node = 1}, cl.tcp_config);
  auto t = sys.add_table<strata::dense_row<long>>(cl.size);
  sys.run(
      [&](strata::worker& w) -> strata::task<> {
        auto hello = co_await w.receive<greeting>();
        std::printf("rank %u: %s (from %s)\n", cl.rank, hello.value.text.c_str(), hello.from.describe().c_str());
        co_await w.inc(t, 0, w.id(), 1L);
        co_await w.clock();
        co_await w.barrier();
      },
      [&](strata::coordinator& c) -> strata::task<> {
        for (strata::worker_id w = 0; w < c.num_workers(); ++w)
          c.send(strata::peer::worker(w), greeting{"hello, worker " + std::to_string(w)});
        co_return;
      });
  const auto row = sys.row(t, 0);  // any row, from any process
  long sum = 0;
  for (strata::col_id k = 0; k < cl.size; ++k) sum += row.get(k);
  std::printf("rank %u: row 0 sums to %ld\n", cl.rank, sum);
  return sum == static_cast<long>(cl.size) ? 0 : 1;
}
