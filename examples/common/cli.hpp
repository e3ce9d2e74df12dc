#pragma once
/// \file Command-line checks shared by the example programs and benchmarks.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace strata::examples {

/// A number > 0. (CLI11's PositiveNumber reports a bad value as "not in range 0.000000 to " and the
/// largest double written out in 309 digits.)
inline const CLI::Validator positive{[](std::string& s) -> std::string {
                                       char* end = nullptr;
                                       errno = 0;
                                       const double v = std::strtod(s.c_str(), &end);
                                       if (end == s.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v <= 0)
                                         return "must be a number > 0, got '" + s + "'";
                                       return {};
                                     },
                                     "POSITIVE", "positive"};

}  // namespace strata::examples
