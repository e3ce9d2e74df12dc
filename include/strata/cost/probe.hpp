#pragma once
/// \file What the cost models know about a run: its configuration as numbers (`probe_point`), the
/// input of every features policy (cost/system_model.hpp, cost/convergence_model.hpp). Depends on
/// core/ only.
#include <strata/core/error.hpp>
#include <strata/core/json.hpp>

#include <cmath>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <span>
#include <string>
#include <vector>

namespace strata::cost {

/// A run's configuration, as the features policies see it. The consistency model enters as its
/// effective staleness bound (`effective_staleness`) and whether rows are pushed eagerly.
struct probe_point {
  double workers = 1;        ///< m: worker threads in all
  double scale = 1;          ///< s: the fraction (or any size measure) of the data trained on
  std::string consistency = "bsp";  ///< bsp | ssp | essp | vap | async (labels; features use the numbers below)
  double staleness = 0;      ///< the effective staleness bound (effective_staleness)
  bool eager = false;        ///< the server pushes fresh rows (essp)
  bool bounded = true;       ///< reads wait for rows fresh enough (bsp, ssp, essp); false: async, vap
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

/// True for the models whose reads wait for a row fresh enough for a clock bound (bsp, ssp, essp);
/// async and vap never make a read wait for freshness.
inline bool clock_bounded(const std::string& consistency) { return consistency == "bsp" || consistency == "ssp" || consistency == "essp"; }

/// A consistency model and its staleness bound, as a planner names it: "bsp", "ssp:2", "essp:1",
/// "vap", "async".
struct model_choice {
  std::string name = "bsp";
  double staleness = 0;
  /// Parses "NAME" or "NAME:S"; throws strata::error(bad_input) for an unknown name or a bad S.
  static model_choice parse(const std::string& text) {
    model_choice m;
    const auto colon = text.find(':');
    m.name = text.substr(0, colon);
    if (colon != std::string::npos) {
      try {
        std::size_t used = 0;
        m.staleness = std::stod(text.substr(colon + 1), &used);
        if (used != text.size() - colon - 1 || m.staleness < 0) throw std::invalid_argument(text);
      } catch (const std::exception&) {
        throw error(errc::bad_input, "model '" + text + "': the staleness after ':' must be a number >= 0");
      }
    }
    (void)effective_staleness(m.name, m.staleness, 0);  // validates the name
    return m;
  }
};

/// Every combination of workers × scales × models, with one latency and core count; async and vap
/// get `unbounded_staleness` (effective_staleness).
inline std::vector<probe_point> grid(std::span<const double> workers, std::span<const double> scales, std::span<const model_choice> models,
                                     double latency_s, double cores, double unbounded_staleness) {
  std::vector<probe_point> out;
  for (double s : scales)
    for (double m : workers)
      for (const auto& mc : models) {
        probe_point p;
        p.workers = m;
        p.scale = s;
        p.consistency = mc.name;
        p.staleness = effective_staleness(mc.name, mc.staleness, unbounded_staleness);
        p.eager = mc.name == "essp";
        p.bounded = clock_bounded(mc.name);
        p.latency_s = latency_s;
        p.cores = cores;
        out.push_back(std::move(p));
      }
  return out;
}

/// A probe point as JSON (for a fit file).
inline json_value to_json(const probe_point& p) {
  json_value o = json_value::object();
  o.set("workers", p.workers).set("scale", p.scale).set("consistency", p.consistency).set("staleness", p.staleness)
      .set("eager", p.eager).set("bounded", p.bounded).set("latency_s", p.latency_s).set("cores", p.cores);
  return o;
}

}  // namespace strata::cost
