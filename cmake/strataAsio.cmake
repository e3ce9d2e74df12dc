# Debian's standalone Asio ships headers only, no CMake package: give it a small imported target.
if(NOT TARGET strata::asio)
  find_path(STRATA_ASIO_INCLUDE_DIR asio.hpp)
  if(NOT STRATA_ASIO_INCLUDE_DIR)
    message(FATAL_ERROR "strata: standalone Asio not found (install Debian package libasio-dev)")
  endif()
  add_library(strata::asio INTERFACE IMPORTED)
  set_target_properties(strata::asio PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${STRATA_ASIO_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS "ASIO_STANDALONE;ASIO_NO_DEPRECATED")
endif()
