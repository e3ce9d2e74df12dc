#pragma once
/// \file Bootstrap of a multi-process run: this process's rank, the world size and every rank's
/// address, from command-line values, a hostfile, or the environment a launcher sets, turned
/// into a `tcp::config`. No MPI is linked: `mpirun -np 4 ./trainer` and `srun ./trainer` work
/// because their environment variables are read.
///
///     strata::cluster_options o;            // or strata::add_cluster_options(cli_app, o)
///     auto cl = strata::make_cluster(o);    // throws strata::error naming what was wrong
///     strata::system<strata::essp<2>, strata::tcp> sys({.nodes = cl.size, ...}, cl.tcp_config);
///
/// Precedence: an explicit rank / size, then STRATA_RANK / STRATA_SIZE (scripts/launch.sh),
/// OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE (Open MPI's mpirun), PMI_RANK / PMI_SIZE (MPICH,
/// Intel MPI, hydra), SLURM_PROCID / SLURM_NTASKS (srun). Addresses: a hostfile (line i is rank i);
/// without one under srun, each task's node from SLURM_NODELIST and SLURM_TASKS_PER_NODE (block
/// distribution) and port base_port + rank; otherwise `host` (loopback) and port base_port + rank.
/// The shared secret: the option, else STRATA_SECRET.
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <strata/core/error.hpp>
#include <strata/transport/tcp.hpp>

namespace strata {

/// What the user said (flags); anything left empty comes from the environment or a default.
struct cluster_options {
  std::optional<node_id> rank;          ///< this process's rank
  std::optional<std::uint32_t> size;    ///< number of processes
  std::string hostfile;                 ///< "host port" per line, line i = rank i ('#' comments)
  std::optional<std::uint16_t> base_port;  ///< without a hostfile: rank r uses base_port + r (default 29500, or STRATA_BASE_PORT)
  std::string host = "127.0.0.1";       ///< without a hostfile: the host of every rank
  std::string listen_address;           ///< default: loopback, or this rank's hostfile host when that is not loopback
  std::string secret;                   ///< default: $STRATA_SECRET
  bool insecure = false;                ///< --insecure: a non-loopback listen address without a secret is allowed
  std::size_t max_frame = wire::default_max_frame;
  std::chrono::milliseconds connect_timeout{30000};
  std::chrono::milliseconds peer_timeout{10000};
};

/// The resolved bootstrap.
struct cluster {
  node_id rank = 0;
  std::uint32_t size = 1;
  std::string rank_source;  ///< where the rank came from ("--rank", "STRATA_RANK", "OMPI_COMM_WORLD_RANK", ...)
  tcp::config tcp_config;  ///< pass to system<C, tcp>'s constructor
};

/// Looks up an environment variable (nullptr when unset); replaceable for tests.
using getenv_fn = std::function<const char*(const char*)>;

namespace detail {
inline const char* system_getenv(const char* name) { return std::getenv(name); }

inline bool parse_uint(std::string_view s, std::uint64_t& out) {
  if (s.empty()) return false;
  auto [p, e] = std::from_chars(s.data(), s.data() + s.size(), out);
  return e == std::errc{} && p == s.data() + s.size();
}
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}
}  // namespace detail

/// Reads a hostfile: one "host port" per line, in rank order; blank lines and '#' comments are
/// skipped. On a bad line sets errc::bad_input and `why` = "file:line: reason".
inline std::vector<std::pair<std::string, std::uint16_t>> read_hostfile(const std::string& path, std::error_code& ec,
                                                                       std::string& why) {
  ec.clear();
  std::vector<std::pair<std::string, std::uint16_t>> out;
  std::ifstream in(path);
  if (!in) {
    ec = make_error_code(errc::bad_input);
    why = path + ": cannot open the hostfile";
    return {};
  }
  std::string line;
  for (std::size_t no = 1; std::getline(in, line); ++no) {
    std::string_view s = line;
    if (auto h = s.find('#'); h != std::string_view::npos) s = s.substr(0, h);
    s = detail::trim(s);
    if (s.empty()) continue;
    const auto sp = s.find_first_of(" \t");
    const auto bad = [&](const std::string& reason) {
      ec = make_error_code(errc::bad_input);
      why = path + ":" + std::to_string(no) + ": " + reason + " (expected 'host port', got '" + line + "')";
      return std::vector<std::pair<std::string, std::uint16_t>>{};
    };
    if (sp == std::string_view::npos) return bad("missing port");
    const auto host = s.substr(0, sp);
    const auto rest = detail::trim(s.substr(sp));
    if (rest.find_first_of(" \t") != std::string_view::npos) return bad("extra fields");
    std::uint64_t port = 0;
    if (!detail::parse_uint(rest, port) || port == 0 || port > 65535) return bad("port must be 1..65535");
    out.emplace_back(std::string(host), static_cast<std::uint16_t>(port));
  }
  if (out.empty()) {
    ec = make_error_code(errc::bad_input);
    why = path + ": no hosts listed";
  }
  return out;
}

