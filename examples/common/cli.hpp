#pragma once
/// \file Command-line checks shared by the example programs and benchmarks.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

namespace strata::examples {

/// A validator of one number: `ok(v)` for a finite v that parses whole, else "must be `want`, got 's'".
template <class Ok>
CLI::Validator number_check(Ok ok, std::string want, std::string description, std::string name) {
  return CLI::Validator{[ok, want](std::string& s) -> std::string {
                          char* end = nullptr;
                          errno = 0;
                          const double v = std::strtod(s.c_str(), &end);
                          if (end == s.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || !ok(v))
                            return "must be " + want + ", got '" + s + "'";
                          return {};
                        },
                        description, name};
}

/// A number > 0. (CLI11's PositiveNumber reports a bad value as "not in range 0.000000 to " and the
/// largest double written out in 309 digits.)
inline const CLI::Validator positive = number_check([](double v) { return v > 0; }, "a number > 0", "POSITIVE", "positive");

/// A finite number >= 0 (staleness, delays, weights: a negative or NaN value has no meaning and
/// a negative staleness bound would make SSP/ESSP wait forever).
inline const CLI::Validator non_negative = number_check([](double v) { return v >= 0; }, "a finite number >= 0", "NONNEGATIVE", "non_negative");

/// A fraction of the data: a number in (0, 1] (strata_plan's --fractions: 2 once padded a subset
/// with copies of empty ratings).
inline const CLI::Validator fraction = number_check([](double v) { return v > 0 && v <= 1; }, "a fraction in (0, 1]", "FRACTION", "fraction");

/// What one worker thread costs before it holds any row: its stack, malloc arena and queues
/// (measured: `strata_mf --workers N` grows ~2.2 MB per worker).
inline constexpr std::uint64_t worker_bytes = std::uint64_t{2200} << 10;

/// The machine's physical memory in bytes (sysconf), or 2^64-1 when it cannot be read.
inline std::uint64_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return ~std::uint64_t{0};
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

/// The address space this process may still map (RLIMIT_AS, `ulimit -v`), or 2^64-1 when unlimited.
inline std::uint64_t address_space_limit() {
  struct rlimit lim {};
  if (::getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return ~std::uint64_t{0};
  return static_cast<std::uint64_t>(lim.rlim_cur);
}

/// This process's peak resident memory so far, in MiB (getrusage's ru_maxrss, kilobytes on Linux:
/// every allocation the process touched, the data it read included).
inline double peak_rss_mb() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

/// Refuses, before allocating, a setting whose memory (`bytes`, an estimate) exceeds the machine's
/// physical memory or the process's address-space limit, whichever is less: "FLAG: WHAT would need
/// N MiB, more than this machine's M MiB of memory" (or "... this process's address-space limit of
/// M MiB (ulimit -v)"). `flag` may be a file name when the size comes from a file.
inline void check_memory(const std::string& flag, long double bytes, const std::string& what) {
  const std::uint64_t phys = physical_memory(), limit = address_space_limit();
  const std::uint64_t have = std::min(phys, limit);
  if (bytes <= static_cast<long double>(have)) return;
  const std::string than = limit < phys ? "this process's address-space limit of " + std::to_string(have >> 20) + " MiB (ulimit -v)"
                                        : "this machine's " + std::to_string(have >> 20) + " MiB of memory";
  throw std::invalid_argument(flag + ": " + what + " would need " + std::to_string(static_cast<unsigned long long>(bytes / (1 << 20))) +
                              " MiB, more than " + than);
}

}  // namespace strata::examples
