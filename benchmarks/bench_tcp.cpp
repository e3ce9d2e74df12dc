// TCP transport benchmarks, each against a raw socket baseline measured in the same run on
// loopback, reported as ratios (a noisy machine moves both sides alike). Never pass/fail on time.
//
//  1. Bulk row sync, pipelined: a client sends batches of B bytes (a wire::flush through
//     strata::tcp) and the far side answers each with the same B bytes (a wire::rows), with the
//     same window of batches in flight; baseline: a raw Asio socket echo of B-byte batches.
//     Reported: payload bytes/s one way, and strata / raw.
//  2. Row sync through the whole runtime, lock-step: system<bsp, tcp>, 2 processes' worth of
//     systems in this process, each worker per clock adds a B-byte row owned by the other
//     process, clocks, and reads it back (BSP: one round trip); baseline: two concurrent raw
//     echo ping-pongs of B bytes. Reported: time per round, raw / strata.
//  3. get() that misses the cache: system<bsp, tcp>, a 64-byte row on the other process, one
//     get per clock (the flush and the request go out, the row comes back); baseline: a raw
//     64-byte ping-pong. Reported: median round trip, raw / strata.
// Each strata figure is measured twice in the same run, without and with a shared secret (every
// frame then carries an AES-GMAC tag, docs/security.md); "mac" is secret / plain throughput, or
// plain / secret time.
#include <strata/strata.hpp>
#include <strata/transport/tcp.hpp>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

#include "bench_programs.hpp"
#include "bench_util.hpp"

