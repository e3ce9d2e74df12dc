#pragma once
/// \file A simulated cluster as data: hosts, cores, speed, each host's link, the topology, and
/// stragglers, read from a small text file (one statement per line) or built in C++. No SimGrid
/// here: sim/simgrid_platform.hpp turns a platform into SimGrid zones. Every error names the file
/// and line; a platform that cannot carry a run (no hosts, a zero bandwidth, a negative speed, fewer
/// hosts than the run's processes) is refused with a sentence.
///
///     # 16 hosts of 8 cores on a 10 GbE switch
///     name       cluster16-10gbe
///     topology   star              # star | fat_tree
///     hosts      16
///     cores      8
///     nodes_per_host 1             # node (process) n runs on host n / nodes_per_host (default 1)
///     speed      1.0               # of one core, relative to the calibrated reference core
///     link       10Gbps 20us       # each host's link to the switch: bandwidth, latency
///     straggler  3 0.25            # host 3 runs at 0.25x speed (any number of lines)
///     stragglers 0.1 0.25 7        # or: a fraction of the hosts, drawn with a seed, at 0.25x
///     fat_tree   2;4,4;1,2;1,2     # fat_tree only: SimGrid's descriptor (levels; down; up; links)
///
/// Bandwidths take bps / Bps with k, M, G, T (10Gbps = 1.25e9 bytes/s); latencies s, ms, us, ns.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/error.hpp>

namespace strata::sim {

/// A link: bytes per second and seconds.
struct link_spec {
  double bandwidth = 1.25e9;  ///< bytes/s (10 Gbps)
  double latency = 20e-6;     ///< s
};

/// A fat tree in SimGrid's terms: levels, and per level the down links, up links and parallel links.
struct fat_tree_shape {
  unsigned levels = 0;
  std::vector<unsigned> down, up, links;
  /// The leaves (hosts): the product of the down counts.
  unsigned long leaves() const {
    unsigned long n = 1;
    for (unsigned d : down) n *= d;
    return n;
  }
};

/// A simulated cluster.
struct platform {
  enum class shape { star, fat_tree };
  std::string name = "platform";
  shape topology = shape::star;
  std::uint32_t hosts = 1;
  std::uint32_t cores = 1;       ///< per host
  /// Nodes (processes) per host: node n runs on host n / nodes_per_host. 1 (the default): a host
  /// per process; more: processes that share a host's cores, as several on one machine do.
  std::uint32_t nodes_per_host = 1;
  double speed = 1.0;            ///< of one core, relative to the reference core (this machine's, calibrated)
  link_spec link;                ///< each host's link to its switch
  std::string fat_tree;          ///< SimGrid's fat-tree descriptor, e.g. "2;4,4;1,2;1,2" (fat_tree only)
  std::vector<std::pair<std::uint32_t, double>> stragglers;  ///< host, speed factor
  double straggler_fraction = 0;  ///< of the hosts, drawn with straggler_seed, at straggler_factor
  double straggler_factor = 1;
  std::uint64_t straggler_seed = 1;

  /// The fat_tree descriptor "2;4,4;1,2;1,2" parsed; throws strata::error(bad_input) with a
  /// sentence when malformed or when its leaves are not the platform's hosts.
  fat_tree_shape fat_tree_levels() const {
    auto bad = [&](const std::string& why) { throw error(errc::bad_input, "platform " + name + ": fat_tree '" + fat_tree + "': " + why); };
    std::vector<std::vector<unsigned>> parts(1);
    std::string cur;
    auto number = [&] {
      unsigned long v = 0;
      if (cur.empty()) bad("an empty number");
      for (char c : cur) {
        if (c < '0' || c > '9') bad("'" + cur + "' is not a whole number");
        v = v * 10 + static_cast<unsigned long>(c - '0');
        if (v > 1000000) bad("'" + cur + "' is too large");
      }
      parts.back().push_back(static_cast<unsigned>(v));
      cur.clear();
    };
    for (char c : fat_tree) {
      if (c == ',') number();
      else if (c == ';') {
        number();
        parts.emplace_back();
      } else cur += c;
    }
    number();
    if (parts.size() != 4 || parts[0].size() != 1) bad("expected LEVELS;DOWN,...;UP,...;LINKS,...");
    fat_tree_shape f{parts[0][0], parts[1], parts[2], parts[3]};
    if (f.levels == 0 || f.down.size() != f.levels || f.up.size() != f.levels || f.links.size() != f.levels)
      bad("DOWN, UP and LINKS need " + std::to_string(f.levels) + " numbers each");
    for (const auto* v : {&f.down, &f.up, &f.links})
      for (unsigned x : *v)
        if (x == 0) bad("a count of 0");
    if (f.leaves() != hosts) bad("it has " + std::to_string(f.leaves()) + " leaves, and the platform " + std::to_string(hosts) + " hosts");
    return f;
  }

  /// The host that node `n` runs on.
  std::uint32_t host_of(std::uint32_t n) const noexcept { return n / nodes_per_host; }

