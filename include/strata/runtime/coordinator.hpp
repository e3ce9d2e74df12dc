#pragma once
/// \file The coordinator: the one party of a run, beside shards and workers, that runs a program
/// of its own (e.g. a STRADS scheduler: choose work, send it to workers, gather their results).
/// It lives on node 0 (endpoint slot workers_per_node + 1) and talks to workers with app messages.
#include <variant>

#include <strata/core/error.hpp>
#include <strata/runtime/actor.hpp>

namespace strata {

/// The coordinator's handle on the run: app messages (`send`, `receive`, `broadcast`) and `yield`.
/// Its methods run on its own thread.
class coordinator : public actor {
 public:
  coordinator(worker_map wm, send_fn send, std::size_t max_message = 16u << 20)
      : actor(wm.coordinator(), wm, std::move(send), max_message) {}

  /// Sends `msg` to every worker.
  template <class T>
  void broadcast(const T& msg) {
    for (worker_id w = 0; w < num_workers(); ++w) send(peer::worker(w), msg);
  }

 private:
  friend struct detail::party_access;  // the runtime's calls below (runtime/detail/party_access.hpp)

  /// Handles a message delivered to the coordinator.
  void on_message(endpoint src, wire::message&& m) {
    auto* a = std::get_if<wire::app>(&m);
    if (!a) throw error(errc::bad_frame, "the coordinator got a parameter-server message from " + layout().who(src).describe());
    deliver_app(src, std::move(*a));
  }
  /// Between runs: drops queued messages.
  void reset() {
    clear_inbox();
    reset_wait();
  }
};

}  // namespace strata
