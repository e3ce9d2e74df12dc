// The mpi transport against raw MPI, and strata's tcp transport against raw TCP, between the same
// two processes in the same run: `mpirun -n 2 strata_bench_mpi` (two ranks on one machine: MPI
// goes over shared memory, TCP over loopback). Reported as ratios against the raw baseline of the
// same network; never pass/fail on time. Each figure is the best of 3; the four columns of a
// line are measured one after the other, so they see the same machine.
//
//  1. Bulk row sync, pipelined: rank 0 sends batches of B bytes (a wire::flush), rank 1 answers
//     each with the same B bytes (a wire::rows), a window of batches in flight. Raw: MPI_Send /
//     MPI_Recv echo of B-byte messages with the same window; a raw TCP socket echo likewise.
//  2. Row sync through the whole runtime, lock-step: system<bsp, T>, one worker per process; per
//     clock each worker adds a B-byte row held by the other process, clocks and reads it back.
//     Raw: a B-byte ping-pong (send, receive the echo) per round.
//  3. get() that misses the cache: a 64-byte row held by the other process, one get per clock;
//     raw: a 64-byte ping-pong. Median round trip.
// This is a program of its own, not a column of strata_bench_tcp: a transport over MPI needs two
// processes started by mpirun, while strata_bench_tcp runs both ends in one process.
#include <strata/strata.hpp>
#include <strata/transport/mpi.hpp>
#include <strata/transport/tcp.hpp>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

#include "bench_programs.hpp"
#include "bench_util.hpp"

