// The tcp transport: in-process unit checks (ordering, local delivery, the shutdown barrier), then
// real multi-process runs on loopback of tests/net/ps_node (every consistency model's bound, no
// lost update, the same table as inproc), every failure path with its stderr text and no hang
// (handshake mismatch, wrong secret, garbage and oversized frames, a killed peer, a failing
// worker), scripts/launch.sh, and a run across two network namespaces joined by a veth pair.
#include <doctest/doctest.h>

#include "../paths.hpp"
#include "../support/procs.hpp"

#include <strata/transport/tcp.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_transport_tcp {

namespace {

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

// ---- helpers: processes, ports, files -------------------------------------------------------

std::string node_binary() { return std::string(strata::test::binary_dir()) + "/tests/net/strata_ps_node"; }

using strata_test::procs::contains;
using strata_test::procs::free_port_run;
using strata_test::procs::proc;
using strata_test::procs::read_file;
using strata_test::procs::spawn;
using strata_test::procs::wait_all;
using scratch = strata_test::procs::temp_folder;

/// `n` ports that were free a moment ago (bound to port 0, then released).
std::vector<std::uint16_t> free_ports(int n) {
  std::vector<int> fds;
  std::vector<std::uint16_t> ports;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ports.push_back(ntohs(a.sin_port));
    fds.push_back(fd);
  }
  for (int fd : fds) ::close(fd);
  return ports;
}


std::string write_hostfile(const scratch& dir, const std::vector<std::uint16_t>& ports,
                           const std::string& host = "127.0.0.1") {
  const auto path = dir.path("hosts");
  std::ofstream out(path);
  out << "# rank order\n";
  for (auto p : ports) out << host << ' ' << p << '\n';
  return path;
}

/// Starts `n` ps_node processes of one run (hostfile addressing) with common and per-rank arguments.
std::vector<proc> start_nodes(const scratch& dir, int n, const std::vector<std::string>& common,
                              const std::map<int, std::vector<std::string>>& per_rank = {},
                              std::vector<std::uint16_t>* ports_out = nullptr) {
  const auto ports = free_ports(n);
  if (ports_out) *ports_out = ports;
  const auto hosts = write_hostfile(dir, ports);
  std::vector<proc> ps;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> argv{node_binary(), "--hostfile", hosts, "--rank", std::to_string(r)};
    argv.insert(argv.end(), common.begin(), common.end());
    if (auto it = per_rank.find(r); it != per_rank.end()) argv.insert(argv.end(), it->second.begin(), it->second.end());
    if (std::find(argv.begin(), argv.end(), "--connect-timeout-ms") == argv.end()) {
      argv.push_back("--connect-timeout-ms");
      argv.push_back("8000");
    }
    ps.push_back(spawn(argv, dir, "rank" + std::to_string(r)));
  }
  return ps;
}

std::string rows_of(const std::string& out) {
  std::vector<std::string> rows;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("ROW ", 0) == 0) rows.push_back(line);
  std::sort(rows.begin(), rows.end());
  std::string s;
  for (auto& r : rows) s += r + "\n";
  return s;
}

std::string describe(const std::vector<proc>& ps) {
  std::string s;
  for (std::size_t i = 0; i < ps.size(); ++i)
    s += "--- rank " + std::to_string(i) + " exit " + std::to_string(ps[i].exit_code()) + "\nstdout:\n" + ps[i].out() +
         "stderr:\n" + ps[i].err();
  return s;
}

bool binary_present() {
  struct stat st{};
  if (::stat(node_binary().c_str(), &st) == 0) return true;
  FAIL_CHECK("missing " << node_binary() << ": build the strata_ps_node target (tests/net/CMakeLists.txt)");
  return false;
}

/// Connects to 127.0.0.1:port, retrying until the deadline. Returns the fd or -1.
int connect_raw(std::uint16_t port, std::chrono::milliseconds limit) {
  const auto deadline = clk::now() + limit;
  while (clk::now() < deadline) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    ::close(fd);
    std::this_thread::sleep_for(10ms);
  }
  return -1;
}

