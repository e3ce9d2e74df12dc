#pragma once
/// \file What the runtime's public classes say about checkpoints (runtime/checkpoint.hpp has the
/// files, their seals and the search for a resume point): a run's signature digest and the
/// checkpoint a run resumes from.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <strata/core/ids.hpp>

namespace strata::ckpt {

/// SHA-256 of a run's signature (tables, model, shape, run tag): a checkpoint of another run is refused.
using digest = std::array<std::uint8_t, 32>;

/// The checkpoint a run resumes from: its clock, and why each newer checkpoint was refused.
struct resume_point {
  clock_type clock = 0;
  std::vector<std::string> refused;
};

}  // namespace strata::ckpt
