#pragma once
// Shared by the data-reader fuzz targets: run a reader on the input, accept strata::error
// (bad_input or refused, naming "fuzz:LINE: ..."), and let anything else (bad_alloc, length_error, a
// crash, undefined behaviour) reach libFuzzer.
#include <strata/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata_fuzz {
template <class F>
void expect_ok_or_bad_input(F&& f) {
  try {
    f();
  } catch (const strata::error& e) {
    const std::string_view what = e.what();
    const bool expected = e.code() == strata::errc::bad_input || e.code() == strata::errc::refused;
    if (!expected || what.rfind("fuzz:", 0) != 0) __builtin_trap();  // must name the input
  }
}
}  // namespace strata_fuzz
