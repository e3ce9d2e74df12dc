# Header self-containment check: every public header include/strata/**/*.hpp must compile on its
# own (one generated .cpp per header that includes only it, twice, to exercise its include guard).
# They are linked into one executable whose main.cpp includes every header too, so each header
# sits in two translation units: a non-inline definition in a header fails at link time
# (multiple definition), and headers that clash with each other fail to compile together.
#
# The target strata_header_check is EXCLUDE_FROM_ALL; the ctest `header_check` builds it, so a
# header that does not stand alone fails that one test instead of the whole build.
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
  file(GLOB_RECURSE headers CONFIGURE_DEPENDS RELATIVE ${inc_dir} ${inc_dir}/strata/*.hpp)
  list(SORT headers)
  set(gen_dir ${CMAKE_CURRENT_BINARY_DIR}/header_check)
  set(sources ${gen_dir}/main.cpp)
  set(main_content "")
  foreach(h IN LISTS headers)
    string(APPEND main_content "#include <${h}>\n")
  endforeach()
  string(APPEND main_content "\nint main() { return 0; }\n")
  file(CONFIGURE OUTPUT ${gen_dir}/main.cpp CONTENT "${main_content}")
  foreach(h IN LISTS headers)
    string(MAKE_C_IDENTIFIER "${h}" id)
    # file(CONFIGURE) rewrites only on change, so reconfiguring does not force rebuilds.
    file(CONFIGURE OUTPUT ${gen_dir}/${id}.cpp
         CONTENT "#include <${h}>\n#include <${h}>  // twice: include guard / #pragma once\n")
    list(APPEND sources ${gen_dir}/${id}.cpp)
  endforeach()
  # Drop generated files of headers that were removed or renamed since the last configure.
  file(GLOB stale ${gen_dir}/*.cpp)
  list(REMOVE_ITEM stale ${sources})
  if(stale)
    file(REMOVE ${stale})
  endif()

  add_executable(strata_header_check EXCLUDE_FROM_ALL ${sources})
  target_link_libraries(strata_header_check PRIVATE strata::strata strata_project_flags)
  add_test(NAME header_check
           COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target strata_header_check)
  # ctest -j: keep this build from running alongside other tests that also drive the build tree.
  set_tests_properties(header_check PROPERTIES RESOURCE_LOCK strata_build_tree TIMEOUT 1200)
endfunction()

strata_add_header_check()
