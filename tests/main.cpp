#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "paths.hpp"

namespace strata::test {
const char* source_dir() { return STRATA_SOURCE_DIR; }
const char* binary_dir() { return STRATA_BINARY_DIR; }
const char* mpiexec() { return STRATA_MPIEXEC; }
}  // namespace strata::test
