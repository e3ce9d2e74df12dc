// The compiled mode's TCP transport (core/config.hpp): tcp's Asio code and its delayed decorator,
// compiled once. Built with STRATA_SEPARATE_COMPILATION, as its users are.
#include <strata/transport/tcp.hpp>

namespace strata {
template class transport_model<tcp>;
template class delayed<tcp>;
template class transport_model<delayed<tcp>>;
}  // namespace strata
