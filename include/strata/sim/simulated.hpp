#pragma once
/// \file strata::simulated: a transport that runs the whole run in this process on a simulated
/// cluster (SimGrid, S4U). Every shard, worker and the coordinator is an actor on the host of its
/// node (node n on platform host n / nodes_per_host); the program and strata's runtime run for real (the same
/// coroutines, tables and results as on inproc or tcp), and
/// - a message between two parties of one node (a worker and its node's shard) is handed over when
///   its sender's handler has been charged, with no transfer, as inproc and tcp hand it over within
///   a process; every message between two nodes travels from the sender's host to the receiver's
///   (the same host when they share one: nodes_per_host) as SimGrid communications
///   over the platform's links, sharing their bandwidth with the others in flight: through one
///   channel per pair of nodes (as tcp has one connection per pair of processes), in order, up to
///   4 transfers at a time, each carrying what was queued when it left (payload bytes + 32 per
///   message), on lanes drawn from one pool; the pool is as large as the process's memory mappings
///   allow for its actors' stacks (~14,000 transfers in flight at once by default) or
///   config::max_lanes, and a transfer that finds every lane busy waits for one (lane_waits()
///   counts them: above 0, the simulated network was narrower than the platform's);
/// - the CPU time a party's handlers take on this machine (`cpu_charge::measured`) is charged to
///   its host as an execution of seconds x reference flop rate before its next send and before it
///   waits, so a host of speed factor f runs it in 1/f of the time, and a host's cores are shared
///   by its parties; `cpu_charge::none` charges nothing (the network alone: deterministic).
/// strata::run_clock reads the simulated clock in a process that has built a simulated platform,
/// so a trainer's times per iteration are simulated seconds. A run whose parties all wait for
/// messages that none will send is an error naming the simulated time, not a hang.
///
/// One platform per process (SimGrid builds it once); systems one after another may share it.
/// Needs SimGrid (Debian libsimgrid-dev; CMake target strata::sim).
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <strata/core/clock.hpp>
#include <strata/core/error.hpp>
#include <strata/sim/platform.hpp>
#include <strata/sim/simgrid_platform.hpp>
#include <strata/transport/inproc.hpp>
#include <strata/transport/transport.hpp>

namespace strata {
namespace sim {

/// What a party's compute costs in simulated time.
enum class cpu_charge {
  measured,  ///< the CPU seconds its handlers take on this machine (thread CPU time), scaled by its host's speed
  none,      ///< nothing: only the network takes time (deterministic: the same run gives the same times)
};

/// "measured" or "none" as a cpu_charge; throws strata::error(bad_input) otherwise.
inline cpu_charge parse_cpu_charge(const std::string& s) {
  if (s == "measured") return cpu_charge::measured;
  if (s == "none") return cpu_charge::none;
  throw error(errc::bad_input, "sim CPU charge '" + s + "' is not one of measured, none");
}

/// The process's simulated world: SimGrid's engine and the platform built in it, once.
class world {
 public:
  /// The world of platform `p`, built on the first call; a later call with another platform
  /// throws strata::error(bad_input) (SimGrid builds one platform per process).
  static world& of(const platform& p) {
    static std::unique_ptr<world> w;  // never destroyed before exit: SimGrid's engine outlives every system
    const std::string key = describe(p);
    if (!w) {
      w.reset(new world(p));
      w->key_ = key;
    } else if (w->key_ != key) {
      throw error(errc::bad_input, "this process already simulates platform '" + w->platform_.name +
                                       "': SimGrid builds one platform per process (run another platform in another process)");
    }
    return *w;
  }
  simgrid::s4u::Engine& engine() noexcept { return *engine_; }
  const std::vector<simgrid::s4u::Host*>& hosts() const noexcept { return hosts_; }
  const platform& description() const noexcept { return platform_; }
  /// The flop rate strata charges one CPU second of this machine at.
  static constexpr double reference_flops = 1e9;

 private:
  explicit world(const platform& p) : platform_(p) {
    p.check();
    static int argc = 1;
    static char name[] = "strata";
    static char* argv[] = {name, nullptr};
    engine_ = new simgrid::s4u::Engine(&argc, argv);  // never deleted (see `of`)
    use_exact_network();
    // Say what is wrong, not every actor killed at the end of a run: the runtime names a run that cannot go on.
    xbt_log_control_set("root.thres:critical");
#if defined(__SANITIZE_ADDRESS__)
    simgrid::s4u::Engine::set_config("contexts/factory:thread");  // AddressSanitizer does not follow raw stack switches
#endif
    hosts_ = build_platform(p, reference_flops);
    set_run_clock_source(&simgrid::s4u::Engine::get_clock);
  }
  static std::string describe(const platform& p) {
    std::string s = p.name + "|" + std::to_string(p.hosts) + "|" + std::to_string(p.cores) + "|" + platform::fmt(p.speed) + "|" +
                    platform::fmt(p.link.bandwidth) + "|" + platform::fmt(p.link.latency) + "|" +
                    std::to_string(static_cast<int>(p.topology)) + "|" + p.fat_tree;
    for (double f : p.host_speeds()) s += "|" + platform::fmt(f);
    return s;
  }

