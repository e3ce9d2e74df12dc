// The compiled mode's runtime (core/config.hpp): system_base's body and the virtual faces of the
// in-process transports, compiled once. Built with STRATA_SEPARATE_COMPILATION, as its users are.
#include <strata/runtime/impl/system.ipp>
#include <strata/runtime/system.hpp>
#include <strata/transport/delayed.hpp>

namespace strata {
template class transport_model<inproc>;
template class delayed<inproc>;
template class transport_model<delayed<inproc>>;
}  // namespace strata
