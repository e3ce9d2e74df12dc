// Package consumer check, built against an installed strata (tests/package/cmake) and against
// strata as a Meson subproject (tests/package/meson includes this file). Returns non-zero on failure.
#include <strata/core/error.hpp>
#include <strata/core/stats.hpp>
#if __has_include(<strata/strata.hpp>)
#include <strata/strata.hpp>
#endif

#include <cmath>
#include <cstdio>
#include <string>
#include <system_error>

// strata's usage requirements must travel with the package (cmake/strataAsio.cmake, meson.build).
#if !defined(ASIO_STANDALONE) || !defined(ASIO_NO_DEPRECATED)
#error "strata package did not propagate ASIO_STANDALONE / ASIO_NO_DEPRECATED"
#endif
#if __cplusplus < 202002L
#error "strata needs C++20"
#endif

inline int strata_package_check() {
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) {
      std::fprintf(stderr, "package check FAILED: %s\n", what);
      ++failures;
    }
  };
  strata::running_stats s;
  for (double x : {1.0, 2.0, 3.0, 4.0}) s.add(x);
  expect(s.count() == 4, "running_stats count");
  expect(std::fabs(s.mean() - 2.5) < 1e-12, "running_stats mean");
  expect(std::fabs(s.variance() - 1.25) < 1e-12, "running_stats variance");

  strata::int_histogram h;
  h.add(-1);
  h.add(2, 3);
  expect(h.count() == 4 && h.bins().at(2) == 3, "int_histogram bins");

  std::error_code ec = strata::errc::timeout;
  expect(ec.category().name() == std::string("strata"), "strata error category");
  try {
    throw strata::error(strata::errc::peer_lost, "peer 3 lost");
  } catch (const std::system_error& e) {
    expect(e.code() == strata::errc::peer_lost, "strata::error code");
  }
  if (failures == 0) std::printf("strata package check: ok\n");
  return failures;
}

int main() { return strata_package_check() == 0 ? 0 : 1; }