  platform platform_;
  std::string key_;
  simgrid::s4u::Engine* engine_ = nullptr;
  std::vector<simgrid::s4u::Host*> hosts_;
};

}  // namespace sim

/// The simulated-cluster transport (see the file's comment). Every node is in this process.
class simulated : public party_runner {
 public:
  struct config {
    sim::platform platform;                             ///< the cluster: node n runs on host n / nodes_per_host
    sim::cpu_charge cpu = sim::cpu_charge::measured;    ///< what a party's compute costs
    std::size_t max_lanes = 0;  ///< transfers in flight at once (pairs of actors); 0: as many as the process's memory mappings allow
  };

  explicit simulated(config c) : cfg_(std::move(c)), world_(&sim::world::of(cfg_.platform)) {
    set_run_clock_source(&simulated::now_seconds);
  }
  simulated(const simulated&) = delete;
  simulated& operator=(const simulated&) = delete;
  ~simulated() override = default;

  void bind(endpoint e, deliver_fn d) { local_.bind(e, std::move(d)); }
  void on_fatal(fatal_fn) {}
  void start(const run_shape& shape) { cfg_.platform.check(shape.nodes); }
  /// Inside a party's handler: queued, and sent once the handler returns (after its CPU time is
  /// charged). Outside the simulation (the runtime's own thread between runs): handed over at once.
  void send(endpoint src, endpoint dst, wire::message&& m) {
    if (current_) {
      current_->outbox.push_back(std::make_unique<envelope>(envelope{src, dst, 0, std::move(m)}));
      return;
    }
    local_.send(src, dst, std::move(m));
  }
  void stop() {}
  bool is_local(node_id) const noexcept { return true; }
  std::uint64_t bytes_sent() const noexcept { return bytes_; }
  party_runner* runner() noexcept { return this; }

  // party_runner
  void add(endpoint at, asio::io_context& ctx) override {
    auto p = std::make_unique<party>();
    p->at = at;
    p->ctx = &ctx;
    const auto& hosts = world_->hosts();
    const std::uint32_t h = cfg_.platform.host_of(at.node);
    if (h >= hosts.size())
      throw error(errc::bad_input, "simulated: node " + std::to_string(at.node) + " has no host on platform " + cfg_.platform.name);
    p->host = hosts[h];
    index_[key(at)] = p.get();
    parties_.push_back(std::move(p));
  }
  void run_until(const std::function<bool()>& done) override {
    namespace s4u = simgrid::s4u;
    if (done()) return;
    done_ = &done;
    finished_ = false;
    poked_ = false;
    error_ = nullptr;
    const double t0 = s4u::Engine::get_clock();
    active() = this;
    ctl_ = s4u::Semaphore::create(0);
    for (auto& p : parties_) {
      party* pp = p.get();
      p->bell = s4u::Semaphore::create(0);
      p->waiting = false;
      p->actor = s4u::Actor::create(actor_name(p->at), p->host, [this, pp] { loop(*pp); });
      p->actor->daemonize();
    }
    s4u::Actor::create("strata-run", world_->hosts().front(), [this] {
      ctl_->acquire();
      // Done: let the messages still in flight arrive (their parties take them in) before the
      // parties' actors end with this one.
      while (in_flight_ > 0) s4u::this_actor::sleep_for(1e-6);
    });
    world_->engine().run();
    active() = nullptr;
    for (auto& p : parties_) {
      p->actor = nullptr;
      p->bell = nullptr;
    }
    ctl_ = nullptr;
    channels_.clear();
    lanes_peak_ = std::max(lanes_peak_, lanes_.size());
    lanes_.clear();  // their actors ended with the run
    idle_.clear();
    starved_.clear();
    done_ = nullptr;
    current_ = nullptr;
    simulated_s_ += s4u::Engine::get_clock() - t0;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    if (!finished_)
      throw error(errc::shutdown, "simulated run cannot go on: at simulated time " + std::to_string(s4u::Engine::get_clock()) +
                                      " s every party waits for a message that none will send");
  }
  void poke() noexcept override { poked_ = true; }

