#pragma once
/// \file strata's error codes (a std::error_category) and its one exception type.
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>

namespace strata {

enum class errc {
  ok = 0,
  bad_input = 1,          ///< a malformed data line or argument
  bad_frame,              ///< a wire frame that does not parse
  frame_too_large,        ///< a frame over the configured size limit
  protocol_mismatch,      ///< peer speaks another protocol version
  config_mismatch,        ///< peer runs another configuration
  auth_failed,            ///< wrong or missing shared secret
  peer_lost,              ///< a connection to a peer dropped mid-run
  timeout,                ///< a bounded wait ran out
  shutdown,               ///< the system is stopping
  diverged,               ///< an iterative method's iterates left every bound (e.g. too many parallel steps)
  refused,                ///< well-formed input or a setting refused by a limit (a size, the memory, a cap)
};

namespace detail {
class strata_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "strata"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::ok: return "success";
      case errc::bad_input: return "malformed input";
      case errc::bad_frame: return "malformed frame";
      case errc::frame_too_large: return "frame over the size limit";
      case errc::protocol_mismatch: return "protocol version mismatch";
      case errc::config_mismatch: return "run configuration mismatch";
      case errc::auth_failed: return "shared secret mismatch";
      case errc::peer_lost: return "peer connection lost";
      case errc::timeout: return "timed out";
      case errc::shutdown: return "system shutting down";
      case errc::diverged: return "diverged";
      case errc::refused: return "refused";
    }
    return "unknown strata error";
  }
};
}  // namespace detail

/// The category of strata::errc values.
inline const std::error_category& strata_category() noexcept {
  static const detail::strata_category_impl cat;
  return cat;
}

inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), strata_category()}; }

/// The one exception strata throws: an error code plus a message naming what was wrong.
class error : public std::system_error {
 public:
  error(errc e, const std::string& what) : std::system_error(make_error_code(e), what) {}
  error(std::error_code ec, const std::string& what) : std::system_error(ec, what) {}
};

}  // namespace strata

template <>
struct std::is_error_code_enum<strata::errc> : std::true_type {};
