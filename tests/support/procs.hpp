#pragma once
// Child processes for the tests that run strata programs (the tcp and mpi transports' tests): a
// temporary folder, spawning with stdout and stderr in files and without the launchers' rank
// variables, waiting with a bound (SIGKILL after it), reading what they wrote, and free ports.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace strata_test::procs {

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

inline bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A scratch directory removed at the end of the test.
struct temp_folder {
  std::string dir;
  temp_folder() {
    char tmpl[] = "/tmp/strata_net_XXXXXX";
    dir = ::mkdtemp(tmpl);
  }
  ~temp_folder() {
    const std::string cmd = "rm -rf '" + dir + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir.c_str());
  }
  std::string path(const std::string& name) const { return dir + "/" + name; }
};

/// A child process with stdout and stderr in files.
struct proc {
  pid_t pid = -1;
  std::string out_path, err_path;
  int status = -1;
  bool done = false;
  std::string out() const { return read_file(out_path); }
  std::string err() const { return read_file(err_path); }
  int exit_code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }
};

inline proc spawn(const std::vector<std::string>& argv, const temp_folder& dir, const std::string& name,
           const std::vector<std::string>& extra_env = {}) {
  proc p;
  p.out_path = dir.path(name + ".out");
  p.err_path = dir.path(name + ".err");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, p.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, p.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_store;
  auto overridden = [&](const std::string& kv) {  // extra_env's variables replace the inherited ones
    const auto eq = kv.find('=');
    for (auto& x : extra_env)
      if (x.compare(0, eq + 1, kv, 0, eq + 1) == 0) return true;
    return false;
  };
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (overridden(kv)) continue;
    // The test controls rank variables itself.
    if (kv.rfind("STRATA_", 0) == 0 || kv.rfind("OMPI_COMM_WORLD_", 0) == 0 || kv.rfind("PMI_", 0) == 0 ||
        kv.rfind("SLURM_", 0) == 0)
      continue;
    env_store.push_back(kv);
  }
  for (auto& e : extra_env) env_store.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const int rc = posix_spawnp(&p.pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE_MESSAGE(rc == 0, "posix_spawn " << argv[0] << ": " << std::strerror(rc));
  return p;
}

/// Waits for every process, at most `limit`; kills (SIGKILL) those still running then. Returns
/// false on a timeout.
inline bool wait_all(std::vector<proc*> ps, std::chrono::milliseconds limit) {
  const auto deadline = clk::now() + limit;
  for (;;) {
    bool all = true;
    for (auto* p : ps) {
      if (p->done) continue;
      if (::waitpid(p->pid, &p->status, WNOHANG) == p->pid) p->done = true;
      else all = false;
    }
    if (all) return true;
    if (clk::now() > deadline) {
      for (auto* p : ps)
        if (!p->done) {
          ::kill(p->pid, SIGKILL);
          ::waitpid(p->pid, &p->status, 0);
          p->done = true;
        }
      return false;
    }
    std::this_thread::sleep_for(5ms);
  }
}
inline bool wait_all(std::vector<proc>& ps, std::chrono::milliseconds limit) {
  std::vector<proc*> v;
  for (auto& p : ps) v.push_back(&p);
  return wait_all(v, limit);
}

/// A base port with `n` consecutive free ports (for base_port + rank addressing).
inline std::uint16_t free_port_run(int n) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    const auto base = static_cast<std::uint16_t>(20000 + (static_cast<unsigned>(::getpid()) * 7 + attempt * 97) % 30000);
    bool ok = true;
    std::vector<int> fds;
    for (int i = 0; i < n && ok; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<std::uint16_t>(base + i));
      ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
      fds.push_back(fd);
    }
    for (int fd : fds) ::close(fd);
    if (ok) return base;
  }
  FAIL("no run of free ports");
  return 0;
}

}  // namespace strata_test::procs