  /// Simulated seconds of every run_until so far, and the messages sent between nodes.
  double simulated_seconds() const noexcept { return simulated_s_; }
  std::uint64_t messages() const noexcept { return messages_; }
  const sim::platform& platform() const noexcept { return cfg_.platform; }

 private:
  struct envelope {
    endpoint src, dst;
    std::uint64_t seq;
    wire::message m;
  };
  struct party {
    endpoint at;
    asio::io_context* ctx = nullptr;
    simgrid::s4u::Host* host = nullptr;
    simgrid::s4u::ActorPtr actor;
    simgrid::s4u::SemaphorePtr bell;  // released by a lane that delivers to this party while it waits
    bool waiting = false;
    std::vector<std::unique_ptr<envelope>> outbox;  // sent by the handler that runs
    double cpu_s = 0;                               // CPU seconds not yet charged
    std::unordered_map<std::uint64_t, std::uint64_t> seq_out, seq_in;  // per destination / source
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::unique_ptr<envelope>> held;  // (source, seq): arrived early
  };

  /// The simulation that runs now (one at a time: one engine per process).
  static simulated*& active() noexcept {
    static simulated* a = nullptr;
    return a;
  }
  /// run_clock's source: the simulated clock, and inside a handler the CPU time it and the party's
  /// uncharged handlers before it have taken so far, at its host's speed (as if its cores were its
  /// own: the charge, later, also waits for cores that other parties hold).
  static double now_seconds() {
    const double t = simgrid::s4u::Engine::get_clock();
    const simulated* s = active();
    if (!s || !s->current_) return t;
    const party& p = *s->current_;
    double cpu = p.cpu_s;
    if (s->cfg_.cpu == sim::cpu_charge::measured) cpu += thread_cpu_seconds() - s->handler_cpu0_;
    return t + cpu * sim::world::reference_flops / p.host->get_speed();
  }
  static std::uint64_t key(endpoint e) noexcept { return (std::uint64_t{e.node} << 32) | e.slot; }
  static std::string actor_name(endpoint e) { return "n" + std::to_string(e.node) + "." + std::to_string(e.slot); }
  static double thread_cpu_seconds() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }

  /// A party's actor: runs its handlers, sends what they sent, waits for messages.
  void loop(party& p) {
    // The previous run's actor ended with its work guard, which stopped the context: take it up again.
    if (p.ctx->stopped()) p.ctx->restart();
    auto guard = asio::make_work_guard(*p.ctx);
    for (;;) {
      const bool ran = run_handlers(p);
      if (p.cpu_s > 0) {
        charge(p);  // messages that arrive meanwhile are in the queue when it polls again
        continue;
      }
      if (ran) continue;
      p.waiting = true;
      p.bell->acquire();
    }
  }
  /// Runs p's ready handlers one by one, and sends what they sent after each that sent any; true
  /// when it ran any. The CPU time they take is read from the thread's clock when they send and
  /// when they run out (a system call: not around every handler, some take a microsecond).
  bool run_handlers(party& p) {
    const bool measure = cfg_.cpu == sim::cpu_charge::measured;
    bool any = false, measured = false;
    current_ = &p;
    handler_cpu0_ = measure ? thread_cpu_seconds() : 0;
    for (;;) {
      std::size_t ran = 0;
      try {
        ran = p.ctx->poll_one();
      } catch (...) {
        fail(std::current_exception());
      }
      if (ran > 0) {
        any = measured = true;
        if (p.outbox.empty() && !poked_) continue;
      }
      // Only handlers' time: a round that ran none adds nothing (else the party's loop would charge
      // its own polling, and poll again, for ever).
      if (measure && measured) p.cpu_s += thread_cpu_seconds() - handler_cpu0_;
      measured = false;
      current_ = nullptr;
      if (!p.outbox.empty()) flush(p);
      if (poked_ && !finished_) {
        poked_ = false;
        if ((*done_)()) finish();
      }
      if (ran == 0) return any;
      current_ = &p;  // the flush let other actors run: measure from here
      handler_cpu0_ = measure ? thread_cpu_seconds() : 0;
    }
  }
  void fail(std::exception_ptr e) {
    if (!error_) error_ = e;
    finish();
  }
  void finish() {
    if (std::exchange(finished_, true)) return;
    ctl_->release();
  }
  void charge(party& p) {
    if (p.cpu_s <= 0) return;
    const double flops = p.cpu_s * sim::world::reference_flops;
    p.cpu_s = 0;
    simgrid::s4u::this_actor::execute(flops);
  }
  /// Sends p's outbox, after charging the CPU time that made it: a message to a party of p's node
  /// is handed over at once; any other joins the queue of the channel to its party's node, and each
  /// channel it touched sends its queue (channels in the order the handler first sent on them).
  void flush(party& p) {
    charge(p);
    std::vector<channel*> touched;
    for (auto& e : p.outbox) {
      const auto it = index_.find(key(e->dst));
      if (it == index_.end()) {
        fail(std::make_exception_ptr(error(errc::bad_input, "simulated: a message to an endpoint no party holds")));
        continue;
      }
      e->seq = p.seq_out[key(e->dst)]++;
      if (e->dst.node == p.at.node) {
        deliver(*it->second, std::move(e));
        continue;
      }
      channel& ch = channel_of(p, *it->second);
      if (std::find(touched.begin(), touched.end(), &ch) == touched.end()) touched.push_back(&ch);
      ch.queue.push_back(std::move(e));
      ++messages_;
      ++in_flight_;
    }
    p.outbox.clear();
    for (channel* ch : touched) pump(*ch);
  }