/// Sends bytes, then reads until the peer closes; true when it closed within `limit`.
bool send_and_expect_close(int fd, const std::vector<std::byte>& bytes, std::chrono::milliseconds limit) {
  if (::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) return true;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(limit.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((limit.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[4096];
  for (;;) {
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) return true;                                         // orderly close
    if (n < 0) return errno == ECONNRESET || errno == EPIPE;         // reset is a close too; EAGAIN: timed out
  }
}

std::vector<std::byte> raw_header(std::uint32_t version, std::uint8_t kind, std::uint64_t length) {
  std::vector<std::byte> h(strata::wire::frame_header_size);
  std::memcpy(h.data(), "STRA", 4);
  strata::wire::detail::put_le(h.data() + 4, version, 4);
  h[8] = static_cast<std::byte>(kind);
  strata::wire::detail::put_le(h.data() + 16, length, 8);
  strata::wire::detail::put_le(h.data() + 24, 1, 4);
  return h;
}


// ---- in-process: two tcp objects on loopback -------------------------------------------------

struct pair_fixture {
  std::vector<std::uint16_t> ports = free_ports(2);
  std::string secret;
  strata::tcp::config cfg(strata::node_id r) {
    strata::tcp::config c;
    c.rank = r;
    c.secret = secret;
    c.peers = {{"127.0.0.1", ports[0]}, {"127.0.0.1", ports[1]}};
    c.connect_timeout = 5000ms;
    c.peer_timeout = 5000ms;
    return c;
  }
};

strata::wire::message numbered(std::uint64_t i, std::size_t payload = 0) {
  strata::wire::flush f;
  f.seq = i;
  f.payload.bytes.assign(payload, std::byte{1});
  return f;
}

}  // namespace

namespace {
void order_and_local(const std::string& secret) {
  pair_fixture fx;
  fx.secret = secret;
  strata::tcp a(fx.cfg(0)), b(fx.cfg(1));
  std::mutex mu;
  std::vector<std::uint64_t> at_b_from_a0, at_b_from_a1, at_a_local;
  std::atomic<int> fatal{0};
  a.bind({0, 0}, [&](strata::endpoint, strata::wire::message&& m) {
    std::lock_guard lk(mu);
    at_a_local.push_back(std::get<strata::wire::flush>(m).seq);
  });
  a.bind({0, 1}, [](strata::endpoint, strata::wire::message&&) {});
  b.bind({1, 0}, [&](strata::endpoint src, strata::wire::message&& m) {
    std::lock_guard lk(mu);
    (src.slot == 0 ? at_b_from_a0 : at_b_from_a1).push_back(std::get<strata::wire::flush>(m).seq);
  });
  a.on_fatal([&](std::error_code, const std::string&) { ++fatal; });
  b.on_fatal([&](std::error_code, const std::string&) { ++fatal; });
  const strata::run_shape shape{2, 1, "sig"};
  std::thread tb([&] { b.start(shape); });
  a.start(shape);
  tb.join();
  constexpr int n = 2000;
  // Two sending threads (two source endpoints), FIFO each.
  std::thread s1([&] {
    for (int i = 0; i < n; ++i) a.send({0, 1}, {1, 0}, numbered(static_cast<std::uint64_t>(i), i % 97));
  });
  for (int i = 0; i < n; ++i) a.send({0, 0}, {1, 0}, numbered(static_cast<std::uint64_t>(i), 3000));
  for (int i = 0; i < 10; ++i) a.send({0, 1}, {0, 0}, numbered(static_cast<std::uint64_t>(i)));
  s1.join();
  std::thread tb2([&] { b.stop(); });
  a.stop();  // the barrier: returns after every queued frame went out and b said bye
  tb2.join();
  const auto local_bytes = a.bytes_sent();
  REQUIRE(at_b_from_a0.size() == n);
  REQUIRE(at_b_from_a1.size() == n);
  for (int i = 0; i < n; ++i) {
    CHECK(at_b_from_a0[static_cast<std::size_t>(i)] == static_cast<std::uint64_t>(i));
    CHECK(at_b_from_a1[static_cast<std::size_t>(i)] == static_cast<std::uint64_t>(i));
  }
  CHECK(at_a_local.size() == 10);
  CHECK(a.bytes_local() > 0);
  CHECK(local_bytes > static_cast<std::uint64_t>(n) * 3000);
  CHECK(fatal == 0);
  CHECK_FALSE(a.is_local(1));
  CHECK(a.is_local(0));
}
}  // namespace

TEST_CASE("tcp in process: per-pair order, local delivery without sockets, bytes_sent") { order_and_local(""); }

TEST_CASE("tcp in process: the same with a shared secret: every frame tagged and verified, none lost or refused") {
  order_and_local("alpha");
}

TEST_CASE("tcp in process: listening on a non-loopback address without a secret is refused unless insecure") {
  pair_fixture fx;
  auto c = fx.cfg(0);
  c.listen_address = "0.0.0.0";
  strata::tcp a(c);
  a.bind({0, 0}, [](strata::endpoint, strata::wire::message&&) {});
  try {
    a.start(strata::run_shape{2, 1, "sig"});
    FAIL("start() listened on 0.0.0.0 without a secret");
  } catch (const strata::error& e) {
    CHECK(contains(e.what(), "refusing to listen on 0.0.0.0:" + std::to_string(fx.ports[0]) + " without a shared secret"));
    CHECK(contains(e.what(), "--insecure"));
  }
}

TEST_CASE("tcp in process: stop() right after sending delivers everything (shutdown barrier)") {
  pair_fixture fx;
  strata::tcp a(fx.cfg(0)), b(fx.cfg(1));
  std::atomic<std::uint64_t> got{0}, bytes{0};
  a.bind({0, 0}, [](strata::endpoint, strata::wire::message&&) {});
  b.bind({1, 0}, [&](strata::endpoint, strata::wire::message&& m) {
    bytes += std::get<strata::wire::flush>(m).payload.bytes.size();
    ++got;
  });
  const strata::run_shape shape{2, 1, "sig"};
  std::thread tb([&] {
    b.start(shape);
    b.stop();  // finishes at once, but must stay until a's frames are in and a said bye
  });
  a.start(shape);
  for (int i = 0; i < 300; ++i) a.send({0, 0}, {1, 0}, numbered(static_cast<std::uint64_t>(i), 64 << 10));
  a.stop();
  tb.join();
  CHECK(got == 300);
  CHECK(bytes == 300u * (64u << 10));
}

TEST_CASE("tcp in process: a frame over max_frame is refused when sending") {
  pair_fixture fx;
  auto ca = fx.cfg(0);
  ca.max_frame = 4096;
  strata::tcp a(ca), b(fx.cfg(1));
  std::atomic<int> fatal_a{0}, fatal_b{0};
  std::string why_b;
  std::mutex mu;
  a.bind({0, 0}, [](strata::endpoint, strata::wire::message&&) {});
  b.bind({1, 0}, [](strata::endpoint, strata::wire::message&&) {});
  a.on_fatal([&](std::error_code ec, const std::string&) { fatal_a += ec == strata::errc::frame_too_large; });
  b.on_fatal([&](std::error_code, const std::string& w) {
    std::lock_guard lk(mu);
    why_b = w;
    ++fatal_b;
  });
  const strata::run_shape shape{2, 1, "sig"};
  std::thread tb([&] { b.start(shape); });
  a.start(shape);
  tb.join();
  a.send({0, 0}, {1, 0}, numbered(1, 100));
  CHECK_THROWS_AS(a.send({0, 0}, {1, 0}, numbered(2, 5000)), strata::error);
  // The peer is told at once (abort frame), not left waiting.
  for (int i = 0; i < 300 && fatal_b == 0; ++i) std::this_thread::sleep_for(10ms);
  CHECK(fatal_a == 1);
  CHECK(fatal_b == 1);
  std::lock_guard lk(mu);
  CHECK(contains(why_b, "over max_frame"));
  std::thread tb2([&] { b.stop(); });
  a.stop();
  tb2.join();
}

// ---- real processes ------------------------------------------------------------------------

namespace {
void run_model(const std::string& model, int n) {
  if (!binary_present()) return;
  scratch dir;
  auto ps = start_nodes(dir, n, {"--model", model, "--clocks", "20", "--wpn", "2"});
  const bool finished = wait_all(ps, 20000ms);
  INFO(describe(ps));
  REQUIRE(finished);
  std::string rows;
  for (auto& p : ps) {
    CHECK(p.exit_code() == 0);
    CHECK(contains(p.out(), " ok"));
    rows += rows_of(p.out());
  }
  // Every row is held by exactly one process.
  CHECK(std::count(rows.begin(), rows.end(), '\n') == 8);
}
}  // namespace

TEST_CASE("tcp processes: bsp, 4 processes, exact snapshots and nothing lost") { run_model("bsp", 4); }
TEST_CASE("tcp processes: ssp<2>, 3 processes, staleness <= 2 and nothing lost") { run_model("ssp2", 3); }
TEST_CASE("tcp processes: essp<2>, 4 processes, staleness <= 2 and nothing lost") { run_model("essp2", 4); }
TEST_CASE("tcp processes: async, 3 processes, nothing lost") { run_model("async", 3); }

namespace {
void run_runtime_scenario(const std::string& model, int n) {
  if (!binary_present()) return;
  scratch dir;
  auto ps = start_nodes(dir, n, {"--model", model, "--scenario", "runtime", "--clocks", "6", "--rows", "7", "--wpn", "2"});
  const bool finished = wait_all(ps, 30000ms);
  INFO(describe(ps));
  REQUIRE(finished);
  for (auto& p : ps) {
    CHECK(p.exit_code() == 0);
    CHECK(contains(p.out(), "scenario=runtime runs=2 ok"));
    CHECK(contains(p.out(), "run=2"));
  }
}
}  // namespace

TEST_CASE("tcp processes: coordinator messages, barrier, all_reduce, all_gather, two runs, every row read on every process (bsp, 3 processes)") {
  run_runtime_scenario("bsp", 3);
}
TEST_CASE("tcp processes: the same under essp<2> and async (3 processes)") {
  run_runtime_scenario("essp2", 3);
  run_runtime_scenario("async", 3);
}

TEST_CASE("tcp processes: BSP gives the same final table as inproc") {
  if (!binary_present()) return;
  scratch dir;
  const std::vector<std::string> common{"--model", "bsp", "--clocks", "15", "--rows", "10", "--seed", "42"};
  auto ps = start_nodes(dir, 3, common);
  std::vector<std::string> argv{node_binary(), "--transport", "inproc", "--size", "3"};
  argv.insert(argv.end(), common.begin(), common.end());
  auto single = spawn(argv, dir, "inproc");
  std::vector<proc*> all{&ps[0], &ps[1], &ps[2], &single};
  const bool finished = wait_all(all, 20000ms);
  INFO(describe(ps));
  REQUIRE(finished);
  std::string tcp_rows;
  for (auto& p : ps) {
    CHECK(p.exit_code() == 0);
    tcp_rows += rows_of(p.out());
  }
  CHECK(single.exit_code() == 0);
  CHECK(rows_of(tcp_rows) == rows_of(single.out()));
  CHECK(std::count(tcp_rows.begin(), tcp_rows.end(), '\n') == 10);
}

TEST_CASE("tcp processes: another run signature stops both sides, naming the field, rank and address") {
  if (!binary_present()) return;
  scratch dir;
  std::vector<std::uint16_t> ports;
  // Without a secret the accepting rank 0 cannot tell a misconfigured peer from a stranger: it
  // refuses the connection and keeps waiting; its connect timeout names the refused connection.
  auto ps = start_nodes(dir, 2, {}, {{0, {"--model", "bsp", "--connect-timeout-ms", "3000"}}, {1, {"--model", "ssp2"}}}, &ports);
  const auto t0 = clk::now();
  REQUIRE(wait_all(ps, 15000ms));
  INFO(describe(ps));
  CHECK(clk::now() - t0 < 8s);
  CHECK(ps[0].exit_code() == 1);
  CHECK(ps[1].exit_code() == 1);
  CHECK(contains(ps[0].err(), "run signature differs: consistency model (here 'bsp s=0', peer 'ssp s=2')"));
  CHECK(contains(ps[0].err(), "rank 1 (127.0.0.1:" + std::to_string(ports[1]) + ")"));
  CHECK(contains(ps[0].err(), "no handshake within 3000 ms"));
  CHECK(contains(ps[1].err(), "run signature differs: consistency model (here 'ssp s=2', peer 'bsp s=0')"));
  CHECK(contains(ps[1].err(), "rank 0 (127.0.0.1:" + std::to_string(ports[0]) + ")"));
  CHECK(contains(ps[1].err(), "run configuration mismatch"));

  // Another table width: the field named is the table.
  scratch dir2;
  auto qs = start_nodes(dir2, 2, {}, {{0, {"--connect-timeout-ms", "3000"}}, {1, {"--extra-width", "3"}}});
  REQUIRE(wait_all(qs, 15000ms));
  INFO(describe(qs));
  CHECK(qs[0].exit_code() == 1);
  CHECK(qs[1].exit_code() == 1);
  CHECK(contains(qs[0].err(), "run signature differs: table 0"));
  CHECK(contains(qs[1].err(), "run signature differs: table 0"));

  // With a shared secret both sides have proved it before comparing: both stop at once.
  scratch dir3;
  auto rs = start_nodes(dir3, 2, {"--secret", "alpha"}, {{0, {"--model", "bsp"}}, {1, {"--model", "ssp2"}}});
  const auto t3 = clk::now();
  REQUIRE(wait_all(rs, 15000ms));
  INFO(describe(rs));
  CHECK(clk::now() - t3 < 5s);
  for (auto& p : rs) {
    CHECK(p.exit_code() == 1);
    CHECK(contains(p.err(), "run signature differs: consistency model"));
    CHECK_FALSE(contains(p.err(), "no handshake within"));
  }
}

TEST_CASE("tcp processes: shared secret: a wrong or a missing one is refused on both sides") {
  if (!binary_present()) return;
  {
    scratch dir;
    auto ps = start_nodes(dir, 2, {}, {{0, {"--secret", "alpha", "--connect-timeout-ms", "3000"}}, {1, {"--secret", "beta"}}});
    REQUIRE(wait_all(ps, 15000ms));
    INFO(describe(ps));
    for (auto& p : ps) {
      CHECK(p.exit_code() == 1);
      CHECK(contains(p.err(), "shared secret mismatch"));
    }
    CHECK(contains(ps[0].err(), "handshake with rank 1"));
    CHECK(contains(ps[1].err(), "refused the connection: shared secret mismatch"));
  }
  {
    scratch dir;
    auto ps = start_nodes(dir, 2, {}, {{0, {"--secret", "alpha", "--connect-timeout-ms", "3000"}}});
    REQUIRE(wait_all(ps, 15000ms));
    INFO(describe(ps));
    CHECK(ps[0].exit_code() == 1);
    CHECK(ps[1].exit_code() == 1);
    CHECK(contains(ps[0].err(), "a shared secret is set here but not on the peer"));
    CHECK(contains(ps[1].err(), "the peer requires a shared secret and none is set here"));
  }
  {
    // The same secret, once from the flag and once from STRATA_SECRET: the run goes through.
    scratch dir;
    const auto ports = free_ports(2);
    const auto hosts = write_hostfile(dir, ports);
    auto p0 = spawn({node_binary(), "--hostfile", hosts, "--rank", "0", "--secret", "gamma"}, dir, "r0");
    auto p1 = spawn({node_binary(), "--hostfile", hosts, "--rank", "1"}, dir, "r1", {"STRATA_SECRET=gamma"});
    std::vector<proc*> all{&p0, &p1};
    REQUIRE(wait_all(all, 15000ms));
    INFO(p0.err() << p1.err());
    CHECK(p0.exit_code() == 0);
    CHECK(p1.exit_code() == 0);
  }
}

TEST_CASE("tcp processes: garbage and an oversized header from a raw socket close that connection only") {
  if (!binary_present()) return;
  scratch dir;
  const auto ports = free_ports(2);
  const auto hosts = write_hostfile(dir, ports);
  auto p0 = spawn({node_binary(), "--hostfile", hosts, "--rank", "0"}, dir, "r0");
  // Garbage: not a strata frame at all.
  int fd = connect_raw(ports[0], 5000ms);
  REQUIRE(fd >= 0);
  const std::string junk = "GET / HTTP/1.1\r\nHost: strata\r\n\r\n0123456789";
  std::vector<std::byte> jb(junk.size());
  std::memcpy(jb.data(), junk.data(), junk.size());
  CHECK(send_and_expect_close(fd, jb, 5000ms));
  ::close(fd);
  // A valid header announcing 1 GiB.
  fd = connect_raw(ports[0], 5000ms);
  REQUIRE(fd >= 0);
  CHECK(send_and_expect_close(fd, raw_header(strata::wire::protocol_version, 2, std::uint64_t{1} << 30), 5000ms));
  ::close(fd);
  // Truncated: half a header, then the client goes away.
  fd = connect_raw(ports[0], 5000ms);
  REQUIRE(fd >= 0);
  auto half = raw_header(strata::wire::protocol_version, 2, 10);
  half.resize(10);
  CHECK(::send(fd, half.data(), half.size(), MSG_NOSIGNAL) == 10);
  ::close(fd);
  // The node still serves its real peer.
  auto p1 = spawn({node_binary(), "--hostfile", hosts, "--rank", "1"}, dir, "r1");
  std::vector<proc*> all{&p0, &p1};
  REQUIRE(wait_all(all, 15000ms));
  INFO(p0.out() << p0.err() << p1.err());
  CHECK(p0.exit_code() == 0);
  CHECK(p1.exit_code() == 0);
  CHECK(contains(p0.err(), "closing a connection from 127.0.0.1:"));
  CHECK(contains(p0.err(), "malformed frame: bad magic"));
  CHECK(contains(p0.err(), "frame over the size limit: frame of 1073741856 bytes"));
}

TEST_CASE("tcp processes: a frame over a peer's max_frame ends the run on both sides") {
  if (!binary_present()) return;
  scratch dir;
  std::vector<std::uint16_t> ports;
  // Rows of ~3 KB: rank 1 accepts and sends frames of at most 2 KB.
  auto ps = start_nodes(dir, 2, {"--extra-width", "400"}, {{1, {"--max-frame", "2048"}}}, &ports);
  const auto t0 = clk::now();
  REQUIRE(wait_all(ps, 15000ms));
  INFO(describe(ps));
  CHECK(clk::now() - t0 < 5s);
  CHECK(ps[0].exit_code() == 1);
  CHECK(ps[1].exit_code() == 1);
  CHECK(contains(ps[1].err(), "frame over the size limit"));
  CHECK(contains(ps[0].err(), "rank 1 (127.0.0.1:" + std::to_string(ports[1]) + ")"));
}

namespace {
/// A hello frame as a stranger would write it (optionally with a made-up auth frame after it).
std::vector<std::byte> stranger_hello(std::uint32_t version, strata::node_id rank, const std::string& signature,
                                      bool with_forged_auth) {
  strata::wire::hello h;
  h.version = version;
  h.rank = rank;
  h.world = 2;
  h.signature = signature;
  h.signature_hash = strata::wire::signature_hash(signature);
  h.secret_set = with_forged_auth;
  auto f = strata::wire::encode_frame(strata::wire::frame_kind::hello, strata::endpoint{rank, 0}, 0, h);
  if (version != strata::wire::protocol_version) strata::wire::detail::put_le(f.data() + 4, version, 4);
  if (with_forged_auth) {
    strata::wire::auth a;
    a.mac.fill(0x5a);
    const auto g = strata::wire::encode_frame(strata::wire::frame_kind::auth, strata::endpoint{rank, 0}, 0, a);
    f.insert(f.end(), g.begin(), g.end());
  }
  return f;
}

/// Everything the attacker sent, each on its own connection to `port`; each connection
/// must be closed by the node.
void attack(std::uint16_t port, bool secret) {
  std::vector<std::vector<std::byte>> frames;
  frames.push_back(stranger_hello(99, 1, "x", false));                                   // protocol 99
  frames.push_back(strata::wire::encode_frame(strata::wire::frame_kind::abort, strata::endpoint{1, 0}, 0,
                                              strata::wire::abort_notice{5, "stranger says stop\x1b[2J"}));  // abort
  frames.push_back(stranger_hello(strata::wire::protocol_version, 1, "bsp s=0;bogus", false));  // another signature
  frames.push_back(stranger_hello(strata::wire::protocol_version, 1, "", true));          // a forged proof
  frames.push_back(stranger_hello(strata::wire::protocol_version, 7, "", false));         // out of range
  for (const auto& f : frames) {
    const int fd = connect_raw(port, 5000ms);
    REQUIRE(fd >= 0);
    CHECK(send_and_expect_close(fd, f, 5000ms));
    ::close(fd);
  }
  (void)secret;
}

/// The other attack: read the node's own hello and send it back claiming rank 1 (with a
/// made-up proof when a secret is set). Mid-run rank 1 is connected: refused either way.
void echo_attack(std::uint16_t port, bool secret) {
  const int fd = connect_raw(port, 5000ms);
  REQUIRE(fd >= 0);
  std::vector<std::byte> buf(std::size_t{64} << 10);
  std::size_t n = 0;
  std::error_code ec;
  std::string why;
  strata::wire::frame_header h;
  for (;;) {
    const auto k = ::recv(fd, buf.data() + n, buf.size() - n, 0);
    REQUIRE(k > 0);
    n += static_cast<std::size_t>(k);
    if (n < strata::wire::frame_header_size) continue;
    h = strata::wire::decode_header(std::span(buf.data(), strata::wire::frame_header_size), 1 << 20, ec, &why);
    REQUIRE_FALSE(ec);
    if (n >= strata::wire::frame_header_size + h.length) break;
  }
  auto hello = strata::wire::decode_body<strata::wire::hello>(
      std::span<const std::byte>(buf.data() + strata::wire::frame_header_size, h.length), ec, &why);
  REQUIRE_FALSE(ec);
  CHECK(hello.signature.empty() == secret);  // with a secret a stranger never sees the signature
  hello.rank = 1;
  auto f = strata::wire::encode_frame(strata::wire::frame_kind::hello, strata::endpoint{1, 0}, 0, hello);
  if (secret) {
    strata::wire::auth a;
    a.mac.fill(0x5a);
    const auto g = strata::wire::encode_frame(strata::wire::frame_kind::auth, strata::endpoint{1, 0}, 0, a);
    f.insert(f.end(), g.begin(), g.end());
  }
  CHECK(send_and_expect_close(fd, f, 5000ms));
  ::close(fd);
}
}  // namespace

TEST_CASE("tcp processes: a stranger's frames (protocol 99, abort, wrong signature or proof) close its connection only, before and during the run") {
  if (!binary_present()) return;
  for (const bool secret : {false, true}) {
    CAPTURE(secret);
    scratch dir;
    const auto ports = free_ports(2);
    const auto hosts = write_hostfile(dir, ports);
    std::vector<std::string> extra{"--clocks", "150", "--sleep-ms", "10"};
    if (secret) extra.insert(extra.end(), {"--secret", "alpha"});
    auto argv = [&](int r) {
      std::vector<std::string> a{node_binary(), "--hostfile", hosts, "--rank", std::to_string(r)};
      a.insert(a.end(), extra.begin(), extra.end());
      return a;
    };
    auto p0 = spawn(argv(0), dir, "r0");
    attack(ports[0], secret);  // before the run: rank 0 waits for its peer
    auto p1 = spawn(argv(1), dir, "r1");
    // During the run: once both run their workers.
    const auto until = clk::now() + 10s;
    while (clk::now() < until && !contains(p0.out(), "STARTED")) std::this_thread::sleep_for(20ms);
    CHECK(contains(p0.out(), "STARTED"));
    attack(ports[0], secret);
    attack(ports[1], secret);
    echo_attack(ports[0], secret);
    std::vector<proc*> all{&p0, &p1};
    REQUIRE(wait_all(all, 30000ms));
    INFO(p0.err() << p1.err());
    CHECK(p0.exit_code() == 0);
    CHECK(p1.exit_code() == 0);
    CHECK(contains(p0.out(), " ok"));
    CHECK_FALSE(contains(p0.err(), "fatal"));
    CHECK(contains(p0.err(), "peer speaks protocol version 99"));
    CHECK(contains(p0.err(), "sent an abort frame before its handshake completed (ignored): stranger says stop\\x1b[2J"));
    CHECK_FALSE(contains(p0.err(), "\x1b"));  // the stranger's control bytes are escaped
    if (secret) CHECK(contains(p0.err(), "shared secret mismatch"));
    else CHECK(contains(p0.err(), "run signature differs"));
    if (!secret) CHECK(contains(p0.err(), "rank 1 is already connected"));  // its own hello echoed back as rank 1
  }
}

namespace {
std::size_t rss_kib(pid_t pid) {
  std::istringstream in(read_file("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  return 0;
}
std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }
}  // namespace

TEST_CASE("tcp processes: 800 strangers announcing large hellos cost little memory and few log lines, and the real peer still joins") {
  if (!binary_present()) return;
  scratch dir;
  const auto ports = free_ports(2);
  const auto hosts = write_hostfile(dir, ports);
  auto p0 = spawn({node_binary(), "--hostfile", hosts, "--rank", "0", "--connect-timeout-ms", "30000"}, dir, "r0");
  int probe = connect_raw(ports[0], 5000ms);
  REQUIRE(probe >= 0);
  ::close(probe);
  std::this_thread::sleep_for(200ms);
  const std::size_t rss0 = rss_kib(p0.pid);
  std::vector<int> fds;
  // 400 hellos announcing nearly 1 MiB (over the handshake cap: refused at the header), and 400
  // announcing 15 KiB that never finish (held, at most max_pending_handshakes at a time).
  std::vector<std::byte> filler(1000, std::byte{7});
  for (int i = 0; i < 800; ++i) {
    const int fd = connect_raw(ports[0], 5000ms);
    REQUIRE(fd >= 0);
    auto f = raw_header(strata::wire::protocol_version, 2, i % 2 == 0 ? (std::uint64_t{1} << 20) - 64 : 15000);
    f.insert(f.end(), filler.begin(), filler.end());
    (void)::send(fd, f.data(), f.size(), MSG_NOSIGNAL);
    fds.push_back(fd);
  }
  std::this_thread::sleep_for(500ms);
  const std::size_t rss1 = rss_kib(p0.pid);
  // Every connection the node still holds open is one in its handshake: at most the cap (64).
  std::size_t still_open = 0;
  for (int fd : fds) {
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) {
    }  // the node's hello, and an abort frame if it refused
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) ++still_open;
  }
  auto p1 = spawn({node_binary(), "--hostfile", hosts, "--rank", "1"}, dir, "r1");
  std::vector<proc*> all{&p0, &p1};
  const bool finished = wait_all(all, 20000ms);
  for (int fd : fds) ::close(fd);
  REQUIRE(finished);
  INFO(p0.err().substr(0, 4000) << p1.err());
  MESSAGE("rank 0 RSS " << rss0 << " KiB before the strangers, " << rss1 << " KiB with them; " << lines(p0.err())
                        << " log lines; " << still_open << " of 800 connections held open");
  CHECK(rss1 < rss0 + 32 * 1024);  // before the cap: ~1 MiB per stranger, 400 MiB
  CHECK(lines(p0.err()) < 80);     // rate-limited: before, a line per connection
  CHECK(still_open <= 64);          // before the cap: all 400 held until their timeout
  CHECK(contains(p0.err(), "frame over the size limit"));
  CHECK(p0.exit_code() == 0);
  CHECK(p1.exit_code() == 0);
}

