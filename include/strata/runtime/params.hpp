#pragma once
/// \file A run's parameters, all of them: the user's configuration (system_config.hpp), the
/// consistency model as run-time data (model_params.hpp) and the parties of a run and their
/// addresses (parties.hpp). Each can be included on its own.
#include <strata/runtime/model_params.hpp>
#include <strata/runtime/parties.hpp>
#include <strata/runtime/system_config.hpp>
