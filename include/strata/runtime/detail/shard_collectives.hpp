#pragma once
/// \file server_shard's part in shard 0's coordination of a run (runtime/server.hpp): collective rounds
/// (all_gather, all_reduce, barrier) and the start barrier of a repeated run.
#include <algorithm>
#include <string>
#include <utility>

#include <strata/core/error.hpp>
#include <strata/runtime/server.hpp>
#include <strata/wire/messages.hpp>

namespace strata {

inline void server_shard::handle(endpoint, wire::gather& g) {
  if (me_ != 0) throw error(errc::bad_frame, "collective sent to shard " + std::to_string(me_) + ", not shard 0");
  if (g.from >= wm_.workers()) throw error(errc::bad_frame, "collective from unknown worker " + std::to_string(g.from));
  if (clock_[g.from] == finished)
    throw error(errc::bad_frame, "collective from worker " + std::to_string(g.from) + " after it finished");
  auto& c = collectives_[g.round];
  if (c.parts.empty()) c.parts.resize(wm_.workers()), c.have.assign(wm_.workers(), false);
  if (c.have[g.from]) throw error(errc::bad_frame, "worker " + std::to_string(g.from) + " joined collective round " + std::to_string(g.round) + " twice");
  c.have[g.from] = true;
  c.parts[g.from] = std::move(g.payload);
  for (worker_id w = 0; w < wm_.workers(); ++w)
    if (clock_[w] == finished && !c.have[w])
      throw error(errc::bad_input, "collective round " + std::to_string(g.round) + " waits for worker " + std::to_string(w) +
                                       ", which has finished (every worker must call the same collectives in the same order)");
  if (++c.count < wm_.workers()) return;
  wire::gathered out;
  out.round = g.round;
  out.parts = std::move(c.parts);
  collectives_.erase(g.round);
  for (worker_id w = 0; w < wm_.workers(); ++w) {
    wire::gathered copy;
    copy.round = out.round;
    copy.parts = out.parts;
    send_(wm_.of(w), std::move(copy));
  }
}

inline void server_shard::handle(endpoint, wire::run_start& r) {
  if (me_ == 0 && r.node != starter_) {
    if (++start_count_[r.run] < wm_.nodes) return;
    start_count_.erase(r.run);
    for (node_id n = 0; n < wm_.nodes; ++n) send_(wm_.shard(n), wire::run_start{starter_, r.run});
    return;
  }
  started_run_ = std::max(started_run_, r.run);  // from shard 0: everybody is ready
}

}  // namespace strata