TEST_CASE("tcp processes: out of file descriptors, the accept loop backs off and logs a line a second, and the run completes after") {
  if (!binary_present()) return;
  scratch dir;
  const auto ports = free_ports(2);
  const auto hosts = write_hostfile(dir, ports);
  auto p0 = spawn({"/bin/sh", "-c", "ulimit -n 48 && exec \"$0\" \"$@\"", node_binary(), "--hostfile", hosts, "--rank", "0",
                   "--connect-timeout-ms", "30000"},
                  dir, "r0");
  std::vector<int> fds;
  for (int i = 0; i < 100; ++i) {
    const int fd = connect_raw(ports[0], 5000ms);
    REQUIRE(fd >= 0);
    fds.push_back(fd);
  }
  std::this_thread::sleep_for(2500ms);  // the node is out of descriptors all this time
  const std::string during = p0.err();
  for (int fd : fds) ::close(fd);
  auto p1 = spawn({node_binary(), "--hostfile", hosts, "--rank", "1"}, dir, "r1");
  std::vector<proc*> all{&p0, &p1};
  REQUIRE(wait_all(all, 25000ms));
  INFO(during.substr(0, 3000) << p0.err().substr(0, 3000) << p1.err());
  CHECK(contains(during, "accept failed"));
  CHECK(lines(during) < 40);  // before the back-off: millions of lines at full CPU
  CHECK(p0.exit_code() == 0);
  CHECK(p1.exit_code() == 0);
}