  /// Each host's core speed (speed x its straggler factor), deterministic for a seed.
  std::vector<double> host_speeds() const {
    std::vector<double> s(hosts, speed);
    if (straggler_fraction > 0) {
      std::vector<std::uint32_t> ids(hosts);
      for (std::uint32_t i = 0; i < hosts; ++i) ids[i] = i;
      std::mt19937_64 rng(straggler_seed);
      for (std::uint32_t i = hosts; i > 1; --i) std::swap(ids[i - 1], ids[static_cast<std::uint32_t>(rng() % i)]);  // Fisher-Yates, portable
      const auto n = static_cast<std::uint32_t>(std::llround(straggler_fraction * hosts));
      for (std::uint32_t i = 0; i < n; ++i) s[ids[i]] *= straggler_factor;
    }
    for (auto [h, f] : stragglers) s[h] *= f;
    return s;
  }

  /// Throws strata::error(bad_input) with a sentence when the platform cannot carry a run of
  /// `processes` processes (0: any): no hosts, fewer hosts than processes, a speed, factor,
  /// bandwidth or latency out of range, a straggler on a host that does not exist.
  void check(std::uint32_t processes = 0) const {
    auto bad = [&](const std::string& why) { throw error(errc::bad_input, "platform " + name + ": " + why); };
    if (hosts == 0) bad("it has no hosts");
    if (cores == 0) bad("its hosts have no cores");
    if (!(speed > 0) || !std::isfinite(speed)) bad("speed " + fmt(speed) + " is not a positive number");
    if (!(link.bandwidth > 0) || !std::isfinite(link.bandwidth)) bad("link bandwidth " + fmt(link.bandwidth) + " bytes/s is not positive");
    if (!(link.latency >= 0) || !std::isfinite(link.latency)) bad("link latency " + fmt(link.latency) + " s is negative");
    if (topology == shape::fat_tree && fat_tree.empty()) bad("topology fat_tree needs a fat_tree descriptor line");
    if (topology == shape::fat_tree) (void)fat_tree_levels();
    for (auto [h, f] : stragglers) {
      if (h >= hosts) bad("straggler host " + std::to_string(h) + " does not exist (hosts 0.." + std::to_string(hosts - 1) + ")");
      if (!(f > 0)) bad("straggler factor " + fmt(f) + " of host " + std::to_string(h) + " is not positive");
    }
    if (straggler_fraction < 0 || straggler_fraction > 1) bad("straggler fraction " + fmt(straggler_fraction) + " is not in [0, 1]");
    if (straggler_fraction > 0 && !(straggler_factor > 0)) bad("straggler factor " + fmt(straggler_factor) + " is not positive");
    if (nodes_per_host == 0) bad("nodes_per_host 0 places no process anywhere");
    if (processes > std::uint64_t{hosts} * nodes_per_host)
      bad("it has " + std::to_string(hosts) + " hosts" +
          (nodes_per_host > 1 ? " x " + std::to_string(nodes_per_host) + " nodes per host" : std::string()) + ", fewer than the run's " +
          std::to_string(processes) + " processes");
  }

