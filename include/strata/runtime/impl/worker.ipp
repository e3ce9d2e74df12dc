#pragma once
/// \file The worker's members that are compiled once in the compiled mode (core/config.hpp):
/// included by worker.hpp in the header-only mode, by the runtime library (src/system.cpp) otherwise.
#include <span>
#include <string>

#include "../checkpoint.hpp"
#include "../worker.hpp"

namespace strata {

STRATA_DECL void worker::write_checkpoint(clock_type m) {
  const std::string state = save_state_ ? save_state_() : std::string();
  const auto body = std::as_bytes(std::span(state.data(), state.size()));
  ckpt::write_atomic(ckpt::worker_file(ckpt_dir_, m, id_), ckpt::seal(ckpt::kind::worker, id_, m, ckpt_sig_, body));
}

}  // namespace strata
