#pragma once
/// \file What the cost models know about a run: its configuration as numbers (`probe_point`), the
/// input of every features policy (cost/system_model.hpp, cost/convergence_model.hpp). Depends on
/// core/ only.
#include <strata/core/error.hpp>
#include <strata/core/json.hpp>

#include <cmath>
#include <cstdio>
#include <string>

namespace strata::cost {

/// A run's configuration, as the features policies see it. The consistency model enters as its
/// effective staleness bound (`effective_staleness`) and whether rows are pushed eagerly.
struct probe_point {
  double workers = 1;        ///< m: worker threads in all
  double scale = 1;          ///< s: the fraction (or any size measure) of the data trained on
  std::string consistency = "bsp";  ///< bsp | ssp | essp | vap | async (labels; features use the numbers below)
  double staleness = 0;      ///< the effective staleness bound (effective_staleness)
  bool eager = false;        ///< the server pushes fresh rows (essp)
  double latency_s = 0;      ///< injected latency per message, seconds
  double cores = 0;          ///< cores the workers share (0: at least one per worker)
  double iteration = 0;      ///< i, for convergence features; unused by system features

  /// "essp s=2 m=4 scale=0.5 latency=200us".
  std::string describe() const {
    auto num = [](double x) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", x);
      return std::string(buf);
    };
    std::string s = consistency;
    if (consistency == "ssp" || consistency == "essp") s += " s=" + num(staleness);
    s += " m=" + num(workers) + " scale=" + num(scale);
    if (latency_s > 0) s += " latency=" + num(latency_s * 1e6) + "us";
    return s;
  }
};

/// The staleness bound a features policy should see for a consistency model: 0 for bsp, s for
/// ssp and essp, and `unbounded_as` for async and vap (they bound no clock; a planner picks a
/// number that stands for "stale as the run makes it", e.g. the mean staleness observed under
/// them). Throws strata::error(bad_input) for an unknown name.
inline double effective_staleness(const std::string& consistency, double staleness, double unbounded_as) {
  if (consistency == "bsp") return 0;
  if (consistency == "ssp" || consistency == "essp") return staleness;
  if (consistency == "async" || consistency == "vap") return unbounded_as;
  throw error(errc::bad_input, "unknown consistency model '" + consistency + "' (bsp|ssp|essp|vap|async)");
}

/// A probe point as JSON (for a fit file).
inline json_value to_json(const probe_point& p) {
  json_value o = json_value::object();
  o.set("workers", p.workers).set("scale", p.scale).set("consistency", p.consistency).set("staleness", p.staleness)
      .set("eager", p.eager).set("latency_s", p.latency_s).set("cores", p.cores);
  return o;
}

}  // namespace strata::cost