  static std::string fmt(double x) {
    std::ostringstream o;
    o << x;
    return o.str();
  }
};

namespace detail {
inline std::string_view trim_ws(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}
/// A number and what follows it ("10Gbps" -> 10, "Gbps"); false when it does not start with one.
inline bool split_number(std::string_view s, double& x, std::string_view& unit) {
  const auto* e = s.data() + s.size();
  const auto r = std::from_chars(s.data(), e, x);
  if (r.ec != std::errc{}) return false;
  unit = std::string_view(r.ptr, static_cast<std::size_t>(e - r.ptr));
  return true;
}
}  // namespace detail

/// "10Gbps", "1.25GBps", "100Mbps", "125e6Bps" -> bytes per second; false when malformed.
inline bool parse_bandwidth(std::string_view s, double& bytes_per_s) {
  double x = 0;
  std::string_view u;
  if (!detail::split_number(s, x, u) || u.size() < 3) return false;
  double scale = 1;
  if (u.size() == 4) {
    switch (u[0]) {
      case 'k': scale = 1e3; break;
      case 'M': scale = 1e6; break;
      case 'G': scale = 1e9; break;
      case 'T': scale = 1e12; break;
      default: return false;
    }
    u.remove_prefix(1);
  } else if (u.size() != 3) {
    return false;
  }
  if (u == "bps") bytes_per_s = x * scale / 8;
  else if (u == "Bps") bytes_per_s = x * scale;
  else return false;
  return true;
}

/// "20us", "1ms", "0.5s", "100ns" -> seconds; false when malformed.
inline bool parse_latency(std::string_view s, double& seconds) {
  double x = 0;
  std::string_view u;
  if (!detail::split_number(s, x, u)) return false;
  if (u == "s") seconds = x;
  else if (u == "ms") seconds = x * 1e-3;
  else if (u == "us") seconds = x * 1e-6;
  else if (u == "ns") seconds = x * 1e-9;
  else return false;
  return true;
}

/// Parses a platform's text; `source` names it in errors ("file:line: ..."). Throws
/// strata::error(bad_input) on a malformed line, then checks the result (platform::check).
inline platform parse_platform(std::string_view text, const std::string& source) {
  platform p;
  bool fraction_seen = false;
  std::size_t line_no = 0;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    ++line_no;
    line = detail::trim_ws(line.substr(0, std::min(line.find('#'), line.size())));
    if (line.empty()) continue;
    std::vector<std::string_view> w;
    for (std::size_t i = 0; i < line.size();) {
      while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
      std::size_t j = i;
      while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
      if (j > i) w.push_back(line.substr(i, j - i));
      i = j;
    }
    auto bad = [&](const std::string& why) {
      throw error(errc::bad_input, source + ":" + std::to_string(line_no) + ": " + why + " in '" + std::string(line) + "'");
    };
    auto want = [&](std::size_t n, const char* form) {
      if (w.size() != n + 1) bad(std::string("expected '") + form + "'");
    };
    auto number = [&](std::string_view s, const char* what) {
      double x = 0;
      std::string_view u;
      if (!detail::split_number(s, x, u) || !u.empty() || !std::isfinite(x)) bad(std::string(what) + " '" + std::string(s) + "' is not a number");
      return x;
    };
    auto count = [&](std::string_view s, const char* what) {
      const double x = number(s, what);
      if (x < 0 || x != std::floor(x) || x > 4294967295.0) bad(std::string(what) + " '" + std::string(s) + "' is not a whole number");
      return static_cast<std::uint32_t>(x);
    };
    const std::string_view key = w[0];
    if (key == "name") {
      want(1, "name NAME");
      p.name = std::string(w[1]);
    } else if (key == "topology") {
      want(1, "topology star|fat_tree");
      if (w[1] == "star") p.topology = platform::shape::star;
      else if (w[1] == "fat_tree") p.topology = platform::shape::fat_tree;
      else bad("unknown topology '" + std::string(w[1]) + "' (star | fat_tree)");
    } else if (key == "hosts") {
      want(1, "hosts N");
      p.hosts = count(w[1], "hosts");
    } else if (key == "cores") {
      want(1, "cores N");
      p.cores = count(w[1], "cores");
    } else if (key == "nodes_per_host") {
      want(1, "nodes_per_host N");
      p.nodes_per_host = count(w[1], "nodes_per_host");
      if (p.nodes_per_host == 0) bad("nodes_per_host 0 places no process anywhere");
    } else if (key == "speed") {
      want(1, "speed FACTOR");
      p.speed = number(w[1], "speed");
      if (!(p.speed > 0)) bad("speed " + std::string(w[1]) + " is not positive");
    } else if (key == "link") {
      want(2, "link BANDWIDTH LATENCY");
      if (!parse_bandwidth(w[1], p.link.bandwidth)) bad("bandwidth '" + std::string(w[1]) + "' is not like 10Gbps or 1.25GBps");
      if (!parse_latency(w[2], p.link.latency)) bad("latency '" + std::string(w[2]) + "' is not like 20us or 1ms");
      if (!(p.link.bandwidth > 0)) bad("a link of bandwidth " + std::string(w[1]) + " carries nothing");
      if (p.link.latency < 0) bad("latency " + std::string(w[2]) + " is negative");
    } else if (key == "straggler") {
      want(2, "straggler HOST FACTOR");
      const auto h = count(w[1], "host");
      const double f = number(w[2], "factor");
      if (!(f > 0)) bad("straggler factor " + std::string(w[2]) + " is not positive");
      p.stragglers.emplace_back(h, f);
    } else if (key == "stragglers") {
      want(3, "stragglers FRACTION FACTOR SEED");
      if (fraction_seen) bad("a second 'stragglers' line");
      fraction_seen = true;
      p.straggler_fraction = number(w[1], "fraction");
      p.straggler_factor = number(w[2], "factor");
      p.straggler_seed = count(w[3], "seed");
      if (p.straggler_fraction < 0 || p.straggler_fraction > 1) bad("fraction " + std::string(w[1]) + " is not in [0, 1]");
      if (!(p.straggler_factor > 0)) bad("straggler factor " + std::string(w[2]) + " is not positive");
    } else if (key == "fat_tree") {
      want(1, "fat_tree LEVELS;DOWN;UP;LINKS");
      p.fat_tree = std::string(w[1]);
    } else {
      bad("unknown statement '" + std::string(key) + "' (name, topology, hosts, cores, nodes_per_host, speed, link, straggler, stragglers, fat_tree)");
    }
  }
  p.check();
  return p;
}

/// Reads and parses a platform file (errors name it and the line).
inline platform load_platform(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(errc::bad_input, "cannot open platform file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_platform(ss.str(), path);
}

}  // namespace strata::sim
