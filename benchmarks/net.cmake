# strata_bench_tcp: the tcp transport against raw sockets measured in the same run (ratios).
# Included from benchmarks/CMakeLists.txt:  include(${CMAKE_CURRENT_SOURCE_DIR}/net.cmake)
add_executable(strata_bench_tcp ${CMAKE_CURRENT_LIST_DIR}/bench_tcp.cpp)
target_link_libraries(strata_bench_tcp PRIVATE ${STRATA_LINK} strata_project_flags)
if(NOT STRATA_NATIVE)
  target_compile_options(strata_bench_tcp PRIVATE -O2)
endif()
