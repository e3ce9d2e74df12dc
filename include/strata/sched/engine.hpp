#pragma once
/// \file STRADS rounds on the runtime: the coordinator schedules and pulls, the workers push, and
/// every round's result reaches every worker before its next push (the paper's automatic sync),
/// or, with pipelining depth d > 1, at most d − 1 rounds late (measured, per push).
///
/// A program P says what a round computes:
///
///     struct my_program {
///       using partial_type = ...;   // worker → coordinator, cereal-serialisable
///       using update_type = ...;    // coordinator → every worker, cereal-serialisable
///       std::uint32_t vars() const;                                   // number of variables
///       partial_type push(strata::worker&, const strata::sched::plan&);   // or task<partial_type>
///       update_type pull(const strata::sched::plan&, std::vector<partial_type>& by_worker);
///       void sync(strata::worker&, const update_type&);               // apply a round's result
///       // optional:
///       void changes(const update_type&, std::vector<var_delta>&) const;  // for observe()
///       double dependency(var_id, var_id) const;                       // for dependency_filter
///       bool done() const;                                             // stop early (coordinator)
///     };
///
/// `push` and `sync` run on the worker's thread (one call at a time per worker; different workers
/// of a process run concurrently, so per-worker state must be per worker), `pull`, `changes`,
/// `dependency` and `done` on the coordinator's (node 0's process). Runs on every transport:
/// the messages are app messages (runtime/actor.hpp).
#include <strata/core/clock.hpp>
#include <chrono>
#include <cstdint>
#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <strata/core/error.hpp>
#include <strata/core/stats.hpp>
#include <strata/runtime/coordinator.hpp>
#include <strata/runtime/system.hpp>
#include <strata/runtime/task.hpp>
#include <strata/runtime/worker.hpp>
#include <strata/sched/scheduler.hpp>

namespace strata::sched {

/// How rounds run.
struct options {
  std::uint64_t rounds = 100;         ///< at most this many rounds (fewer when the program is done)
  std::uint32_t batch = 1;            ///< variables per round (the schedulers' `batch`)
  std::uint32_t depth = 1;            ///< rounds in flight: 1 = no pipelining
  std::uint64_t evaluate_every = 0;   ///< set `plan::evaluate` every k rounds and on the last (0: never)
  /// result::per_round keeps at most this many records (memory stays bounded however many rounds
  /// run): when full, every other one is dropped and from then on only every 2nd, 4th, ... round is
  /// recorded (rounds 0, k, 2k, ... for a stride k). 0: every round.
  std::size_t max_records = 4096;
};

/// One pulled round, as the coordinator saw it.
struct round_record {
  std::uint64_t round = 0;
  double elapsed_s = 0;       ///< seconds from the coordinator's start (after the system's start-up) until this round was pulled
  std::uint32_t vars = 0;     ///< variables scheduled
  bool evaluated = false;     ///< the round's plan had `evaluate` set
};

/// What a run measured (filled on the coordinator's process; empty elsewhere).
struct result {
  std::uint64_t rounds = 0;
  std::uint64_t vars = 0;     ///< variables scheduled, all rounds
  double seconds = 0;         ///< from the coordinator's start (after the system's start-up) to its last pull
  /// Per push: rounds before it whose result the worker had not yet applied (0 without pipelining).
  int_histogram staleness;
  std::vector<round_record> per_round;  ///< rounds 0, stride, 2 stride, ... (options::max_records)
  std::uint64_t stride = 1;

  /// Adds the record of round `rec.round` (pulled in order from 0) if the stride takes it.
  void record(const round_record& rec, std::size_t max_records) {
    if (rec.round % stride != 0) return;
    if (max_records > 0 && per_round.size() >= std::max<std::size_t>(2, max_records)) {
      std::size_t k = 0;
      for (std::size_t i = 0; i < per_round.size(); i += 2) per_round[k++] = per_round[i];
      per_round.resize(k);
      stride *= 2;
      if (rec.round % stride != 0) return;
    }
    per_round.push_back(rec);
  }
};

namespace detail {
template <class U>
struct down {  // coordinator → worker: results to apply, then (maybe) the next plan
  std::vector<U> updates;
  plan next;
  bool has_plan = false;
  bool stop = false;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(updates, next, has_plan, stop);
  }
};
template <class Pt>
struct up {  // worker → coordinator: a round's partial
  std::uint64_t round = 0;
  std::uint32_t staleness = 0;
  Pt partial;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(round, staleness, partial);
  }
};
template <class P>
concept has_changes = requires(const P& p, const typename P::update_type& u, std::vector<var_delta>& out) {
  p.changes(u, out);
};
template <class P>
concept has_dependency = requires(const P& p, var_id a) {
  { p.dependency(a, a) } -> std::convertible_to<double>;
};
template <class P>
concept has_done = requires(const P& p) {
  { p.done() } -> std::convertible_to<bool>;
};
}  // namespace detail

/// A STRADS program (see the file comment).
template <class P>
concept program = requires(P& p, const P& cp, worker& w, const plan& pl, std::vector<typename P::partial_type>& parts,
                           const typename P::update_type& u) {
  typename P::partial_type;
  typename P::update_type;
  { cp.vars() } -> std::convertible_to<std::uint32_t>;
  p.push(w, pl);
  { p.pull(pl, parts) } -> std::same_as<typename P::update_type>;
  p.sync(w, u);
};