/// Throwing form of read_hostfile.
inline std::vector<std::pair<std::string, std::uint16_t>> read_hostfile(const std::string& path) {
  std::error_code ec;
  std::string why;
  auto h = read_hostfile(path, ec, why);
  if (ec) throw error(ec, why);
  return h;
}

namespace detail {
// Appends every name of one Slurm hostlist entry (no top-level commas) to `out`: each bracket
// group "[a-b,c,...]" multiplies the names, ranges keep the width of their first bound's zeros.
inline bool expand_hostlist_entry(std::string_view e, std::string prefix, std::vector<std::string>& out, std::string& why) {
  const auto open = e.find('[');
  if (open == std::string_view::npos) {
    if (e.find(']') != std::string_view::npos) return why = "a ']' without '['", false;
    out.push_back(prefix + std::string(e));
    return true;
  }
  const auto close = e.find(']', open);
  if (close == std::string_view::npos) return why = "a '[' without ']'", false;
  prefix += std::string(e.substr(0, open));
  const auto body = e.substr(open + 1, close - open - 1), rest = e.substr(close + 1);
  if (body.empty()) return why = "an empty '[]'", false;
  for (std::size_t at = 0; at <= body.size();) {
    auto comma = body.find(',', at);
    if (comma == std::string_view::npos) comma = body.size();
    const auto part = body.substr(at, comma - at);
    const auto dash = part.find('-');
    const auto lo = part.substr(0, dash), hi = dash == std::string_view::npos ? lo : part.substr(dash + 1);
    std::uint64_t a = 0, b = 0;
    if (!parse_uint(lo, a) || !parse_uint(hi, b)) return why = "'" + std::string(part) + "' is not a number or a range", false;
    if (b < a) return why = "the range '" + std::string(part) + "' runs backwards", false;
    if (b - a >= 1u << 20) return why = "the range '" + std::string(part) + "' names more than 2^20 hosts", false;
    for (std::uint64_t x = a; x <= b; ++x) {
      std::string n = std::to_string(x);
      if (n.size() < lo.size()) n.insert(0, lo.size() - n.size(), '0');
      if (!expand_hostlist_entry(rest, prefix + n, out, why)) return false;
    }
    at = comma + 1;
  }
  return true;
}
}  // namespace detail

/// Expands a Slurm hostlist (SLURM_NODELIST / SLURM_JOB_NODELIST): "node[01-04,07],gpu3" is
/// node01 node02 node03 node04 node07 gpu3; several bracket groups in one name multiply
/// ("r[1-2]n[1-2]": r1n1 r1n2 r2n1 r2n2). A malformed list sets errc::bad_input and `why`.
inline std::vector<std::string> expand_slurm_hostlist(std::string_view list, std::error_code& ec, std::string& why) {
  ec.clear();
  std::vector<std::string> out;
  std::size_t depth = 0, start = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    const char ch = i < list.size() ? list[i] : ',';
    if (ch == '[') ++depth;
    else if (ch == ']' && depth > 0) --depth;
    else if ((ch == ',' && depth == 0) || i == list.size()) {  // (an unclosed '[' ends at the end)
      const auto e = detail::trim(list.substr(start, i - start));
      std::string reason;
      if (e.empty() || !detail::expand_hostlist_entry(e, {}, out, reason)) {
        ec = make_error_code(errc::bad_input);
        why = "the Slurm host list '" + std::string(list) + "' is malformed: " + (e.empty() ? std::string("an empty name") : reason);
        return {};
      }
      start = i + 1;
    }
  }
  return out;
}

