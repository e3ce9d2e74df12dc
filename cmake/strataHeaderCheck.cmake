# Header self-containment check, run by the ctest `header_check` (label header_check; scripts/test.sh
# leaves it out unless STRATA_HEADER_CHECK=1, CI runs it as a step of its own):
#  1. every public header include/strata/**/*.hpp (and the runtime's impl/*.ipp), and every header of
#     the training programs, apps/trainers/**/*.hpp (included as <trainers/...>), compiles on its own:
#     one generated .cpp per header that includes only it, twice (its include guard);
#  2. every header in one translation unit (headers that clash with each other fail to compile
#     together), header-only and once more in the compiled mode (STRATA_SEPARATE_COMPILATION);
#  3. nm finds no strong definition in any of those objects, as a non-inline definition in a header
#     would be defined again by every file that includes it.
# All are compiled at -O0 -g0 with strata's warnings as errors, as object libraries: a rebuild
# re-checks only the headers whose includes changed, and a compiler cache (scripts/ccache.sh) serves
# a clone what another clone already checked.
#
# The targets are EXCLUDE_FROM_ALL; the ctest `header_check` builds them, so a header that does not
# stand alone fails that one test instead of the whole build.
#
# Including this file defines strata_add_header_check() and calls it once, so one line in
# tests/CMakeLists.txt is enough:  include(${PROJECT_SOURCE_DIR}/cmake/strataHeaderCheck.cmake)
# Calling the function again is a no-op.
include_guard(GLOBAL)

function(strata_add_header_check)
  if(TARGET strata_header_check)
    return()
  endif()
  set(inc_dir ${PROJECT_SOURCE_DIR}/include)
  set(apps_dir ${PROJECT_SOURCE_DIR}/apps)
  file(GLOB_RECURSE headers CONFIGURE_DEPENDS RELATIVE ${inc_dir} ${inc_dir}/strata/*.hpp ${inc_dir}/strata/*.ipp)
  file(GLOB_RECURSE app_headers CONFIGURE_DEPENDS RELATIVE ${apps_dir} ${apps_dir}/trainers/*.hpp)
  # The MPI headers need <mpi.h>: checked with MPI where the build has it, left out otherwise.
  if(NOT STRATA_HAVE_MPI)
    list(FILTER headers EXCLUDE REGEX "^strata/(transport/mpi|transport/mpi_world|runtime/mpi_cluster)[.]hpp$")
  endif()
  if(NOT STRATA_HAVE_SIMGRID)  # needs <simgrid/s4u.hpp>
    list(FILTER headers EXCLUDE REGEX "^strata/sim/(simgrid_platform|simulated)[.]hpp$")
  endif()
  list(SORT headers)
  list(SORT app_headers)
  list(APPEND headers ${app_headers})
  set(gen_dir ${CMAKE_CURRENT_BINARY_DIR}/header_check)
  set(all_content "")
  foreach(h IN LISTS headers)
    if(NOT h MATCHES "[.]ipp$")
      string(APPEND all_content "#include <${h}>\n")
    endif()
  endforeach()
  file(CONFIGURE OUTPUT ${gen_dir}/all.cpp CONTENT "${all_content}")
  file(CONFIGURE OUTPUT ${gen_dir}/main.cpp CONTENT "#include \"all.cpp\"\n")

  set(sources "")
  foreach(h IN LISTS headers)
    string(MAKE_C_IDENTIFIER "${h}" id)
    # file(CONFIGURE) rewrites only on change, so reconfiguring does not force rebuilds.
    file(CONFIGURE OUTPUT ${gen_dir}/${id}.cpp
         CONTENT "#include <${h}>\n#include <${h}>  // twice: include guard / #pragma once\n")
    list(APPEND sources ${gen_dir}/${id}.cpp)
  endforeach()

  # Each header, every header together (header-only), and every header together in the compiled
  # mode, each as object files of their own targets at -O0 -g0 without NDEBUG (so asserts are
  # checked too), with the flags of a strata user: strata::strata's include folder and Asio
  # definitions (and apps/ for the trainers), strict C++20, strata's warnings as errors. As
  # ordinary targets they compile in parallel and through the compiler cache when there is one.
  file(GLOB stale ${gen_dir}/strata_*.cpp ${gen_dir}/trainers_*.cpp)
  list(REMOVE_ITEM stale ${sources})
  if(stale)
    file(REMOVE ${stale})  # generated files of headers removed or renamed since the last configure
  endif()
  add_library(strata_header_check_each OBJECT EXCLUDE_FROM_ALL ${sources})
  # Every header in one object: headers that clash with each other fail to compile together.
  add_library(strata_header_check_odr OBJECT EXCLUDE_FROM_ALL ${gen_dir}/main.cpp)
  # The same in the compiled mode (where system.hpp leaves its body, and Asio, out).
  add_library(strata_header_check_compiled OBJECT EXCLUDE_FROM_ALL ${gen_dir}/main.cpp)
  target_compile_definitions(strata_header_check_compiled PRIVATE STRATA_SEPARATE_COMPILATION)
  foreach(t strata_header_check_each strata_header_check_odr strata_header_check_compiled)
    target_link_libraries(${t} PRIVATE strata::strata strata_project_flags)
    if(STRATA_HAVE_MPI)
      target_link_libraries(${t} PRIVATE strata::mpi)
    endif()
    if(STRATA_HAVE_SIMGRID)
      target_link_libraries(${t} PRIVATE strata::sim)
    endif()
    target_include_directories(${t} PRIVATE ${apps_dir})
    target_compile_options(${t} PRIVATE -O0 -g0 -UNDEBUG)
    set_target_properties(${t} PROPERTIES CXX_EXTENSIONS OFF)
  endforeach()
  # nm must find no strong definition in any of the objects: a non-inline definition in a header
  # would be defined again by every file that includes it.
  add_custom_target(strata_header_check
    COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM}
            "-DOBJECTS=$<TARGET_OBJECTS:strata_header_check_each>;$<TARGET_OBJECTS:strata_header_check_odr>;$<TARGET_OBJECTS:strata_header_check_compiled>"
            -P ${PROJECT_SOURCE_DIR}/cmake/strataStrongSymbols.cmake
    DEPENDS strata_header_check_each strata_header_check_odr strata_header_check_compiled VERBATIM)
  add_test(NAME header_check
           COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target strata_header_check)
  # ctest -j: keep this build from running alongside other tests that also drive the build tree.
  # The longest test (minutes with a cold compiler cache, where every other takes seconds): a high
  # COST starts it first, so the other tests run beside it instead of after it.
  set_tests_properties(header_check PROPERTIES RESOURCE_LOCK strata_build_tree TIMEOUT 1200 COST 10000
                       LABELS header_check)
endfunction()

strata_add_header_check()
