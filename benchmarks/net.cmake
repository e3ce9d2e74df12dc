# strata_bench_tcp: the tcp transport against raw sockets measured in the same run (ratios).
# Included from benchmarks/CMakeLists.txt:  include(${CMAKE_CURRENT_SOURCE_DIR}/net.cmake)
add_executable(strata_bench_tcp ${CMAKE_CURRENT_LIST_DIR}/bench_tcp.cpp)
target_link_libraries(strata_bench_tcp PRIVATE ${STRATA_LINK} strata_project_flags)
if(NOT STRATA_NATIVE)
  target_compile_options(strata_bench_tcp PRIVATE -O2)
endif()

# strata_bench_mpi (a build with MPI): the mpi transport against raw MPI, and tcp against raw TCP,
# between two processes: mpirun -n 2 strata_bench_mpi.
if(STRATA_HAVE_MPI)
  add_executable(strata_bench_mpi ${CMAKE_CURRENT_LIST_DIR}/bench_mpi.cpp)
  target_link_libraries(strata_bench_mpi PRIVATE ${STRATA_LINK} strata::mpi strata_project_flags)
  if(NOT STRATA_NATIVE)
    target_compile_options(strata_bench_mpi PRIVATE -O2)
  endif()
endif()