/// Expands SLURM_TASKS_PER_NODE ("2(x3),1": 2 tasks on each of 3 nodes, then 1) into one count
/// per node. A malformed value sets errc::bad_input and `why`.
inline std::vector<std::uint32_t> expand_slurm_tasks_per_node(std::string_view v, std::error_code& ec, std::string& why) {
  ec.clear();
  std::vector<std::uint32_t> out;
  for (std::size_t at = 0; at <= v.size();) {
    auto comma = v.find(',', at);
    if (comma == std::string_view::npos) comma = v.size();
    const auto part = detail::trim(v.substr(at, comma - at));
    std::uint64_t n = 0, times = 1;
    const auto paren = part.find("(x");
    const bool ok = paren == std::string_view::npos
                        ? detail::parse_uint(part, n)
                        : part.back() == ')' && detail::parse_uint(part.substr(0, paren), n) &&
                              detail::parse_uint(part.substr(paren + 2, part.size() - paren - 3), times);
    if (!ok || n == 0 || n > 0xffffffffu || times == 0 || times > (1u << 20)) {
      ec = make_error_code(errc::bad_input);
      why = "SLURM_TASKS_PER_NODE='" + std::string(v) + "' is malformed at '" + std::string(part) + "'";
      return {};
    }
    out.insert(out.end(), times, static_cast<std::uint32_t>(n));
    at = comma + 1;
  }
  return out;
}

/// The host of every task of a Slurm step in rank order, from SLURM_NODELIST (or
/// SLURM_JOB_NODELIST) and SLURM_TASKS_PER_NODE under srun's default block distribution (node 0
/// takes tasks 0..n0-1, node 1 the next n1, ...). Empty when the variables are not set; sets
/// errc::bad_input when they are malformed or do not add up to `size` tasks.
inline std::vector<std::string> slurm_task_hosts(std::uint32_t size, std::error_code& ec, std::string& why,
                                                 const getenv_fn& getenv = detail::system_getenv) {
  ec.clear();
  const char* list = getenv("SLURM_NODELIST");
  if (!list) list = getenv("SLURM_JOB_NODELIST");
  const char* per = getenv("SLURM_TASKS_PER_NODE");
  if (!list || !per) return {};
  const auto nodes = expand_slurm_hostlist(list, ec, why);
  if (ec) return {};
  const auto counts = expand_slurm_tasks_per_node(per, ec, why);
  if (ec) return {};
  if (counts.size() != nodes.size()) {
    ec = make_error_code(errc::bad_input);
    why = "SLURM_TASKS_PER_NODE='" + std::string(per) + "' gives " + std::to_string(counts.size()) + " nodes, the node list '" +
          list + "' " + std::to_string(nodes.size());
    return {};
  }
  std::vector<std::string> hosts;
  for (std::size_t i = 0; i < nodes.size(); ++i) hosts.insert(hosts.end(), counts[i], nodes[i]);
  if (hosts.size() != size) {
    ec = make_error_code(errc::bad_input);
    why = "SLURM_TASKS_PER_NODE='" + std::string(per) + "' adds up to " + std::to_string(hosts.size()) + " tasks, the world size is " +
          std::to_string(size);
    return {};
  }
  return hosts;
}

/// Rank and size from a launcher's environment, if any launcher set them.
struct launcher_rank {
  node_id rank = 0;
  std::uint32_t size = 0;
  std::string source;  ///< the rank variable's name
};

