// Bootstrap: rank and size from flags, launchers' environments (strata, Open MPI, PMI, Slurm) and
// hostfiles, Slurm's host lists expanded to each task's node, with errors that name the variable
// or the file and line.
#include <doctest/doctest.h>

#include <strata/runtime/cluster.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <tuple>
#include <utility>
#include <string>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_runtime_cluster {

namespace {

/// A fake environment.
struct env {
  std::map<std::string, std::string> vars;
  strata::getenv_fn fn() const {
    return [this](const char* k) -> const char* {
      auto it = vars.find(k);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

struct temp_file {
  std::string path;
  explicit temp_file(const std::string& text) {
    char tmpl[] = "/tmp/strata_hosts_XXXXXX";
    const int fd = ::mkstemp(tmpl);
    ::close(fd);
    path = tmpl;
    std::ofstream(path) << text;
  }
  ~temp_file() { std::remove(path.c_str()); }
};

}  // namespace

TEST_CASE("cluster: rank and size from each launcher's environment, in precedence order") {
  strata::cluster_options o;
  for (auto [rv, sv] : {std::pair{"STRATA_RANK", "STRATA_SIZE"}, std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                        std::pair{"PMI_RANK", "PMI_SIZE"}, std::pair{"SLURM_PROCID", "SLURM_NTASKS"}}) {
    env e{{{rv, "2"}, {sv, "4"}}};
    auto c = strata::make_cluster(o, e.fn());
    CHECK(c.rank == 2);
    CHECK(c.size == 4);
    CHECK(c.rank_source == rv);
    REQUIRE(c.tcp_config.peers.size() == 4);
    CHECK(c.tcp_config.peers[3] == std::pair<std::string, std::uint16_t>{"127.0.0.1", 29503});
    CHECK(c.tcp_config.rank == 2);
    CHECK(c.tcp_config.listen_address == "127.0.0.1");
  }
  // mpirun wins over srun when both are present (mpirun inside an allocation).
  env both{{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}};
  CHECK(strata::make_cluster(o, both.fn()).rank_source == "OMPI_COMM_WORLD_RANK");
  // Flags that agree with the launcher are fine; a size or rank that disagrees is an error naming both.
  o.rank = 1;
  o.size = 2;
  o.base_port = 7000;
  auto c = strata::make_cluster(o, both.fn());
  CHECK(c.rank == 1);
  CHECK(c.size == 2);
  CHECK(c.rank_source == "--node-rank");
  CHECK(c.tcp_config.peers[1].second == 7001);
  for (auto [rank, size, what] : {std::tuple{1u, 3u, "--size 3 disagrees with the launcher's world size 2 (OMPI_COMM_WORLD_RANK"},
                                  std::tuple{0u, 2u, "--node-rank 0 disagrees with the launcher's rank 1"}}) {
    o.rank = rank;
    o.size = size;
    std::error_code ec;
    std::string why;
    strata::make_cluster(o, ec, why, both.fn());
    CHECK(ec == strata::errc::bad_input);
    CHECK(why.find(what) != std::string::npos);
  }
  // Without a launcher the flags alone decide.
  o.rank = 0;
  o.size = 3;
  c = strata::make_cluster(o, env{}.fn());
  CHECK(c.size == 3);
  CHECK(c.tcp_config.peers[2].second == 7002);
}

TEST_CASE("cluster: Slurm host lists expand as Slurm writes them, malformed ones are named") {
  using list = std::vector<std::string>;
  auto expand = [](const char* l) {
    std::error_code ec;
    std::string why;
    auto out = strata::expand_slurm_hostlist(l, ec, why);
    return std::tuple{out, ec, why};
  };
  CHECK(std::get<0>(expand("node[01-04,07]")) == list{"node01", "node02", "node03", "node04", "node07"});
  CHECK(std::get<0>(expand("node[01-04,07],gpu3,login1")) == list{"node01", "node02", "node03", "node04", "node07", "gpu3", "login1"});
  CHECK(std::get<0>(expand("r[1-2]n[08-10]")) == list{"r1n08", "r1n09", "r1n10", "r2n08", "r2n09", "r2n10"});
  CHECK(std::get<0>(expand("c[9-11].ib")) == list{"c9.ib", "c10.ib", "c11.ib"});  // no zeros in "9": widths grow
  CHECK(std::get<0>(expand("a[098-101]")) == list{"a098", "a099", "a100", "a101"});
  CHECK(std::get<0>(expand("single")) == list{"single"});
  for (const char* bad : {"node[01-", "node]", "node[]", "node[4-2]", "node[a-b]", "n1,,n2", "node[1-2"}) {
    const std::string name = bad;
    CAPTURE(name);
    const auto [out, ec, why] = expand(bad);
    CHECK(ec == strata::errc::bad_input);
    CHECK(out.empty());
    CHECK(why.find(bad) != std::string::npos);
  }
  std::error_code ec;
  std::string why;
  CHECK(strata::expand_slurm_tasks_per_node("2(x3),1", ec, why) == std::vector<std::uint32_t>{2, 2, 2, 1});
  CHECK(!ec);
  CHECK(strata::expand_slurm_tasks_per_node("4", ec, why) == std::vector<std::uint32_t>{4});
  for (const char* bad : {"2(x3", "0", "x", "2(x0)", ""}) {
    const std::string name = bad;
    CAPTURE(name);
    CHECK(strata::expand_slurm_tasks_per_node(bad, ec, why).empty());
    CHECK(ec == strata::errc::bad_input);
  }
}

TEST_CASE("cluster: under srun each task's address comes from the step's nodes, block by block") {
  strata::cluster_options o;
  env e{{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "5"}, {"SLURM_NODELIST", "node[01-02,07]"}, {"SLURM_TASKS_PER_NODE", "2(x2),1"},
         {"STRATA_SECRET", "s3cret"}}};
  const auto c = strata::make_cluster(o, e.fn());
  REQUIRE(c.tcp_config.peers.size() == 5);
  const std::vector<std::pair<std::string, std::uint16_t>> want{
      {"node01", 29500}, {"node01", 29501}, {"node02", 29502}, {"node02", 29503}, {"node07", 29504}};
  CHECK(c.tcp_config.peers == want);
  CHECK(c.tcp_config.listen_address == "node02");  // its own node's address, not loopback
  // SLURM_JOB_NODELIST stands in for SLURM_NODELIST.
  env job = e;
  job.vars.erase("SLURM_NODELIST");
  job.vars["SLURM_JOB_NODELIST"] = "node[01-02,07]";
  CHECK(strata::make_cluster(o, job.fn()).tcp_config.peers == want);
  // A hostfile wins over the node list; without the lists, loopback as before.
  env bare{{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}}};
  CHECK(strata::make_cluster(o, bare.fn()).tcp_config.peers[1].first == "127.0.0.1");
  // Counts that do not add up to the tasks, or nodes that do not match the counts: named.
  for (auto [list, per] : {std::pair{"node[01-02,07]", "2(x2)"}, std::pair{"node[01-02]", "2(x2),1"}, std::pair{"node[01-02,07]", "1(x3)"}}) {
    env wrong = e;
    wrong.vars["SLURM_NODELIST"] = list;
    wrong.vars["SLURM_TASKS_PER_NODE"] = per;
    std::error_code ec;
    std::string why;
    strata::make_cluster(o, ec, why, wrong.fn());
    CAPTURE(why);
    CHECK(ec == strata::errc::bad_input);
    CHECK(why.find("SLURM_TASKS_PER_NODE") != std::string::npos);
  }
  env malformed = e;
  malformed.vars["SLURM_NODELIST"] = "node[01-";
  std::error_code ec;
  std::string why;
  strata::make_cluster(o, ec, why, malformed.fn());
  CHECK(ec == strata::errc::bad_input);
  CHECK(why.find("node[01-") != std::string::npos);
}

TEST_CASE("cluster: base port from STRATA_BASE_PORT, secret from STRATA_SECRET, flags first") {
  strata::cluster_options o;
  env e{{{"STRATA_RANK", "0"}, {"STRATA_SIZE", "2"}, {"STRATA_BASE_PORT", "41000"}, {"STRATA_SECRET", "s3"}}};
  auto c = strata::make_cluster(o, e.fn());
  CHECK(c.tcp_config.peers[1].second == 41001);
  CHECK(c.tcp_config.secret == "s3");
  o.secret = "flag";
  o.base_port = 5000;
  c = strata::make_cluster(o, e.fn());
  CHECK(c.tcp_config.secret == "flag");
  CHECK(c.tcp_config.peers[0].second == 5000);
}

TEST_CASE("cluster: errors name what was wrong") {
  strata::cluster_options o;
  std::error_code ec;
  std::string why;
  env none;
  strata::make_cluster(o, ec, why, none.fn());
  CHECK(ec == strata::errc::bad_input);
  CHECK(why.find("no rank given") != std::string::npos);
  CHECK(why.find("--node-rank") != std::string::npos);  // the flag every program accepts (strata_mf's --rank is its factor rank)

  env bad_rank{{{"OMPI_COMM_WORLD_RANK", "x1"}, {"OMPI_COMM_WORLD_SIZE", "2"}}};
  strata::make_cluster(o, ec, why, bad_rank.fn());
  CHECK(why.find("OMPI_COMM_WORLD_RANK='x1'") != std::string::npos);

  env no_size{{{"PMI_RANK", "0"}}};
  strata::make_cluster(o, ec, why, no_size.fn());
  CHECK(why.find("PMI_SIZE") != std::string::npos);

  env too_big{{{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}}};
  strata::make_cluster(o, ec, why, too_big.fn());
  CHECK(why.find("SLURM_PROCID=4 is not below SLURM_NTASKS=4") != std::string::npos);

  o.rank = 5;
  o.size = 2;
  strata::make_cluster(o, ec, why, none.fn());
  CHECK(why.find("rank 5 (from --node-rank) is not below the world size 2") != std::string::npos);

  o.rank = 0;
  o.size = 10;
  o.base_port = 65530;
  strata::make_cluster(o, ec, why, none.fn());
  CHECK(why.find("run past 65535") != std::string::npos);
  CHECK_THROWS_AS(strata::make_cluster(o, none.fn()), strata::error);
}

TEST_CASE("cluster: hostfile gives addresses and size, a bad line is named file:line") {
  temp_file good("# two machines\nnode-a 7000\n\n10.200.1.2\t7001   # second\n");
  strata::cluster_options o;
  o.hostfile = good.path;
  o.rank = 1;
  env none;
  auto c = strata::make_cluster(o, none.fn());
  CHECK(c.size == 2);
  CHECK(c.tcp_config.peers[0] == std::pair<std::string, std::uint16_t>{"node-a", 7000});
  CHECK(c.tcp_config.peers[1] == std::pair<std::string, std::uint16_t>{"10.200.1.2", 7001});
  CHECK(c.tcp_config.listen_address == "10.200.1.2");  // this rank's own host, not loopback
  o.listen_address = "0.0.0.0";
  CHECK(strata::make_cluster(o, none.fn()).tcp_config.listen_address == "0.0.0.0");
  CHECK_FALSE(strata::make_cluster(o, none.fn()).tcp_config.insecure);
  o.insecure = true;  // --insecure reaches the transport
  CHECK(strata::make_cluster(o, none.fn()).tcp_config.insecure);
  o.size = 3;
  std::error_code ec;
  std::string why;
  strata::make_cluster(o, ec, why, none.fn());
  CHECK(why.find("lists 2 hosts but the world size is 3") != std::string::npos);

  for (auto [text, line, reason] : {std::tuple{"a 1\nb\n", 2, "missing port"}, std::tuple{"a 1\nb 2\nc 70000\n", 3, "port must be"},
                                    std::tuple{"a x\n", 1, "port must be"}, std::tuple{"# c\na 1 2\n", 2, "extra fields"}}) {
    temp_file f(text);
    strata::read_hostfile(f.path, ec, why);
    CHECK(ec == strata::errc::bad_input);
    CHECK(why.find(f.path + ":" + std::to_string(line) + ": " + reason) != std::string::npos);
    CHECK(why.find("expected 'host port'") != std::string::npos);
  }
  strata::read_hostfile("/nonexistent/hosts", ec, why);
  CHECK(why.find("/nonexistent/hosts: cannot open") != std::string::npos);
  temp_file empty("# nothing\n");
  CHECK_THROWS_AS(strata::read_hostfile(empty.path), strata::error);
}

}  // namespace test_runtime_cluster
