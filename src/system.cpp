// The compiled mode's runtime (core/config.hpp): system_base's body and the virtual faces of the
// in-process transports, and the tables of the common row types (table/common_rows.hpp), compiled once. Built with STRATA_SEPARATE_COMPILATION, as its users are.
#include <strata/runtime/impl/system.ipp>
#include <strata/runtime/impl/worker.ipp>
#include <strata/runtime/system.hpp>
#include <strata/table/common_rows.hpp>
#include <strata/transport/delayed.hpp>

namespace strata {
template class transport_model<inproc>;
template class delayed<inproc>;
template class transport_model<delayed<inproc>>;
template class dense_row<float>;
template class dense_row<double>;
template class dense_row<std::int64_t>;
template class sparse_row<std::int32_t>;
template class client_table<dense_row<float>>;
template class client_table<dense_row<double>>;
template class client_table<dense_row<std::int64_t>>;
template class client_table<sparse_row<std::int32_t>>;
template class server_table<dense_row<float>>;
template class server_table<dense_row<double>>;
template class server_table<dense_row<std::int64_t>>;
template class server_table<sparse_row<std::int32_t>>;
}  // namespace strata