/// Reads STRATA_*, OMPI_COMM_WORLD_*, PMI_*, SLURM_* in that order. A pair that is set but not a
/// number (or a rank not below the size) sets errc::bad_input naming the variable.
inline std::optional<launcher_rank> rank_from_environment(std::error_code& ec, std::string& why,
                                                          const getenv_fn& getenv = detail::system_getenv) {
  ec.clear();
  static constexpr std::pair<const char*, const char*> vars[] = {{"STRATA_RANK", "STRATA_SIZE"},
                                                                 {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                                                 {"PMI_RANK", "PMI_SIZE"},
                                                                 {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (auto [rv, sv] : vars) {
    const char* r = getenv(rv);
    if (!r) continue;
    const char* s = getenv(sv);
    std::uint64_t rank = 0, size = 0;
    if (!detail::parse_uint(r, rank)) {
      ec = make_error_code(errc::bad_input);
      why = std::string(rv) + "='" + r + "' is not a rank";
      return std::nullopt;
    }
    if (!s || !detail::parse_uint(s, size) || size == 0 || size > 0xffffffffu) {
      ec = make_error_code(errc::bad_input);
      why = std::string(rv) + " is set but " + sv + (s ? "='" + std::string(s) + "' is not a size" : " is not");
      return std::nullopt;
    }
    if (rank >= size) {
      ec = make_error_code(errc::bad_input);
      why = std::string(rv) + "=" + std::to_string(rank) + " is not below " + sv + "=" + std::to_string(size);
      return std::nullopt;
    }
    return launcher_rank{static_cast<node_id>(rank), static_cast<std::uint32_t>(size), rv};
  }
  return std::nullopt;
}

/// Empty when the flags' --size and --node-rank (where given) agree with a launcher's `size` and
/// `rank`; else the sentence that names both (`source`: where the launcher's come from, e.g.
/// "OMPI_COMM_WORLD_RANK is set"). A --size 3 under `mpirun -n 2` would wait for a rank that never comes.
inline std::string launch_disagreement(const cluster_options& o, node_id rank, std::uint32_t size, const std::string& source) {
  if (o.size && *o.size != size)
    return "--size " + std::to_string(*o.size) + " disagrees with the launcher's world size " + std::to_string(size) + " (" + source +
           "; drop --size or start as many processes as it says)";
  if (o.rank && *o.rank != rank)
    return "--node-rank " + std::to_string(*o.rank) + " disagrees with the launcher's rank " + std::to_string(rank) + " (" + source + ")";
  return {};
}

/// Resolves options + environment into a cluster. Errors (errc::bad_input, with `why`): no rank
/// anywhere, rank >= size, a flag's rank or size that disagrees with a launcher's, a hostfile
/// line, a hostfile whose length differs from the size, Slurm variables that are malformed or do
/// not add up, ports past 65535.
inline cluster make_cluster(const cluster_options& o, std::error_code& ec, std::string& why,
                            const getenv_fn& getenv = detail::system_getenv) {
  ec.clear();
  cluster c;
  auto bad = [&](std::string reason) {
    ec = make_error_code(errc::bad_input);
    why = std::move(reason);
    return cluster{};
  };
  std::vector<std::pair<std::string, std::uint16_t>> hosts;
  if (!o.hostfile.empty()) {
    hosts = read_hostfile(o.hostfile, ec, why);
    if (ec) return cluster{};
  }
  // A launcher's rank and size are read even when flags give them: the two must agree (a --size
  // 3 under `mpirun -n 2` would wait for a rank that never comes).
  std::optional<launcher_rank> env = rank_from_environment(ec, why, getenv);
  if (ec) return cluster{};
  if (env) {
    std::string d = launch_disagreement(o, env->rank, env->size, env->source + " is set");
    if (!d.empty()) return bad(std::move(d));
  }
  if (o.rank) {
    c.rank = *o.rank;
    c.rank_source = "--node-rank";
  } else if (env) {
    c.rank = env->rank;
    c.rank_source = env->source;
  } else {
    return bad("no rank given: pass --node-rank, or start under scripts/launch.sh, mpirun or srun "
               "(STRATA_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID)");
  }
  if (o.size) c.size = *o.size;
  else if (env) c.size = env->size;
  else if (!hosts.empty()) c.size = static_cast<std::uint32_t>(hosts.size());
  else return bad("no world size given: pass --size or a hostfile, or start under a launcher");
  if (c.size == 0) return bad("world size must be at least 1");
  if (c.rank >= c.size)
    return bad("rank " + std::to_string(c.rank) + " (from " + c.rank_source + ") is not below the world size " +
               std::to_string(c.size));
  if (!hosts.empty() && hosts.size() != c.size)
    return bad(o.hostfile + " lists " + std::to_string(hosts.size()) + " hosts but the world size is " +
               std::to_string(c.size));

  // Under srun without a hostfile: each task's host from the step's node list (block
  // distribution), ports base_port + rank as below, so tasks sharing a node differ by port.
  std::vector<std::string> slurm_hosts;
  if (hosts.empty() && c.rank_source == "SLURM_PROCID") {
    slurm_hosts = slurm_task_hosts(c.size, ec, why, getenv);
    if (ec) return cluster{};
  }
  if (hosts.empty()) {
    std::uint64_t base = 29500;
    if (o.base_port) base = *o.base_port;
    else if (const char* b = getenv("STRATA_BASE_PORT")) {
      if (!detail::parse_uint(b, base) || base == 0 || base > 65535)
        return bad(std::string("STRATA_BASE_PORT='") + b + "' is not a port");
    }
    if (base + c.size - 1 > 65535)
      return bad("ports " + std::to_string(base) + ".." + std::to_string(base + c.size - 1) + " run past 65535");
    for (std::uint32_t r = 0; r < c.size; ++r)
      hosts.emplace_back(slurm_hosts.empty() ? o.host : slurm_hosts[r], static_cast<std::uint16_t>(base + r));
  }
  c.tcp_config.rank = c.rank;
  c.tcp_config.peers = hosts;
  if (!o.listen_address.empty()) c.tcp_config.listen_address = o.listen_address;
  else if ((!o.hostfile.empty() || !slurm_hosts.empty()) && hosts[c.rank].first != "localhost")
    c.tcp_config.listen_address = hosts[c.rank].first;
  else c.tcp_config.listen_address = "127.0.0.1";
  c.tcp_config.secret = o.secret;
  if (c.tcp_config.secret.empty())
    if (const char* s = getenv("STRATA_SECRET")) c.tcp_config.secret = s;
  c.tcp_config.insecure = o.insecure;
  c.tcp_config.max_frame = o.max_frame;
  c.tcp_config.connect_timeout = o.connect_timeout;
  c.tcp_config.peer_timeout = o.peer_timeout;
  return c;
}

/// Throwing form of make_cluster.
inline cluster make_cluster(const cluster_options& o, const getenv_fn& getenv = detail::system_getenv) {
  std::error_code ec;
  std::string why;
  auto c = make_cluster(o, ec, why, getenv);
  if (ec) throw error(ec, why);
  return c;
}

namespace detail {
/// A CLI11-style check (empty: good, else the reason) for flags that hold a count of milliseconds
/// or bytes: a whole number >= `min`. A negative value would otherwise become a timeout that has
/// already run out or, for an unsigned flag, wrap to 2^64 - 1.
inline auto whole_number_at_least(std::uint64_t min, const char* unit) {
  return [min, unit](const std::string& s) -> std::string {
    std::uint64_t v = 0;
    if (!parse_uint(s, v) || v < min || v > static_cast<std::uint64_t>(INT64_MAX))
      return "must be a whole number of " + std::string(unit) + " >= " + std::to_string(min) + ", got '" + s + "'";
    return {};
  };
}
}  // namespace detail

/// Registers --node-rank (also spelled --rank), --size, --hostfile, --base-port, --host, --listen, --secret, --insecure, --max-frame,
/// --connect-timeout-ms and --peer-timeout-ms on a CLI11 `CLI::App` (any type with CLI11's
/// `add_option_function<T>(name, fn, description)` returning an option with `check(fn)`, and
/// `add_flag_function`; strata does not depend on CLI11). The timeouts and --max-frame refuse a negative or fractional value.
template <class App>
void add_cluster_options(App& app, cluster_options& o) {
  app.template add_option_function<std::uint32_t>(
      "--node-rank,--rank", [&o](const std::uint32_t& v) { o.rank = v; },
      "this process's rank (default: from the launcher's environment); --rank where the program has no --rank of its own");
  app.template add_option_function<std::uint32_t>(
      "--size", [&o](const std::uint32_t& v) { o.size = v; }, "number of processes (default: launcher or hostfile)");
  app.template add_option_function<std::string>(
      "--hostfile", [&o](const std::string& v) { o.hostfile = v; }, "file of 'host port' lines, line i = rank i");
  app.template add_option_function<std::uint16_t>(
      "--base-port", [&o](const std::uint16_t& v) { o.base_port = v; }, "without a hostfile, rank r listens on base-port + r");
  app.template add_option_function<std::string>(
      "--host", [&o](const std::string& v) { o.host = v; }, "without a hostfile, the host of every rank (default 127.0.0.1)");
  app.template add_option_function<std::string>(
      "--listen", [&o](const std::string& v) { o.listen_address = v; }, "address to listen on (default loopback)");
  app.template add_option_function<std::string>(
      "--secret", [&o](const std::string& v) { o.secret = v; }, "shared secret required in the handshake (default $STRATA_SECRET)");
  app.add_flag_function(
      "--insecure", [&o](std::int64_t n) { o.insecure = n > 0; },
      "allow listening on a non-loopback address without --secret (anyone who reaches the port can join the run)");
  app.template add_option_function<std::size_t>(
      "--max-frame", [&o](const std::size_t& v) { o.max_frame = v; }, "largest frame accepted or sent, bytes")
      ->check(detail::whole_number_at_least(1, "bytes"));
  app.template add_option_function<std::int64_t>(
      "--connect-timeout-ms", [&o](const std::int64_t& v) { o.connect_timeout = std::chrono::milliseconds(v); },
      "how long to wait for every peer's handshake")
      ->check(detail::whole_number_at_least(0, "milliseconds"));
  app.template add_option_function<std::int64_t>(
      "--peer-timeout-ms", [&o](const std::int64_t& v) { o.peer_timeout = std::chrono::milliseconds(v); },
      "a silent peer is lost after this long")
      ->check(detail::whole_number_at_least(0, "milliseconds"));
}

}  // namespace strata