/// Runs STRADS rounds of `prog` scheduled by `sched` on `sys` (one `sys.run`): returns what the
/// coordinator measured (on node 0's process; an empty result on the others).
template <class S, program P>
result run(system_base& sys, P& prog, S&& sched, const options& o) {
  static_assert(check_scheduler<std::remove_cvref_t<S>>());
  using U = typename P::update_type;
  using Pt = typename P::partial_type;
  if (o.depth == 0) throw error(errc::bad_input, "sched::run: pipelining depth must be >= 1");
  if (o.batch == 0) throw error(errc::bad_input, "sched::run: batch must be >= 1");
  result res;

  auto worker_program = [&](worker& w) -> task<> {
    std::uint64_t applied = 0;  // rounds whose result this worker has applied
    for (;;) {
      auto m = co_await w.receive<detail::down<U>>();
      if (!m.from.is_coordinator()) throw error(errc::bad_frame, "a STRADS round message from " + m.from.describe());
      for (const auto& u : m.value.updates) {
        prog.sync(w, u);
        ++applied;
      }
      if (m.value.has_plan) {
        detail::up<Pt> reply;
        reply.round = m.value.next.round;
        reply.staleness = static_cast<std::uint32_t>(reply.round - applied);
        if constexpr (requires { typename decltype(prog.push(w, m.value.next))::promise_type; })
          reply.partial = co_await prog.push(w, m.value.next);
        else
          reply.partial = prog.push(w, m.value.next);
        w.send(peer::coordinator(), reply);
      }
      if (m.value.stop) break;
    }
  };

  auto coordinator_program = [&](coordinator& c) -> task<> {
    const auto t0 = strata::run_clock::now();
    if constexpr (requires { prog.start(t0); }) prog.start(t0);  // the program's clock: the same start
    context cx;
    cx.vars = prog.vars();
    cx.workers = c.num_workers();
    cx.batch = o.batch;
    if constexpr (detail::has_dependency<P>) cx.dependency = [&prog](var_id a, var_id b) { return double(prog.dependency(a, b)); };
    std::uint64_t next = 0;
    bool stopping = false;
    std::deque<plan> inflight;
    auto make_plan = [&] {
      plan p;
      p.round = cx.round = next;
      cx.in_flight.clear();
      for (const auto& f : inflight) cx.in_flight.insert(cx.in_flight.end(), f.vars.begin(), f.vars.end());
      sched.schedule(cx, p);
      p.evaluate = o.evaluate_every > 0 && (next % o.evaluate_every == 0 || next + 1 == o.rounds);
      ++next;
      return p;
    };
    while (inflight.size() < o.depth && next < o.rounds) {
      detail::down<U> msg;
      msg.next = make_plan();
      msg.has_plan = true;
      inflight.push_back(msg.next);
      c.broadcast(msg);
    }
    if (inflight.empty()) {  // no round at all: let the workers go
      detail::down<U> msg;
      msg.stop = true;
      c.broadcast(msg);
    }
    // Partials by round: with pipelining a worker's partial of a later round can arrive before
    // another worker's partial of the round being pulled.
    std::map<std::uint64_t, std::pair<std::vector<Pt>, std::vector<char>>> arrived;
    std::vector<var_delta> changes;
    while (!inflight.empty()) {
      plan cur = std::move(inflight.front());
      inflight.pop_front();
      auto count = [&] {
        auto it = arrived.find(cur.round);
        return it == arrived.end() ? std::size_t{0} : static_cast<std::size_t>(std::count(it->second.second.begin(), it->second.second.end(), 1));
      };
      while (count() < c.num_workers()) {
        auto m = co_await c.receive<detail::up<Pt>>();
        const std::uint64_t r = m.value.round;
        bool bad = !m.from.is_worker() || r < cur.round || r >= next;
        if (!bad) {
          auto& slot = arrived[r];
          if (slot.first.empty()) slot.first.resize(c.num_workers()), slot.second.assign(c.num_workers(), 0);
          bad = slot.second[m.from.index] != 0;
          if (!bad) {
            slot.second[m.from.index] = 1;
            slot.first[m.from.index] = std::move(m.value.partial);
            res.staleness.add(m.value.staleness);
          }
        }
        if (bad)
          throw error(errc::bad_frame, "STRADS: unexpected partial for round " + std::to_string(r) + " from " +
                                           m.from.describe() + " while pulling round " + std::to_string(cur.round));
      }
      auto node = arrived.extract(cur.round);
      std::vector<Pt>& parts = node.mapped().first;
      detail::down<U> msg;
      msg.updates.push_back(prog.pull(cur, parts));
      if constexpr (detail::has_changes<P>) {
        changes.clear();
        prog.changes(msg.updates.back(), changes);
        sched.observe(changes);
      }
      round_record rec;
      rec.round = cur.round;
      rec.elapsed_s = std::chrono::duration<double>(strata::run_clock::now() - t0).count();
      rec.vars = static_cast<std::uint32_t>(cur.vars.size());
      rec.evaluated = cur.evaluate;
      res.record(rec, o.max_records);
      res.vars += rec.vars;
      ++res.rounds;
      if constexpr (detail::has_done<P>) stopping = stopping || prog.done();
      if (!stopping && next < o.rounds) {
        msg.next = make_plan();
        msg.has_plan = true;
        inflight.push_back(msg.next);
      }
      msg.stop = inflight.empty();
      c.broadcast(msg);
    }
    res.seconds = std::chrono::duration<double>(strata::run_clock::now() - t0).count();
  };

  sys.run(worker_program, coordinator_program);
  return res;
}

}  // namespace strata::sched
