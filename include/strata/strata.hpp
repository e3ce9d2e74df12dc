#pragma once
/// \file The umbrella header: the parameter-server core (ids, errors, stats, consistency policies,
/// rows, the runtime with workers, coordinator, collectives and options, the in-process and
/// delayed transports). Left out, to be included where needed because they are heavier or
/// optional: `transport/tcp.hpp` (Asio sockets) with `runtime/cluster.hpp` (rank and peers from
/// flags or a launcher), and the machine-learning kernels and readers under `ml/`.
#include <strata/core/error.hpp>
#include <strata/core/ids.hpp>
#include <strata/core/stats.hpp>
#include <strata/consistency/models.hpp>
#include <strata/runtime/coordinator.hpp>
#include <strata/runtime/options.hpp>
#include <strata/runtime/params.hpp>
#include <strata/runtime/system.hpp>
#include <strata/runtime/task.hpp>
#include <strata/runtime/worker.hpp>
#include <strata/table/common_rows.hpp>
#include <strata/table/dense_row.hpp>
#include <strata/table/sparse_row.hpp>
#include <strata/transport/delayed.hpp>
#include <strata/transport/inproc.hpp>
