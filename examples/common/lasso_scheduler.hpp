#pragma once
/// \file The STRADS scheduler of a Lasso run, chosen by name at the edge (strata_lasso, strata_plan
/// --trainer lasso): one scheduler type per name, so the caller's body is compiled once for each.
#include <strata/sched/schedulers.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace strata::examples {

/// A scheduler by name, and the settings of the ones that take any.
struct lasso_scheduler_options {
  std::string name = "priority";  ///< round_robin | random | priority | filtered | random-filtered
  double rho = 0.1;               ///< dependency filter: reject |correlation| >= rho
  std::uint32_t oversample = 2;   ///< dependency filter: candidates per accepted coefficient
  double p = 1, eta = 0.1;        ///< priority: |Δβ|^p, and the floor (fraction of the mean non-zero priority)
};

/// Calls f(scheduler) with the scheduler `o` names; throws std::invalid_argument for an unknown name.
template <class F>
auto with_lasso_scheduler(const lasso_scheduler_options& o, std::uint64_t seed, F&& f) {
  namespace sc = strata::sched;
  const sc::priority pr({.p = o.p, .eta = o.eta, .seed = seed});
  const auto filt = [&](auto inner) { return sc::dependency_filter<decltype(inner)>(inner, {.rho = o.rho, .oversample = o.oversample}); };
  if (o.name == "round_robin") return f(sc::round_robin{});
  if (o.name == "random") return f(sc::uniform_random(seed));
  if (o.name == "priority") return f(pr);
  if (o.name == "filtered") return f(filt(pr));
  if (o.name == "random-filtered") return f(filt(sc::uniform_random(seed)));
  throw std::invalid_argument("unknown scheduler '" + o.name + "' (round_robin|random|priority|filtered|random-filtered)");
}

}  // namespace strata::examples
