#pragma once
/// \file A strata platform (sim/platform.hpp) built in SimGrid (S4U): one host per platform host,
/// with its cores and its speed in flop/s (the reference core's rate x the host's factor), each
/// with its own full-duplex link to a switch (star) or the leaves of a fat tree. Needs SimGrid
/// (Debian libsimgrid-dev; CMake target strata::sim).
///
/// The network model. SimGrid's default (LV08) multiplies latencies by 13.01 and bandwidths by 0.97
/// and lets a flow's acknowledgements take 5% of a shared link: calibrated on real TCP, but not
/// what a platform file says. `use_exact_network()` selects CM02 without cross traffic and without
/// the TCP window cap, so a message of b bytes over one link of bandwidth B and latency L takes
/// L + b / B exactly, and flows sharing a link share its bandwidth (max-min fairness). Call it
/// before building the platform.
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <string>
#include <vector>

#include <strata/core/error.hpp>
#include <strata/sim/platform.hpp>

namespace strata::sim {

/// CM02, no cross traffic, no TCP window cap: transfer times as the platform's links say.
inline void use_exact_network() {
  xbt_log_control_set("xbt_cfg.thres:warning");  // not a line per setting on stderr
  simgrid::s4u::Engine::set_config("network/model:CM02");
  simgrid::s4u::Engine::set_config("network/crosstraffic:0");
  simgrid::s4u::Engine::set_config("network/TCP-gamma:0");
}


/// Builds `p` as the root zone of the current SimGrid engine (one per process: SimGrid's platform
/// is sealed once it runs). `reference_flops` is the flop rate of one reference core: strata charges
/// an actor's CPU seconds as seconds x reference_flops, so a host of speed factor f runs them in
/// 1/f of the time. Returns the hosts, index = platform host id.
inline std::vector<simgrid::s4u::Host*> build_platform(const platform& p, double reference_flops = 1e9) {
  namespace s4u = simgrid::s4u;
  p.check();
  const auto speeds = p.host_speeds();
  std::vector<s4u::Host*> hosts(p.hosts, nullptr);
  auto host_name = [](unsigned long i) { return "host" + std::to_string(i); };
  if (p.topology == platform::shape::star) {
    auto* zone = s4u::create_star_zone(p.name);
    for (std::uint32_t i = 0; i < p.hosts; ++i) {
      auto* h = zone->create_host(host_name(i), speeds[i] * reference_flops)->set_core_count(static_cast<int>(p.cores))->seal();
      auto* l = zone->create_split_duplex_link(host_name(i) + "_link", p.link.bandwidth)->set_latency(p.link.latency)->seal();
      zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr, {s4u::LinkInRoute(l, s4u::LinkInRoute::Direction::UP)}, true);
      hosts[i] = h;
    }
    zone->seal();
  } else {
    const fat_tree_shape ft = p.fat_tree_levels();
    const s4u::FatTreeParams params(ft.levels, ft.down, ft.up, ft.links);
    auto leaf = [&](s4u::NetZone* zone, const std::vector<unsigned long>&, unsigned long id)
        -> std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*> {
      auto* h = zone->create_host(host_name(id), speeds[id] * reference_flops)->set_core_count(static_cast<int>(p.cores))->seal();
      hosts[id] = h;
      return {h->get_netpoint(), nullptr};
    };
    auto* zone = s4u::create_fatTree_zone(p.name, nullptr, params, s4u::ClusterCallbacks(leaf), p.link.bandwidth, p.link.latency,
                                          s4u::Link::SharingPolicy::SPLITDUPLEX);
    zone->seal();
  }
  return hosts;
}

}  // namespace strata::sim
