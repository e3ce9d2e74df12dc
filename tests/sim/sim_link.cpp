// strata_sim_link PLATFORM: a platform file built in SimGrid (sim/simgrid_platform.hpp) carries
// messages in the times its links say, computed by hand here (exit 1 on a mismatch):
//   star:     host 0 -> host 1 crosses two links (host 0's up, host 1's down): 2L + b/B, for 37 B
//             and 1 MB; host 0 and host 2 sending 1 MB each to host 1 at once share host 1's link:
//             both arrive at 2L + 2b/B; host 1 -> host 1 (two processes of one host:
//             nodes_per_host > 1) crosses host 1's up and down links, as loopback does: 2L + b/B;
//   fat tree: host 0 -> the last host crosses 2 x levels links: 2 levels L + b/B;
//   every platform: one reference second of computation takes 1 / (the host's speed factor).
// One SimGrid engine per process (its platform is sealed once it runs), hence a program of its own.
#include <strata/sim/simgrid_platform.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace s4u = simgrid::s4u;

namespace {
int failures = 0;
int token = 0;  // what the messages carry (their simulated size is given apart)

void expect(const char* what, double simulated, double by_hand) {
  const bool ok = std::fabs(simulated - by_hand) <= 1e-12 + 1e-9 * by_hand;
  std::printf("%-52s simulated %.9f s, by hand %.9f s: %s\n", what, simulated, by_hand, ok ? "ok" : "MISMATCH");
  if (!ok) ++failures;
}

/// Sends `bytes` from `from` to `to` starting at `at` (simulated seconds); returns when it arrived.
struct transfer {
  double arrived = -1;
};
void run_transfers(const std::vector<std::tuple<s4u::Host*, s4u::Host*, double>>& moves, std::vector<transfer>& out) {
  out.assign(moves.size(), transfer{});
  for (std::size_t i = 0; i < moves.size(); ++i) {
    auto [from, to, bytes] = moves[i];
    const std::string box = "box" + std::to_string(i) + "_" + std::to_string(s4u::Engine::get_clock());
    s4u::Actor::create("send" + std::to_string(i), from, [box, bytes] { s4u::Mailbox::by_name(box)->put(&token, static_cast<uint64_t>(bytes)); });
    s4u::Actor::create("recv" + std::to_string(i), to, [box, i, &out] {
      (void)s4u::Mailbox::by_name(box)->get<int>();
      out[i].arrived = s4u::Engine::get_clock();
    });
  }
}
}  // namespace

int main(int argc, char** argv) {
  s4u::Engine e(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: strata_sim_link PLATFORM\n");
    return 2;
  }
  try {
    strata::sim::use_exact_network();
    const auto p = strata::sim::load_platform(argv[1]);
    const auto hosts = strata::sim::build_platform(p);
    const double L = p.link.latency, B = p.link.bandwidth;
    std::printf("%s: %u hosts, link %.3g bytes/s, %.3g s\n", p.name.c_str(), p.hosts, B, L);
    {  // each host computes one reference second of work: 1 / its speed factor (stragglers slower)
      const auto speeds = p.host_speeds();
      std::vector<double> done(hosts.size(), -1);
      for (std::size_t i = 0; i < hosts.size(); ++i)
        s4u::Actor::create("cpu" + std::to_string(i), hosts[i], [i, &done] {
          s4u::this_actor::execute(1e9);  // build_platform's reference core: 1e9 flop/s
          done[i] = s4u::Engine::get_clock();
        });
      e.run();
      int slow = 0;
      for (std::size_t i = 0; i < hosts.size(); ++i) {
        if (std::fabs(done[i] - 1 / speeds[i]) > 1e-9) expect(("compute on host " + std::to_string(i)).c_str(), done[i], 1 / speeds[i]);
        slow += speeds[i] < p.speed;
      }
      std::printf("%-52s %d of %zu hosts slower than speed %.3g, each as its factor says\n", "one reference second on every host:", slow,
                  hosts.size(), p.speed);
    }
    const double t_cpu = s4u::Engine::get_clock();
    if (p.topology == strata::sim::platform::shape::star) {
      if (p.hosts < 3) throw strata::error(strata::errc::bad_input, "strata_sim_link needs 3 hosts or more");
      std::vector<transfer> a, b;
      run_transfers({{hosts[0], hosts[1], 37.0}}, a);
      e.run();
      expect("37 B, host 0 -> host 1", a[0].arrived - t_cpu, 2 * L + 37 / B);
      const double t0 = s4u::Engine::get_clock();
      run_transfers({{hosts[0], hosts[1], 1e6}}, a);
      e.run();
      expect("1 MB, host 0 -> host 1", a[0].arrived - t0, 2 * L + 1e6 / B);
      const double t1 = s4u::Engine::get_clock();
      run_transfers({{hosts[0], hosts[1], 1e6}, {hosts[2], hosts[1], 1e6}}, b);
      e.run();
      expect("1 MB each, hosts 0 and 2 -> host 1 (shared link)", b[0].arrived - t1, 2 * L + 2e6 / B);
      expect("  the other one", b[1].arrived - t1, 2 * L + 2e6 / B);
      const double t2 = s4u::Engine::get_clock();
      run_transfers({{hosts[1], hosts[1], 1e6}}, a);
      e.run();
      expect("1 MB, host 1 -> host 1 (two nodes of one host)", a[0].arrived - t2, 2 * L + 1e6 / B);
    } else {
      const auto levels = p.fat_tree_levels().levels;
      std::vector<transfer> a;
      run_transfers({{hosts[0], hosts.back(), 1e6}}, a);
      e.run();
      expect("1 MB, host 0 -> the last host (up and down the tree)", a[0].arrived - t_cpu, 2 * levels * L + 1e6 / B);
    }
  } catch (const std::exception& x) {
    std::fprintf(stderr, "strata_sim_link: %s\n", x.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