TEST_CASE("tcp processes: a killed peer ends the run everywhere within a bounded time, naming it") {
  if (!binary_present()) return;
  scratch dir;
  std::vector<std::uint16_t> ports;
  // ~2 s of work, peer_timeout 10 s: detection must come from the closed connection, at once.
  auto ps = start_nodes(dir, 3, {"--clocks", "200", "--sleep-ms", "10", "--peer-timeout-ms", "20000"}, {}, &ports);
  // Kill rank 2 once every process has connected and runs its workers (each prints STARTED).
  const auto until = clk::now() + 10s;
  auto started = [&] {
    for (auto& p : ps)
      if (!contains(p.out(), "STARTED")) return false;
    return true;
  };
  while (!started() && clk::now() < until) std::this_thread::sleep_for(10ms);
  REQUIRE(started());
  std::this_thread::sleep_for(100ms);
  REQUIRE(::kill(ps[2].pid, SIGKILL) == 0);
  const auto t0 = clk::now();
  REQUIRE(wait_all(ps, 15000ms));
  const auto took = clk::now() - t0;
  INFO(describe(ps));
  CHECK(took < 5s);  // peer_timeout is 20 s: this is the closed connection, not the timeout
  CHECK(ps[2].exit_code() == 128 + SIGKILL);
  const std::string lost = "lost rank 2 (127.0.0.1:" + std::to_string(ports[2]) + ")";
  for (int r = 0; r < 2; ++r) {
    CHECK(ps[static_cast<std::size_t>(r)].exit_code() == 1);
    CHECK(contains(ps[static_cast<std::size_t>(r)].err(), lost));
    CHECK(contains(ps[static_cast<std::size_t>(r)].err(), "peer connection lost"));
  }
}