namespace {

using strata_bench::best_of;
using strata_bench::clk;
using strata_bench::secs;
using atcp = asio::ip::tcp;

int rank_ = 0;
std::uint16_t ports_[3] = {0, 0, 0};  // rank 0's and rank 1's strata tcp ports, rank 1's raw echo port

/// Ports free on this machine a moment ago, chosen by rank 0 and sent to rank 1 (MPI_Bcast).
void share_ports() {
  if (rank_ == 0) {
    asio::io_context io;
    std::vector<atcp::acceptor> keep;
    for (auto& p : ports_) {
      keep.emplace_back(io, atcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
      p = keep.back().local_endpoint().port();
    }
  }
  MPI_Bcast(ports_, 3, MPI_UINT16_T, 0, MPI_COMM_WORLD);
}

// ---- raw MPI (called while no mpi transport runs: every MPI call is on this thread) ----------

/// Echo of `count` B-byte messages, at most `window` in flight. Seconds on rank 0.
double raw_mpi_stream(std::size_t bytes, int count, int window) {
  std::vector<char> out(bytes, 'x'), in(bytes);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = clk::now();
  if (rank_ == 0) {  // non-blocking sends (a blocking one would wait for rank 1, itself blocked sending an echo)
    std::vector<MPI_Request> sends(static_cast<std::size_t>(window), MPI_REQUEST_NULL);
    int received = 0;
    for (int i = 0; i < count; ++i) {
      if (i - received >= window) {
        MPI_Recv(in.data(), static_cast<int>(bytes), MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ++received;
      }
      MPI_Request& r = sends[static_cast<std::size_t>(i % window)];
      MPI_Wait(&r, MPI_STATUS_IGNORE);  // its reply has come back, so it has long completed
      MPI_Isend(out.data(), static_cast<int>(bytes), MPI_BYTE, 1, 0, MPI_COMM_WORLD, &r);
    }
    for (; received < count; ++received) MPI_Recv(in.data(), static_cast<int>(bytes), MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Waitall(window, sends.data(), MPI_STATUSES_IGNORE);
  } else {
    for (int i = 0; i < count; ++i) {
      MPI_Recv(in.data(), static_cast<int>(bytes), MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(in.data(), static_cast<int>(bytes), MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
  }
  return secs(t0, clk::now());
}

/// Ping-pong of B bytes: seconds per round trip (mean over `rounds`; `median`: the median).
double raw_mpi_pingpong(std::size_t bytes, int rounds, bool median) {
  std::vector<char> buf(bytes, 'x');
  std::vector<double> rtt;
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = clk::now();
  for (int i = 0; i < rounds; ++i) {
    const auto r0 = clk::now();
    if (rank_ == 0) {
      MPI_Send(buf.data(), static_cast<int>(bytes), MPI_BYTE, 1, 2, MPI_COMM_WORLD);
      MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), static_cast<int>(bytes), MPI_BYTE, 0, 2, MPI_COMM_WORLD);
    }
    rtt.push_back(secs(r0, clk::now()));
  }
  const double mean = secs(t0, clk::now()) / rounds;
  std::sort(rtt.begin(), rtt.end());
  return median ? rtt[rtt.size() / 2] : mean;
}

// ---- raw TCP between the two processes -------------------------------------------------------

/// A connected loopback socket: rank 1 listens on ports_[2], rank 0 connects. Blocking, no delay.
struct raw_link {
  asio::io_context io;
  atcp::socket sock{io};
  raw_link() {
    if (rank_ == 1) {
      atcp::acceptor acc(io, atcp::endpoint(asio::ip::make_address("127.0.0.1"), ports_[2]));
      MPI_Barrier(MPI_COMM_WORLD);  // listening
      acc.accept(sock);
    } else {
      MPI_Barrier(MPI_COMM_WORLD);
      sock.connect(atcp::endpoint(asio::ip::make_address("127.0.0.1"), ports_[2]));
    }
    sock.set_option(atcp::no_delay(true));
  }
};

double raw_tcp_stream(std::size_t bytes, int count, int window) {
  raw_link l;
  std::vector<char> out(bytes, 'x'), in(bytes);
  const auto t0 = clk::now();
  if (rank_ == 1) {
    for (int i = 0; i < count; ++i) {
      asio::read(l.sock, asio::buffer(in));
      asio::write(l.sock, asio::buffer(in));
    }
    return 0;
  }
  std::counting_semaphore<1 << 20> slots(window);
  std::thread reader([&] {
    std::vector<char> back(bytes);
    for (int i = 0; i < count; ++i) {
      asio::read(l.sock, asio::buffer(back));
      slots.release();
    }
  });
  for (int i = 0; i < count; ++i) {
    slots.acquire();
    asio::write(l.sock, asio::buffer(out));
  }
  reader.join();
  return secs(t0, clk::now());
}

double raw_tcp_pingpong(std::size_t bytes, int rounds, bool median) {
  raw_link l;
  std::vector<char> buf(bytes, 'x');
  std::vector<double> rtt;
  const auto t0 = clk::now();
  for (int i = 0; i < rounds; ++i) {
    const auto r0 = clk::now();
    if (rank_ == 0) {
      asio::write(l.sock, asio::buffer(buf));
      asio::read(l.sock, asio::buffer(buf));
    } else {
      asio::read(l.sock, asio::buffer(buf));
      asio::write(l.sock, asio::buffer(buf));
    }
    rtt.push_back(secs(r0, clk::now()));
  }
  const double mean = secs(t0, clk::now()) / rounds;
  std::sort(rtt.begin(), rtt.end());
  return median ? rtt[rtt.size() / 2] : mean;
}

// ---- strata, over either transport ----------------------------------------------------------

strata::tcp::config tcp_cfg() {
  strata::tcp::config c;
  c.rank = static_cast<strata::node_id>(rank_);
  c.peers = {{"127.0.0.1", ports_[0]}, {"127.0.0.1", ports_[1]}};
  c.connect_timeout = std::chrono::milliseconds(10000);
  return c;
}
/// The mpi transport's polling (mpi_settings::spin, max_sleep) from STRATA_BENCH_SPIN_US and
/// STRATA_BENCH_MAX_SLEEP_US when set, for tuning runs; the defaults otherwise.
strata::mpi::config mpi_cfg() {
  strata::mpi::config c;
  if (const char* v = std::getenv("STRATA_BENCH_SPIN_US")) c.spin = std::chrono::microseconds(std::atol(v));
  if (const char* v = std::getenv("STRATA_BENCH_MAX_SLEEP_US")) c.max_sleep = std::chrono::microseconds(std::atol(v));
  return c;
}
template <class T>
typename T::config config_of() {
  if constexpr (std::is_same_v<T, strata::tcp>) return tcp_cfg();
  else return mpi_cfg();
}

/// Bulk stream through transport T (no runtime): the best of 3 runs, seconds on rank 0.
template <class T>
double strata_stream(std::size_t bytes, int count, int window) {
  constexpr std::uint64_t done_seq = std::numeric_limits<std::uint64_t>::max();
  T t(config_of<T>());
  strata_bench::stream_slots slots(window);
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  if (rank_ == 0) {
    t.bind({0, 1}, [&](strata::endpoint, strata::wire::message&&) { slots.release(); });
  } else {
    t.bind({1, 0}, [&](strata::endpoint, strata::wire::message&& m) {
      auto& f = std::get<strata::wire::flush>(m);
      if (f.seq == done_seq) {
        std::lock_guard lk(mu);
        done = true;
        cv.notify_all();
        return;
      }
      t.send({1, 0}, {0, 1}, strata_bench::echo_of(std::move(f)));
    });
  }
  t.start(strata::run_shape{2, 1, "bench"});
  double best = 0;
  if (rank_ == 0) {
    best = best_of(3, [&] { return strata_bench::stream_flushes(t, slots, bytes, count, window); });
    strata::wire::flush f;
    f.seq = done_seq;
    t.send({0, 1}, {1, 0}, std::move(f));
  } else {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return done; });
  }
  t.stop();
  return best;
}

/// One system<bsp, T> per process (one worker each) running `program`.
template <class T, class F>
void run_system(std::size_t width, F program) {
  strata::system<strata::bsp, T> sys({.nodes = 2, .workers_per_node = 1}, config_of<T>());
  auto t = sys.template add_table<strata::dense_row<float>>(width);
  sys.run([&](strata::worker& w) -> strata::task<> { co_await program(w, t); });
}

/// Lock-step row sync through the runtime: seconds per clock (rank 0's worker).
template <class T>
double strata_lockstep(std::size_t bytes, int rounds) {
  return strata_bench::lockstep_seconds(bytes, rounds, [](std::size_t width, auto program) { run_system<T>(width, program); });
}

/// get() missing the cache: median seconds per get of a 64-byte row held by the other process.
template <class T>
double strata_get_miss_median(int rounds) {
  return strata_bench::get_miss_median(rounds, [](std::size_t width, auto program) { run_system<T>(width, program); });
}

}  // namespace

int main() try {
  const auto& world = strata::mpi_world();
  rank_ = static_cast<int>(world.rank);
  if (world.size != 2) {
    if (rank_ == 0) std::fprintf(stderr, "strata_bench_mpi: run it as mpirun -n 2 strata_bench_mpi (got %u ranks)\n", world.size);
    return 1;
  }
  share_ports();
  auto say = [](auto... a) {
    if (rank_ == 0) std::printf(a...);
  };
  say("strata mpi vs tcp benchmarks, 2 ranks on %s (MPI: shared memory; TCP: loopback); ratios against the raw\n"
      "baseline of the same network, measured in this run, best of 3\n\n", world.host.c_str());
  say("1. bulk row sync, pipelined (flush of B bytes up, rows of B bytes back), MB/s one way\n");
  say("%8s %7s %6s %9s %10s %9s %10s %9s %9s %9s\n", "batch", "batches", "window", "raw MPI", "strata mpi", "raw TCP",
      "strata tcp", "mpi/raw", "tcp/raw", "mpi/tcp");
  for (std::size_t bytes : {std::size_t{1} << 10, std::size_t{64} << 10, std::size_t{1} << 20}) {
    const int count = static_cast<int>(std::clamp<std::size_t>((std::size_t{256} << 20) / bytes, 200, 40000));
    const int window = static_cast<int>(std::max<std::size_t>(4, (std::size_t{4} << 20) / bytes));
    const double rm = best_of(3, [&] { return raw_mpi_stream(bytes, count, window); });
    const double sm = strata_stream<strata::mpi>(bytes, count, window);
    const double rt = best_of(3, [&] { return raw_tcp_stream(bytes, count, window); });
    const double st = strata_stream<strata::tcp>(bytes, count, window);
    const double mb = static_cast<double>(bytes) * count / 1e6;
    say("%7zuK %7d %6d %9.0f %10.0f %9.0f %10.0f %9.2f %9.2f %9.2f\n", bytes >> 10, count, window, mb / rm, mb / sm, mb / rt,
        mb / st, rm / sm, rt / st, st / sm);
  }
  say("\n2. row sync through system<bsp, T>, lock-step (inc_row + clock + get per round, both ways), us per round\n");
  say("%8s %7s %9s %10s %9s %10s %9s %9s %9s\n", "row", "rounds", "raw MPI", "strata mpi", "raw TCP", "strata tcp", "mpi/raw",
      "tcp/raw", "tcp/mpi");
  for (std::size_t bytes : {std::size_t{1} << 10, std::size_t{64} << 10, std::size_t{1} << 20}) {
    const int rounds = bytes >= (std::size_t{1} << 20) ? 100 : 400;
    const double rm = best_of(3, [&] { return raw_mpi_pingpong(bytes, rounds, false); });
    const double sm = best_of(3, [&] { return strata_lockstep<strata::mpi>(bytes, rounds); });
    const double rt = best_of(3, [&] { return raw_tcp_pingpong(bytes, rounds, false); });
    const double st = best_of(3, [&] { return strata_lockstep<strata::tcp>(bytes, rounds); });
    say("%7zuK %7d %9.1f %10.1f %9.1f %10.1f %9.2f %9.2f %9.2f\n", bytes >> 10, rounds, rm * 1e6, sm * 1e6, rt * 1e6, st * 1e6,
        sm / rm, st / rt, st / sm);
  }
  say("\n3. get() missing the cache (64-byte row on the other process) vs a raw 64-byte ping-pong, median us\n");
  {
    const int rounds = 2000;
    const double rm = best_of(3, [&] { return raw_mpi_pingpong(64, rounds, true); });
    const double sm = best_of(3, [&] { return strata_get_miss_median<strata::mpi>(rounds); });
    const double rt = best_of(3, [&] { return raw_tcp_pingpong(64, rounds, true); });
    const double st = best_of(3, [&] { return strata_get_miss_median<strata::tcp>(rounds); });
    say("%9s %10s %9s %10s %9s %9s %9s\n", "raw MPI", "strata mpi", "raw TCP", "strata tcp", "mpi/raw", "tcp/raw", "tcp/mpi");
    say("%9.1f %10.1f %9.1f %10.1f %9.2f %9.2f %9.2f\n", rm * 1e6, sm * 1e6, rt * 1e6, st * 1e6, sm / rm, st / rt, st / sm);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "strata_bench_mpi: %s\n", e.what());
  return 1;
}
