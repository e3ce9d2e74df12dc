#pragma once
/// \file The umbrella header: the parameter-server core (ids, errors, stats, consistency policies,
/// rows, the runtime with workers, coordinator, collectives and options, the in-process and
/// delayed transports). Left out, to be included where needed because they are heavier or
/// optional: `transport/tcp.hpp` (Asio sockets) with `runtime/cluster.hpp` (rank and peers from
/// flags or a launcher), and the machine-learning kernels and readers under `ml/`.
#include "core/error.hpp"
#include "core/ids.hpp"
#include "core/stats.hpp"
#include "consistency/models.hpp"
#include "runtime/coordinator.hpp"
#include "runtime/options.hpp"
#include "runtime/params.hpp"
#include "runtime/system.hpp"
#include "runtime/task.hpp"
#include "runtime/worker.hpp"
#include "table/common_rows.hpp"
#include "table/dense_row.hpp"
#include "table/sparse_row.hpp"
#include "transport/delayed.hpp"
#include "transport/inproc.hpp"