TEST_CASE("tcp processes: SIGKILL one process midway, then --resume completes the run with no lost update") {
  if (!binary_present()) return;
  scratch dir;
  const std::string ck = dir.path("ckpt");
  const std::vector<std::string> common{"--model", "essp2", "--clocks", "120", "--sleep-ms", "10", "--checkpoint-dir", ck,
                                        "--checkpoint-every", "10"};
  std::vector<std::uint16_t> ports;
  auto ps = start_nodes(dir, 3, common, {}, &ports);
  // Kill rank 2 once two checkpoints are complete (the manifest lists them), well before the end.
  const auto until = clk::now() + 30s;
  auto complete = [&] {
    const auto m = read_file(ck + "/manifest");
    return std::count(m.begin(), m.end(), '\n') >= 3;  // the header and two checkpoints
  };
  while (!complete() && clk::now() < until) std::this_thread::sleep_for(5ms);
  REQUIRE(complete());
  REQUIRE(::kill(ps[2].pid, SIGKILL) == 0);
  REQUIRE(wait_all(ps, 15000ms));
  {
    INFO(describe(ps));
    const std::string lost = "lost rank 2 (127.0.0.1:" + std::to_string(ports[2]) + ")";
    for (int r = 0; r < 2; ++r) {
      CHECK(ps[static_cast<std::size_t>(r)].exit_code() == 1);
      CHECK(contains(ps[static_cast<std::size_t>(r)].err(), lost));
      CHECK(!contains(ps[static_cast<std::size_t>(r)].out(), "RESULT"));  // interrupted, not finished
    }
  }
  // Resume all three from the same folder: each finds the same newest complete checkpoint, runs
  // the rest, and every row equals the exact sums of the whole plan (ps_node checks: exit 0).
  auto again = common;
  again.insert(again.end(), {"--resume", ck});
  auto rs = start_nodes(dir, 3, again);
  REQUIRE(wait_all(rs, 60000ms));
  INFO(describe(rs));
  std::string at;
  for (auto& p : rs) {
    CHECK(p.exit_code() == 0);
    CHECK(contains(p.out(), " ok"));
    const auto pos = p.out().find("RESUMED rank=");
    REQUIRE(pos != std::string::npos);
    const auto clock = p.out().substr(p.out().find("clock=", pos), p.out().find('\n', pos) - p.out().find("clock=", pos));
    if (at.empty()) at = clock;
    CHECK(clock == at);  // the same checkpoint everywhere
    CHECK(clock != "clock=0");
  }
  // An uninterrupted run of the same plan prints the same rows.
  scratch dir2;
  auto whole = start_nodes(dir2, 3, {"--model", "essp2", "--clocks", "120"});
  REQUIRE(wait_all(whole, 60000ms));
  std::string a, b;
  for (auto& p : rs) a += p.out();
  for (auto& p : whole) b += p.out();
  CHECK(rows_of(a) == rows_of(b));
  CHECK(!rows_of(a).empty());
}