  /// Between two nodes, as strata's tcp transport has one connection between two processes: the
  /// messages of all the parties of one node to the parties of another travel through one
  /// channel, in order, up to `lanes_per_channel` transfers at a time (each what was queued when it
  /// left, as one communication of their total size). A lane is a pair of actors that carries one
  /// transfer at a time: given a channel, its sender moves to the channel's sending host and puts
  /// the transfer into the lane's mailbox, its receiver moves to the receiving host, takes it and
  /// hands its messages to their parties; then the lane goes back to one pool that every channel
  /// draws on. (A communication that nobody waits for, detached or SimGrid's host-to-host `sendto`,
  /// sits in one global list that SimGrid searches linearly when it ends: quadratic in the
  /// transfers in flight, 90% of a 256-worker ESSP run's time; an actor per transfer cost a stack's
  /// mmap and munmap each, 60%; actors of their own for each pair of nodes ran out of memory
  /// mappings past ~110 nodes, where every node talks to every other: 2 n (n - 1) actors.)
  struct channel;
  struct lane {
    channel* ch = nullptr;
    simgrid::s4u::SemaphorePtr go_send = simgrid::s4u::Semaphore::create(0);
    simgrid::s4u::SemaphorePtr go_receive = simgrid::s4u::Semaphore::create(0);
    simgrid::s4u::Mailbox* mailbox = nullptr;
    std::uint64_t size = 0;
    std::vector<std::unique_ptr<envelope>> batch;
  };
  struct channel {
    simgrid::s4u::Host *from = nullptr, *to = nullptr;
    std::deque<std::unique_ptr<envelope>> queue;
    std::uint32_t busy = 0;   // lanes carrying this channel's transfers now
    bool waiting = false;     // in starved_: it has a queue and no lane was free
  };
  static constexpr std::uint32_t lanes_per_channel = 4;
 public:
  /// How many lanes (pairs of actors) the process may hold: config::max_lanes where set, and at
  /// most what fits: an actor's stack and its guard page are two of the kernel's memory mappings, of which a process may have vm.max_map_count
  /// (65,530 by default; SimGrid aborts past it). Transfers beyond it wait for a lane: counted in
  /// lane_waits().
  std::size_t lane_budget() const {
    static const std::size_t max_maps = [] {
      std::size_t n = 65530;
      if (std::FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
        unsigned long v = 0;
        if (std::fscanf(f, "%lu", &v) == 1 && v > 0) n = v;
        std::fclose(f);
      }
      return n;
    }();
    const std::size_t reserve = 8192 + 2 * 2 * parties_.size();  // the program's own, and the parties' actors
    const std::size_t fit = std::max<std::size_t>(max_maps > reserve ? (max_maps - reserve) / 4 : 0, 1);
    return cfg_.max_lanes > 0 ? std::min(cfg_.max_lanes, fit) : fit;
  }
  /// Transfers that found every lane of the budget busy and waited for one (0: the network was
  /// simulated without this limit), and the most lanes in use at once, over every run so far.
  std::uint64_t lane_waits() const noexcept { return lane_waits_; }
  std::size_t lanes_used() const noexcept { return std::max(lanes_peak_, lanes_.size()); }

