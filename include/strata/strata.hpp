#pragma once
/// \file The umbrella header: everything strata offers.
#include "core/error.hpp"
#include "core/ids.hpp"
#include "core/stats.hpp"
#include "consistency/models.hpp"
#include "runtime/system.hpp"
#include "runtime/task.hpp"
#include "runtime/worker.hpp"
#include "table/dense_row.hpp"
#include "table/sparse_row.hpp"
#include "transport/delayed.hpp"
#include "transport/inproc.hpp"
