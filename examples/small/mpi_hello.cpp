// strata inside an MPI program, one screen: the program initialises MPI itself, runs a strata system
// over MPI (one worker per rank adds to a shared row; rank 0's coordinator greets every worker),
// then goes on with its own MPI calls. strata's traffic has a communicator of its own.
//
//   mpirun -n 2 build/examples/small/strata_mpi_hello
#include <strata/strata.hpp>
#include <strata/transport/mpi.hpp>

#include <cstdio>
#include <string>

struct greeting {
  std::string text;
  template <class Ar>
  void serialize(Ar& ar) { ar(text); }
};

int main(int argc, char** argv) {
  int provided = 0;  // strata's progress thread calls MPI from a thread of its own: SERIALIZED at least
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long sum = 0;
  {
    const auto n = static_cast<std::uint32_t>(size);
    strata::system<strata::ssp<1>, strata::mpi> sys({.nodes = n, .workers_per_node = 1}, strata::mpi::config{});
    auto t = sys.add_table<strata::dense_row<long>>(n);
    sys.run(
        [&](strata::worker& w) -> strata::task<> {
          auto hello = co_await w.receive<greeting>();
          std::printf("rank %d: %s\n", rank, hello.value.text.c_str());
          co_await w.inc(t, 0, w.id(), 1L);
          co_await w.clock();
          co_await w.barrier();
        },
        [&](strata::coordinator& c) -> strata::task<> {
          for (strata::worker_id w = 0; w < c.num_workers(); ++w) c.send(strata::peer::worker(w), greeting{"hello, worker " + std::to_string(w)});
          co_return;
        });
    const auto row = sys.row(t, 0);  // any row, from any rank
    for (strata::col_id k = 0; k < n; ++k) sum += row.get(k);
  }  // the system (and its transport) ends here: MPI is the program's again
  long total = 0;
  MPI_Allreduce(&sum, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  std::printf("rank %d: row 0 sums to %ld, %ld over all ranks\n", rank, sum, total);
  MPI_Finalize();
  return total == static_cast<long>(size) * size ? 0 : 1;
}