TEST_CASE("tcp processes: a hung peer (SIGSTOP) is lost after peer_timeout, a missing one after connect_timeout") {
  if (!binary_present()) return;
  {
    scratch dir;
    std::vector<std::uint16_t> ports;
    auto ps = start_nodes(dir, 2, {"--clocks", "400", "--sleep-ms", "5", "--peer-timeout-ms", "800"}, {}, &ports);
    const auto until = clk::now() + 10s;
    while (!(contains(ps[0].out(), "STARTED") && contains(ps[1].out(), "STARTED")) && clk::now() < until)
      std::this_thread::sleep_for(10ms);
    REQUIRE(::kill(ps[1].pid, SIGSTOP) == 0);  // alive, connection open, silent
    const auto t0 = clk::now();
    std::vector<proc*> first{&ps[0]};
    const bool done = wait_all(first, 10000ms);
    const auto took = clk::now() - t0;
    ::kill(ps[1].pid, SIGKILL);
    wait_all(ps, 5000ms);
    INFO(describe(ps));
    REQUIRE(done);
    CHECK(took < 4s);
    CHECK(ps[0].exit_code() == 1);
    CHECK(contains(ps[0].err(), "lost rank 1 (127.0.0.1:" + std::to_string(ports[1]) +
                                    "): nothing received for 800 ms (peer_timeout)"));
  }
  {
    scratch dir;
    const auto ports = free_ports(2);
    const auto hosts = write_hostfile(dir, ports);
    auto p0 = spawn({node_binary(), "--hostfile", hosts, "--rank", "0", "--connect-timeout-ms", "500"}, dir, "r0");
    std::vector<proc*> all{&p0};
    REQUIRE(wait_all(all, 10000ms));
    INFO(p0.err());
    CHECK(p0.exit_code() == 1);
    CHECK(contains(p0.err(), "no handshake within 500 ms (connect_timeout) with rank 1 (127.0.0.1:" +
                                 std::to_string(ports[1]) + ")"));
  }
}

