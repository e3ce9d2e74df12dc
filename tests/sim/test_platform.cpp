// Simulated platforms as data (sim/platform.hpp): the shipped files parse, units convert, seeded
// stragglers are deterministic, and every malformed or unusable platform is refused with its
// file:line or a sentence.
#include <doctest/doctest.h>

#include "../paths.hpp"

#include <strata/sim/platform.hpp>

#include <cstdint>
#include <string>

namespace test_sim_platform {

namespace {
std::string what_of(const std::string& text) {
  try {
    (void)strata::sim::parse_platform(text, "p.txt");
  } catch (const strata::error& e) {
    return e.what();
  }
  return "(accepted)";
}
/// What p.check(processes) says, or "(accepted)".
std::string refusal_of(const strata::sim::platform& p, std::uint32_t processes) {
  try {
    p.check(processes);
  } catch (const strata::error& e) {
    return e.what();
  }
  return "(accepted)";
}
bool has(const std::string& s, const std::string& w) { return s.find(w) != std::string::npos; }
std::string shipped(const char* name) { return std::string(strata::test::source_dir()) + "/examples/platforms/" + name; }
}  // namespace

TEST_CASE("platform: units of bandwidth and latency") {
  double b = 0, l = 0;
  CHECK(strata::sim::parse_bandwidth("10Gbps", b));
  CHECK(b == doctest::Approx(1.25e9));
  CHECK(strata::sim::parse_bandwidth("1.25GBps", b));
  CHECK(b == doctest::Approx(1.25e9));
  CHECK(strata::sim::parse_bandwidth("100Mbps", b));
  CHECK(b == doctest::Approx(12.5e6));
  CHECK(strata::sim::parse_bandwidth("800bps", b));
  CHECK(b == doctest::Approx(100));
  CHECK_FALSE(strata::sim::parse_bandwidth("10Gb", b));
  CHECK_FALSE(strata::sim::parse_bandwidth("10 Gbps", b));
  CHECK_FALSE(strata::sim::parse_bandwidth("fastGbps", b));
  CHECK(strata::sim::parse_latency("20us", l));
  CHECK(l == doctest::Approx(20e-6));
  CHECK(strata::sim::parse_latency("1.5ms", l));
  CHECK(l == doctest::Approx(1.5e-3));
  CHECK(strata::sim::parse_latency("100ns", l));
  CHECK(l == doctest::Approx(1e-7));
  CHECK_FALSE(strata::sim::parse_latency("20", l));
  CHECK_FALSE(strata::sim::parse_latency("20min", l));
}

TEST_CASE("platform: the shipped platforms parse, with their shapes") {
  const auto c = strata::sim::load_platform(shipped("cluster16_10gbe.txt"));
  CHECK(c.hosts == 16);
  CHECK(c.cores == 8);
  CHECK(c.link.bandwidth == doctest::Approx(1.25e9));
  CHECK(c.link.latency == doctest::Approx(20e-6));
  const auto f = strata::sim::load_platform(shipped("fattree256.txt"));
  CHECK(f.topology == strata::sim::platform::shape::fat_tree);
  CHECK(f.fat_tree_levels().leaves() == 256);
  const auto m = strata::sim::load_platform(shipped("this_machine.txt"));
  CHECK(m.hosts == 1);
  const auto s = strata::sim::load_platform(shipped("cluster16_stragglers.txt"));
  const auto speeds = s.host_speeds();
  REQUIRE(speeds.size() == 16);
  CHECK(speeds[3] <= 0.25 + 1e-12);  // its own factor (and maybe the drawn one too)
  int half = 0;
  for (double x : speeds) half += x == 0.5 || x == 0.125;
  CHECK(half == 2);  // 10% of 16, rounded, drawn with seed 7
  CHECK(s.host_speeds() == speeds);  // the same draw every time
  auto other = s;
  other.straggler_seed = 8;
  int differs = 0;
  for (int seed = 8; seed < 40; ++seed) {
    other.straggler_seed = static_cast<std::uint64_t>(seed);
    differs += other.host_speeds() != speeds;
  }
  CHECK(differs > 0);  // the seed matters
}

TEST_CASE("platform: a malformed line names file:line, an unusable platform is refused with a sentence") {
  CHECK(has(what_of("hosts 4\nlink 10Gbps\n"), "p.txt:2: expected 'link BANDWIDTH LATENCY'"));
  CHECK(has(what_of("hosts four\n"), "p.txt:1: hosts 'four' is not a number"));
  CHECK(has(what_of("# a comment\n\nhosts 2.5\n"), "p.txt:3: hosts '2.5' is not a whole number"));
  CHECK(has(what_of("hosts 4\nlink 10Gbit 20us\n"), "p.txt:2: bandwidth '10Gbit' is not like 10Gbps"));
  CHECK(has(what_of("hosts 4\nlink 0Gbps 20us\n"), "p.txt:2: a link of bandwidth 0Gbps carries nothing"));
  CHECK(has(what_of("hosts 4\nlink 10Gbps -5us\n"), "p.txt:2: latency -5us is negative"));
  CHECK(has(what_of("hosts 4\nspeed -1\n"), "p.txt:2: speed -1 is not positive"));
  CHECK(has(what_of("hosts 4\ntopology ring\n"), "p.txt:2: unknown topology 'ring'"));
  CHECK(has(what_of("hosts 4\nwarp 9\n"), "p.txt:2: unknown statement 'warp'"));
  CHECK(has(what_of("hosts 4\nstraggler 7 0.5\n"), "straggler host 7 does not exist (hosts 0..3)"));
  CHECK(has(what_of("hosts 0\n"), "it has no hosts"));
  CHECK(has(what_of("hosts 8\ntopology fat_tree\n"), "needs a fat_tree descriptor"));
  CHECK(has(what_of("hosts 8\ntopology fat_tree\nfat_tree 2;4,4;1,2;1,2\n"), "it has 16 leaves, and the platform 8 hosts"));
  CHECK(has(what_of("hosts 16\ntopology fat_tree\nfat_tree 2;4,4;1,2\n"), "expected LEVELS;DOWN"));
  CHECK(what_of("hosts 16\ntopology fat_tree\nfat_tree 2;4,4;1,2;1,2\n") == "(accepted)");
  // Fewer hosts than the run's processes.
  const auto p = strata::sim::parse_platform("hosts 4\n", "p.txt");
  CHECK(refusal_of(p, 4) == "(accepted)");
  CHECK(has(refusal_of(p, 5), "it has 4 hosts, fewer than the run's 5 processes"));
  // Processes that share hosts: node n on host n / nodes_per_host; hosts x nodes_per_host processes at most.
  CHECK(has(what_of("hosts 2\nnodes_per_host 0\n"), "p.txt:2: nodes_per_host 0 places no process anywhere"));
  CHECK(has(what_of("hosts 2\nnodes_per_host -3\n"), "p.txt:2: nodes_per_host '-3' is not a whole number"));
  const auto shared = strata::sim::parse_platform("hosts 2\ncores 2\nnodes_per_host 3\n", "p.txt");
  CHECK(shared.host_of(0) == 0);
  CHECK(shared.host_of(2) == 0);
  CHECK(shared.host_of(3) == 1);
  CHECK(shared.host_of(5) == 1);
  CHECK(p.host_of(3) == 3);
  CHECK(refusal_of(shared, 6) == "(accepted)");
  CHECK(has(refusal_of(shared, 7), "it has 2 hosts x 3 nodes per host, fewer than the run's 7 processes"));
  try {
    (void)strata::sim::load_platform("/nonexistent/platform.txt");
    FAIL("opened a missing file");
  } catch (const strata::error& e) {
    CHECK(has(e.what(), "cannot open platform file /nonexistent/platform.txt"));
  }
}

}  // namespace test_sim_platform
