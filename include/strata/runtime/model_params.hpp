#pragma once
/// \file The run-time face of a consistency policy (`model_params`), so the runtime is compiled once for
/// every model; naming a model at run time (`visit_consistency`, `model_name`), and a run's
/// configuration as data (`run_config`).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <strata/consistency/model.hpp>
#include <strata/consistency/models.hpp>
#include <strata/core/error.hpp>
#include <strata/core/ids.hpp>
#include <strata/runtime/system_config.hpp>

namespace strata {

/// The consistency policy's answers, with run-time bounds filled in: what the runtime asks at run
/// time. The runtime is compiled once for every policy; a policy's hooks reach it as plain
/// function pointers (`staleness_of`, `push_at`), so a user's policy changes behaviour without a
/// second copy of the runtime.
struct model_params {
  const char* name = "bsp";
  int staleness = 0;  ///< the policy's `staleness` (the largest bound over tables)
  push_mode push = push_mode::none;
  bool exact = true;
  double value_bound = std::numeric_limits<double>::infinity();
  int (*table_staleness)(table_id) = nullptr;  ///< the policy's staleness_of hook, if any
  bool (*push_at_hook)(clock_type) = nullptr;  ///< the policy's push_at hook, if any
  int config_staleness = 0;                    ///< system_config::staleness, for dynamic_bound
  bool dynamic_staleness = false;              ///< the policy's bound is dynamic_bound (ssp<dynamic_bound>, essp<dynamic_bound>)

  template <consistency_model C>
  static model_params of(const system_config& cfg) {
    static_assert(detail::check_consistency_model<C>());
    if (C::staleness == dynamic_bound && cfg.staleness < 0)  // a negative bound would make every read wait forever
      throw error(errc::bad_input, std::string(C::name()) + ": system_config::staleness " + std::to_string(cfg.staleness) + " (want >= 0)");
    if (C::value_bound < 0 && !(cfg.value_bound > 0))  // NaN or <= 0
      throw error(errc::bad_input, std::string(C::name()) + ": system_config::value_bound " + std::to_string(cfg.value_bound) + " (want > 0)");
    model_params p;
    p.name = C::name();
    p.config_staleness = cfg.staleness;
    p.staleness = C::staleness == dynamic_bound ? cfg.staleness : C::staleness;
    p.dynamic_staleness = C::staleness == dynamic_bound;
    p.push = C::push;
    p.exact = C::exact_snapshots;
    p.value_bound = C::value_bound < 0 ? cfg.value_bound : C::value_bound;
    if constexpr (requires(table_id t) { C::staleness_of(t); }) p.table_staleness = [](table_id t) { return strata::staleness_of<C>(t); };
    if constexpr (requires(clock_type c) { C::push_at(c); }) p.push_at_hook = [](clock_type c) { return strata::push_at<C>(c); };
    return p;
  }
  /// The model named `name` (bsp, ssp, essp, vap, async), with its bounds from `cfg` (ssp/essp:
  /// cfg.staleness; vap: cfg.value_bound): the one place a run-time name becomes a policy.
  static model_params named(const std::string& name, const system_config& cfg);

  /// The same model with the dynamic bound set to s (what system_config::staleness would have
  /// given): the policy's `staleness` when it is dynamic_bound, and every table whose
  /// `staleness_of` is dynamic_bound. Throws strata::error(bad_input) when s < 0.
  model_params with_dynamic_staleness(int s) const {
    if (s < 0) throw error(errc::bad_input, "staleness bound " + std::to_string(s) + " (want >= 0)");
    model_params p = *this;
    p.config_staleness = s;
    if (p.dynamic_staleness) p.staleness = s;
    return p;
  }
  /// The staleness bound of reads of table t.
  int staleness_for(table_id t) const noexcept {
    if (!table_staleness) return staleness;
    const int s = table_staleness(t);
    return s == dynamic_bound ? config_staleness : s;
  }
  /// Whether the server pushes subscribed rows when the minimum clock advances to `new_min`.
  bool pushes_at(clock_type new_min) const noexcept {
    if (push != push_mode::on_min_clock) return false;
    return push_at_hook ? push_at_hook(new_min) : true;
  }
  /// True when every advance of the minimum clock pushes: a reader may then wait for the next push
  /// instead of asking for a stale subscribed row.
  bool pushes_every_advance() const noexcept { return push == push_mode::on_min_clock && !push_at_hook; }
  std::string describe() const {
    std::string s = name;
    if (staleness != unbounded) s += " s=" + std::to_string(staleness);
    if (std::isfinite(value_bound)) s += " v=" + std::to_string(value_bound);
    return s;
  }
};

/// Calls `f(std::type_identity<C>{})` with the policy named `name`: bsp, ssp (ssp<dynamic_bound>),
/// essp (essp<dynamic_bound>), vap (vap<-1.0>: V from the configuration) or async. Throws
/// `strata::error(bad_input)` listing the names for any other.
template <class F>
decltype(auto) visit_consistency(const std::string& name, F&& f) {
  if (name == "bsp") return f(std::type_identity<bsp>{});
  if (name == "ssp") return f(std::type_identity<ssp<dynamic_bound>>{});
  if (name == "essp") return f(std::type_identity<essp<dynamic_bound>>{});
  if (name == "vap") return f(std::type_identity<vap<-1.0>>{});
  if (name == "async") return f(std::type_identity<async>{});
  throw error(errc::bad_input, "unknown consistency model '" + name + "' (bsp|ssp|essp|vap|async)");
}

inline model_params model_params::named(const std::string& name, const system_config& cfg) {
  return visit_consistency(name, [&]<class C>(std::type_identity<C>) { return model_params::of<C>(cfg); });
}

/// A consistency model named with its staleness appended, as test and benchmark programs take it:
/// "essp2" is {"essp", 2}, "bsp" is {"bsp", 0}. An unknown name part is refused as
/// model_params::named refuses it.
struct model_name {
  std::string name;
  int staleness = 0;
  static model_name parse(const std::string& s) {
    const auto digits = s.find_first_of("0123456789");
    if (digits != std::string::npos &&
        (s.find_first_not_of("0123456789", digits) != std::string::npos || s.size() - digits > 6))
      throw error(errc::bad_input, "model '" + s + "': expected a name then a staleness, e.g. essp2");
    model_name m{s.substr(0, digits), digits == std::string::npos ? 0 : std::stoi(s.substr(digits))};
    (void)model_params::named(m.name, {});  // throws for an unknown name
    return m;
  }
};

/// A run's configuration as data (serialisable; what a planner names and a trace records): the
/// consistency model by name and its bounds, and the shape.
struct run_config {
  std::string consistency = "bsp";
  int staleness = 0;
  double value_bound = 1.0;
  std::uint32_t nodes = 1, workers_per_node = 1;
  system_config system() const {
    return {.nodes = nodes, .workers_per_node = workers_per_node, .staleness = staleness, .value_bound = value_bound};
  }
  model_params model() const { return model_params::named(consistency, system()); }
  template <class Ar>
  void serialize(Ar& ar) { ar(consistency, staleness, value_bound, nodes, workers_per_node); }
  friend bool operator==(const run_config&, const run_config&) = default;
};

}  // namespace strata
