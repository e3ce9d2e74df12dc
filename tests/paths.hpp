#pragma once
// Where the tests find the source tree (scripts, committed traces) and the build tree (the node
// program). Defined in main.cpp only, so that no other test file's object depends on the checkout's
// path and the compiler cache can reuse it from a clone elsewhere.
namespace strata::test {
const char* source_dir();
const char* binary_dir();
/// MPI's launcher (mpiexec) as CMake found it; empty in a build without MPI.
const char* mpiexec();
}  // namespace strata::test