namespace {

using asio::ip::tcp;
using strata_bench::best_of;
using strata_bench::clk;
using strata_bench::secs;

std::uint16_t free_port() {
  asio::io_context io;
  tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

/// A connected loopback socket pair (client, server side), blocking.
struct raw_pair {
  asio::io_context io;
  tcp::socket client{io}, server{io};
  raw_pair() {
    tcp::acceptor acc(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    client.connect(acc.local_endpoint());
    acc.accept(server);
    client.set_option(tcp::no_delay(true));
    server.set_option(tcp::no_delay(true));
  }
};

/// Raw echo, pipelined: `count` batches of `bytes`, at most `window` in flight. Returns seconds.
double raw_stream(std::size_t bytes, int count, int window) {
  raw_pair p;
  std::thread echo([&] {
    std::vector<char> buf(bytes);
    for (int i = 0; i < count; ++i) {
      asio::read(p.server, asio::buffer(buf));
      asio::write(p.server, asio::buffer(buf));
    }
  });
  std::counting_semaphore<1 << 20> slots(window);
  std::vector<char> out(bytes, 'x');
  const auto t0 = clk::now();
  std::thread reader([&] {
    std::vector<char> in(bytes);
    for (int i = 0; i < count; ++i) {
      asio::read(p.client, asio::buffer(in));
      slots.release();
    }
  });
  for (int i = 0; i < count; ++i) {
    slots.acquire();
    asio::write(p.client, asio::buffer(out));
  }
  reader.join();
  const auto t1 = clk::now();
  echo.join();
  return secs(t0, t1);
}

/// Raw lock-step ping-pong: `rounds` of send `bytes`, receive `bytes`; `pairs` pairs at once.
/// Returns seconds per round.
double raw_pingpong(std::size_t bytes, int rounds, int pairs) {
  std::vector<std::unique_ptr<raw_pair>> ps;
  for (int i = 0; i < pairs; ++i) ps.push_back(std::make_unique<raw_pair>());
  std::vector<std::thread> th;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  double elapsed = 0;
  for (int k = 0; k < pairs; ++k) {
    auto& p = *ps[static_cast<std::size_t>(k)];
    th.emplace_back([&p, bytes, rounds] {
      std::vector<char> buf(bytes);
      for (int i = 0; i < rounds; ++i) {
        asio::read(p.server, asio::buffer(buf));
        asio::write(p.server, asio::buffer(buf));
      }
    });
    th.emplace_back([&, k] {
      std::vector<char> buf(bytes, 'x');
      ++ready;
      while (!go) std::this_thread::yield();
      const auto t0 = clk::now();
      for (int i = 0; i < rounds; ++i) {
        asio::write(p.client, asio::buffer(buf));
        asio::read(p.client, asio::buffer(buf));
      }
      if (k == 0) elapsed = secs(t0, clk::now());
    });
  }
  while (ready != pairs) std::this_thread::yield();
  go = true;
  for (auto& t : th) t.join();
  return elapsed / rounds;
}

/// Raw 64-byte ping-pong: median round trip over `rounds`.
double raw_rtt_median(int rounds) {
  raw_pair p;
  std::thread echo([&] {
    char buf[64];
    for (int i = 0; i < rounds; ++i) {
      asio::read(p.server, asio::buffer(buf));
      asio::write(p.server, asio::buffer(buf));
    }
  });
  std::vector<double> rtt;
  char buf[64] = {};
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = clk::now();
    asio::write(p.client, asio::buffer(buf));
    asio::read(p.client, asio::buffer(buf));
    rtt.push_back(secs(t0, clk::now()));
  }
  echo.join();
  std::sort(rtt.begin(), rtt.end());
  return rtt[rtt.size() / 2];
}

// ---- strata ------------------------------------------------------------------------------

strata::tcp::config cfg(strata::node_id r, std::uint16_t p0, std::uint16_t p1, const std::string& secret = "") {
  strata::tcp::config c;
  c.rank = r;
  c.secret = secret;
  c.peers = {{"127.0.0.1", p0}, {"127.0.0.1", p1}};
  c.connect_timeout = std::chrono::milliseconds(10000);
  return c;
}

/// Two tcp transports; rank 1's shard endpoint answers every flush with rows of the same payload.
struct strata_pair {
  std::uint16_t p0 = free_port(), p1 = free_port();
  strata::tcp a, b;
  strata_bench::stream_slots* slots = nullptr;
  std::atomic<int> replies{0};
  explicit strata_pair(const std::string& secret) : a(cfg(0, p0, p1, secret)), b(cfg(1, p0, p1, secret)) {
    a.bind({0, 1}, [this](strata::endpoint, strata::wire::message&&) {
      ++replies;
      slots->release();
    });
    b.bind({1, 0}, [this](strata::endpoint, strata::wire::message&& m) {
      b.send({1, 0}, {0, 1}, strata_bench::echo_of(std::get<strata::wire::flush>(std::move(m))));
    });
    const strata::run_shape shape{2, 1, "bench"};
    std::thread tb([&] { b.start(shape); });
    a.start(shape);
    tb.join();
  }
  ~strata_pair() {
    std::thread tb([&] { b.stop(); });
    a.stop();
    tb.join();
  }
  double stream(std::size_t bytes, int count, int window) {
    strata_bench::stream_slots s(window);
    slots = &s;
    replies = 0;
    return strata_bench::stream_flushes(a, s, bytes, count, window);
  }
};

/// Two system<bsp, tcp> (ranks 0 and 1) in this process, one worker each, running `program`.
template <class F>
void run_two(std::size_t width, F program, const std::string& secret) {
  const auto p0 = free_port(), p1 = free_port();
  auto one = [&](strata::node_id r) {
    strata::system<strata::bsp, strata::tcp> sys({.nodes = 2, .workers_per_node = 1}, cfg(r, p0, p1, secret));
    auto t = sys.add_table<strata::dense_row<float>>(width);
    sys.run([&](strata::worker& w) -> strata::task<> { co_await program(w, t); });
  };
  std::thread t1([&] { one(1); });
  one(0);
  t1.join();
}

/// Lock-step row sync through the runtime: seconds per clock (worker 0's view).
double strata_lockstep(std::size_t bytes, int rounds, const std::string& secret) {
  return strata_bench::lockstep_seconds(bytes, rounds, [&](std::size_t width, auto program) { run_two(width, program, secret); });
}

/// get() missing the cache: median seconds per get of a 64-byte row held by the other process.
double strata_get_miss_median(int rounds, const std::string& secret) {
  return strata_bench::get_miss_median(rounds, [&](std::size_t width, auto program) { run_two(width, program, secret); });
}

}  // namespace

int main() {
  std::printf("strata tcp benchmarks (loopback; ratios against raw sockets measured in this run)\n\n");
  std::printf("1. bulk row sync, pipelined (flush of B bytes up, rows of B bytes back)\n");
  std::printf("%10s %8s %8s %10s %12s %12s %7s %7s\n", "batch", "batches", "window", "raw MB/s", "strata MB/s",
              "+secret MB/s", "ratio", "mac");
  {
    strata_pair sp(""), sq("s3cret");
    for (std::size_t bytes : {std::size_t{1} << 10, std::size_t{64} << 10, std::size_t{1} << 20}) {
      const int count = static_cast<int>(std::clamp<std::size_t>((std::size_t{256} << 20) / bytes, 200, 40000));
      const int window = static_cast<int>(std::max<std::size_t>(4, (std::size_t{4} << 20) / bytes));
      const double raw = best_of(3, [&] { return raw_stream(bytes, count, window); });
      const double st = best_of(3, [&] { return sp.stream(bytes, count, window); });
      const double sm = best_of(3, [&] { return sq.stream(bytes, count, window); });
      const double mb = static_cast<double>(bytes) * count / 1e6;
      std::printf("%9zuK %8d %8d %10.0f %12.0f %12.0f %7.2f %7.2f\n", bytes >> 10, count, window, mb / raw, mb / st,
                  mb / sm, raw / st, st / sm);
    }
  }
  std::printf("\n2. row sync through system<bsp, tcp>, lock-step (inc_row + clock + get per round, both ways)\n");
  std::printf("%10s %8s %13s %15s %15s %7s %7s\n", "row", "rounds", "raw us/round", "strata us/round",
              "+secret us/rnd", "ratio", "mac");
  for (std::size_t bytes : {std::size_t{1} << 10, std::size_t{64} << 10, std::size_t{1} << 20}) {
    const int rounds = bytes >= (std::size_t{1} << 20) ? 100 : 400;
    const double raw = best_of(3, [&] { return raw_pingpong(bytes, rounds, 2); });
    const double st = best_of(3, [&] { return strata_lockstep(bytes, rounds, ""); });
    const double sm = best_of(3, [&] { return strata_lockstep(bytes, rounds, "s3cret"); });
    std::printf("%9zuK %8d %13.1f %15.1f %15.1f %7.2f %7.2f\n", bytes >> 10, rounds, raw * 1e6, st * 1e6, sm * 1e6,
                raw / st, st / sm);
  }
  std::printf("\n3. get() missing the cache (64-byte row on the other process) vs raw 64-byte ping-pong\n");
  {
    const int rounds = 2000;
    const double raw = best_of(3, [&] { return raw_rtt_median(rounds); });
    const double st = best_of(3, [&] { return strata_get_miss_median(rounds, ""); });
    const double sm = best_of(3, [&] { return strata_get_miss_median(rounds, "s3cret"); });
    std::printf("%20s %14s %16s %8s %7s\n", "raw median us", "get median us", "+secret median us", "ratio", "mac");
    std::printf("%20.1f %14.1f %16.1f %8.2f %7.2f\n", raw * 1e6, st * 1e6, sm * 1e6, raw / st, st / sm);
  }
  return 0;
}