 private:
  channel& channel_of(const party& from, const party& to) {
    auto& ch = channels_[{from.at.node, to.at.node}];
    if (!ch) {
      ch = std::make_unique<channel>();
      ch->from = from.host;
      ch->to = to.host;
    }
    return *ch;
  }
  /// Sends what ch has queued on a lane of the pool (a new one while the budget allows), unless
  /// ch has lanes_per_channel transfers on their way: the next to arrive sends the queue then.
  void pump(channel& ch) {
    namespace s4u = simgrid::s4u;
    if (ch.queue.empty() || ch.busy >= lanes_per_channel) return;
    lane* l = nullptr;
    if (!idle_.empty()) {
      l = idle_.back();
      idle_.pop_back();
    } else if (lanes_.size() < lane_budget()) {
      lanes_.push_back(std::make_unique<lane>());
      l = lanes_.back().get();
      l->mailbox = s4u::Mailbox::by_name("strata-lane-" + std::to_string(lanes_.size()));
      s4u::Actor::create("lane-send", ch.from, [this, l] { send_loop(*l); })->daemonize();
      s4u::Actor::create("lane-receive", ch.to, [this, l] { receive_loop(*l); })->daemonize();
    } else {
      if (ch.busy == 0 && !ch.waiting) {  // nothing of its own on the way that would send it: wait for any lane
        ch.waiting = true;
        starved_.push_back(&ch);
        ++lane_waits_;
      }
      return;
    }
    ++ch.busy;
    l->ch = &ch;
    l->size = 0;
    for (auto& e : ch.queue) {
      l->size += detail::payload_size(e->m);
      l->batch.push_back(std::move(e));
    }
    ch.queue.clear();
    bytes_ += l->size;
    l->go_send->release();
    l->go_receive->release();
  }
  void send_loop(lane& l) {
    for (;;) {
      l.go_send->acquire();
      if (simgrid::s4u::this_actor::get_host() != l.ch->from) simgrid::s4u::this_actor::set_host(l.ch->from);
      l.mailbox->put(&l, l.size);
    }
  }
  void receive_loop(lane& l) {
    for (;;) {
      l.go_receive->acquire();
      if (simgrid::s4u::this_actor::get_host() != l.ch->to) simgrid::s4u::this_actor::set_host(l.ch->to);
      (void)l.mailbox->get<lane>();
      channel& ch = *l.ch;
      for (auto& e : l.batch) {
        --in_flight_;
        party& q = *index_.at(key(e->dst));  // before e moves into the call
        deliver(q, std::move(e));
      }
      l.batch.clear();
      l.ch = nullptr;
      --ch.busy;
      idle_.push_back(&l);
      pump(ch);
      while (!idle_.empty() && !starved_.empty()) {
        channel* c = starved_.front();
        starved_.pop_front();
        c->waiting = false;
        pump(*c);
      }
    }
  }
  /// Hands `e` to q's queue and wakes q if it waits.
  void deliver(party& q, std::unique_ptr<envelope> e) {
    arrive(q, std::move(e));
    if (q.waiting) {
      q.waiting = false;
      q.bell->release();
    }
  }
  /// Hands `e` to p's queue, in each sender's order.
  void arrive(party& p, std::unique_ptr<envelope> e) {
    const auto src = key(e->src);
    auto& next = p.seq_in[src];
    if (e->seq != next) {
      const auto seq = e->seq;
      p.held.emplace(std::make_pair(src, seq), std::move(e));
      return;
    }
    for (;;) {
      ++next;
      try {
        local_.send(e->src, e->dst, std::move(e->m));
      } catch (...) {
        fail(std::current_exception());
      }
      const auto it = p.held.find({src, next});
      if (it == p.held.end()) return;
      e = std::move(it->second);
      p.held.erase(it);
    }
  }

  config cfg_;
  sim::world* world_;
  inproc local_;  // hands a message that has arrived to its party's delivery function
  std::vector<std::unique_ptr<party>> parties_;
  std::unordered_map<std::uint64_t, party*> index_;
  party* current_ = nullptr;  // the party whose handler runs
  double handler_cpu0_ = 0;   // the thread's CPU time when it started
  const std::function<bool()>* done_ = nullptr;
  bool finished_ = false, poked_ = false;
  std::exception_ptr error_;
  simgrid::s4u::SemaphorePtr ctl_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::unique_ptr<channel>> channels_;  // this run's
  std::vector<std::unique_ptr<lane>> lanes_;  // this run's pool
  std::size_t lanes_peak_ = 0;
  std::vector<lane*> idle_;
  std::deque<channel*> starved_;
  std::uint64_t lane_waits_ = 0;
  std::uint64_t in_flight_ = 0, bytes_ = 0, messages_ = 0;
  double simulated_s_ = 0;
};

static_assert(transport<simulated>);

}  // namespace strata
