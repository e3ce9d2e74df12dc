// Same check as the CMake consumer (scripts/package_test.sh copies both folders side by side).
#include "../cmake/main.cpp"