TEST_CASE("tcp processes: a worker that throws stops every process at once") {
  if (!binary_present()) return;
  scratch dir;
  auto ps = start_nodes(dir, 3, {"--clocks", "200", "--sleep-ms", "5", "--peer-timeout-ms", "20000"},
                        {{1, {"--throw-at", "5"}}});
  const auto t0 = clk::now();
  REQUIRE(wait_all(ps, 15000ms));
  INFO(describe(ps));
  CHECK(clk::now() - t0 < 6s);  // not the 20 s barrier timeout
  for (auto& p : ps) CHECK(p.exit_code() == 1);
  CHECK(contains(ps[1].err(), "failed on purpose at clock 5"));
  CHECK(contains(ps[0].err(), "its run failed: worker 2 failed on purpose"));
  CHECK(contains(ps[2].err(), "failed on purpose"));
}

TEST_CASE("scripts/launch.sh: N ranks from STRATA_RANK/STRATA_SIZE, [rank] prefixes, failures propagate") {
  if (!binary_present()) return;
  scratch dir;
  const std::string script = std::string(strata::test::source_dir()) + "/scripts/launch.sh";
  const auto base = free_port_run(3);
  auto ok = spawn({"bash", script, "-n", "3", "--base-port", std::to_string(base), "--", node_binary(), "--model",
                   "essp2", "--clocks", "10"},
                  dir, "launch");
  std::vector<proc*> one{&ok};
  REQUIRE(wait_all(one, 20000ms));
  INFO(ok.out() << ok.err());
  CHECK(ok.exit_code() == 0);
  for (int r = 0; r < 3; ++r) CHECK(contains(ok.out(), "[" + std::to_string(r) + "] RESULT rank=" + std::to_string(r)));

  // One rank fails: launch.sh exits non-zero at once and kills the others (which would sleep 30 s).
  auto bad = spawn({"bash", script, "-n", "3", "--", "sh", "-c",
                    "echo hello from $STRATA_RANK of $STRATA_SIZE; if [ $STRATA_RANK = 1 ]; then sleep 1; echo oops >&2; exit 3; fi; "
                    "sleep 30"},
                   dir, "launch_bad");
  std::vector<proc*> two{&bad};
  const auto t0 = clk::now();
  REQUIRE(wait_all(two, 15000ms));
  INFO(bad.out() << bad.err());
  CHECK(clk::now() - t0 < 5s);
  CHECK(bad.exit_code() != 0);
  CHECK(contains(bad.out(), "[2] hello from 2 of 3"));
  CHECK(contains(bad.err(), "[1] oops"));
}

