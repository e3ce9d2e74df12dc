#pragma once
/// \file The cost models (Hemingway, Ernest), one umbrella: NNLS, the system and convergence models
/// and their features policies, the planner, experiment design, traces to fit points, and checking
/// a plan against measurements. Depends on core/ (and xtensor) only, not on the runtime, so it
/// fits models offline from any run's JSON Lines trace. Not included by strata/strata.hpp.
#include <strata/cost/adaptive.hpp>
#include <strata/cost/convergence_model.hpp>
#include <strata/cost/design.hpp>
#include <strata/cost/evaluate.hpp>
#include <strata/cost/nnls.hpp>
#include <strata/cost/planner.hpp>
#include <strata/cost/probe.hpp>
#include <strata/cost/system_model.hpp>
#include <strata/cost/trace_fit.hpp>