TEST_CASE("tcp processes: across two network namespaces joined by a veth pair (tc netem delay when available)") {
  if (!binary_present()) return;
  if (::geteuid() != 0) {
    MESSAGE("skipped: the network-namespace test needs root (ip netns, veth, tc)");
    return;
  }
  if (std::system("command -v ip >/dev/null 2>&1 && command -v tc >/dev/null 2>&1") != 0) {
    MESSAGE("skipped: the network-namespace test needs the ip and tc commands (iproute2)");
    return;
  }
  const auto id = std::to_string(::getpid());
  const std::string na = "strata_a_" + id, nb = "strata_b_" + id, va = "sva" + id, vb = "svb" + id;
  const std::string net = "10.200." + std::to_string(1 + ::getpid() % 250) + ".";
  scratch dir;
  auto sh = [&](const std::string& cmd) {
    const std::string full = cmd + " >>'" + dir.path("setup.log") + "' 2>&1";
    return std::system(full.c_str()) == 0;
  };
  struct cleanup {
    std::function<void()> f;
    ~cleanup() { f(); }
  } guard{[&] {
    sh("ip netns del " + na);
    sh("ip netns del " + nb);
  }};
  const bool setup = sh("ip netns add " + na) && sh("ip netns add " + nb) &&
                     sh("ip link add " + va + " type veth peer name " + vb) && sh("ip link set " + va + " netns " + na) &&
                     sh("ip link set " + vb + " netns " + nb) && sh("ip -n " + na + " addr add " + net + "1/24 dev " + va) &&
                     sh("ip -n " + nb + " addr add " + net + "2/24 dev " + vb) && sh("ip -n " + na + " link set " + va + " up") &&
                     sh("ip -n " + nb + " link set " + vb + " up") && sh("ip -n " + na + " link set lo up") &&
                     sh("ip -n " + nb + " link set lo up");
  if (!setup) {
    MESSAGE("skipped: could not create network namespaces and a veth pair: " << read_file(dir.path("setup.log")));
    return;
  }
  const bool netem = sh("tc -n " + na + " qdisc add dev " + va + " root netem delay 5ms") &&
                     sh("tc -n " + nb + " qdisc add dev " + vb + " root netem delay 5ms");
  if (!netem)
    MESSAGE("tc netem is unavailable here (" << read_file(dir.path("setup.log"))
                                             << "): the run crosses the namespaces without added delay");
  const auto hosts = dir.path("hosts");
  {
    std::ofstream out(hosts);
    out << net << "1 7100\n" << net << "2 7100\n";
  }
  const std::vector<std::string> common{"--hostfile", hosts, "--model", "bsp", "--clocks", "20", "--connect-timeout-ms",
                                        "10000", "--secret", "netns-test"};
  auto args = [&](const std::string& ns, int rank) {
    std::vector<std::string> a{"ip", "netns", "exec", ns, node_binary(), "--rank", std::to_string(rank)};
    a.insert(a.end(), common.begin(), common.end());
    return a;
  };
  {
    // An address that is not loopback, and no secret: refused before listening.
    std::vector<std::string> a{"ip", "netns", "exec", na, node_binary(), "--rank", "0", "--hostfile", hosts};
    auto lone = spawn(a, dir, "lone");
    std::vector<proc*> one{&lone};
    REQUIRE(wait_all(one, 10000ms));
    CHECK(lone.exit_code() == 1);
    CHECK(contains(lone.err(), "refusing to listen on " + net + "1:7100 without a shared secret"));
  }
  auto p0 = spawn(args(na, 0), dir, "r0");
  auto p1 = spawn(args(nb, 1), dir, "r1");
  std::vector<proc*> all{&p0, &p1};
  const auto t0 = clk::now();
  REQUIRE(wait_all(all, 25000ms));
  const auto took = std::chrono::duration<double>(clk::now() - t0).count();
  INFO(p0.out() << p0.err() << p1.out() << p1.err());
  CHECK(p0.exit_code() == 0);
  CHECK(p1.exit_code() == 0);
  CHECK(contains(p0.out(), " ok"));
  CHECK(contains(p1.out(), " ok"));
  // 20 BSP clocks each wait for a round trip through both delayed links (>= 10 ms).
  if (netem) CHECK(took > 0.2);
  const std::string how = netem ? " with 5 ms netem delay each way" : " without added delay";
  MESSAGE("two namespaces over a veth pair" << how << ": " << took << " s");
}

}  // namespace test_transport_tcp
