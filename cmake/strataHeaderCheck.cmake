# Header self-containment check, in two parts, both run by the ctest `header_check`:
#  1. every public header include/strata/**/*.hpp (and the runtime's impl/*.ipp), and every header of
#     the training programs, apps/trainers/**/*.hpp (included as <trainers/...>), compiles on its own:
#     one generated .cpp per header that includes only it, twice (its include guard), checked with
#     `-fsyntax-only` and strata's warnings as errors: a parse, no code generated;
#  2. every header in one translation unit (headers that clash with each other fail to compile
#     together), compiled at -O0 -g0: nm must find no strong definition in it, as a non-inline
#     definition in a header would be defined again by every file that includes it; and all of them
#     once more, syntax only, in the compiled mode (STRATA_SEPARATE_COMPILATION).
# Part 1 is a custom command per header with a stamp file and the compiler's depfile, so that a
# rebuild re-checks only the headers whose includes changed.
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
  set(apps_dir ${PROJECT_SOURCE_DIR}/apps)
  file(GLOB_RECURSE headers CONFIGURE_DEPENDS RELATIVE ${inc_dir} ${inc_dir}/strata/*.hpp ${inc_dir}/strata/*.ipp)
  file(GLOB_RECURSE app_headers CONFIGURE_DEPENDS RELATIVE ${apps_dir} ${apps_dir}/trainers/*.hpp)
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

  # The flags of a strata user: strata's include folder (and apps/ for the trainers), Asio's
  # definitions, C++20, strata's warnings.
  set(flags -std=c++20 -I${inc_dir} -I${apps_dir} -DASIO_STANDALONE -DASIO_NO_DEPRECATED -Wall -Wextra -Wpedantic -Werror)
  set(stamps "")
  set(sources "")
  foreach(h IN LISTS headers)
    string(MAKE_C_IDENTIFIER "${h}" id)
    # file(CONFIGURE) rewrites only on change, so reconfiguring does not force rebuilds.
    file(CONFIGURE OUTPUT ${gen_dir}/${id}.cpp
         CONTENT "#include <${h}>\n#include <${h}>  // twice: include guard / #pragma once\n")
    list(APPEND sources ${gen_dir}/${id}.cpp)
    add_custom_command(OUTPUT ${gen_dir}/${id}.stamp
      COMMAND ${CMAKE_CXX_COMPILER} ${flags} -fsyntax-only -MD -MF ${gen_dir}/${id}.d -MT ${gen_dir}/${id}.stamp
              ${gen_dir}/${id}.cpp
      COMMAND ${CMAKE_COMMAND} -E touch ${gen_dir}/${id}.stamp
      DEPENDS ${gen_dir}/${id}.cpp DEPFILE ${gen_dir}/${id}.d
      COMMENT "header check: ${h}" VERBATIM)
    list(APPEND stamps ${gen_dir}/${id}.stamp)
  endforeach()
  # Drop generated files of headers that were removed or renamed since the last configure.
  file(GLOB stale ${gen_dir}/strata_*.cpp ${gen_dir}/trainers_*.cpp)
  list(REMOVE_ITEM stale ${sources})
  if(stale)
    file(REMOVE ${stale})
  endif()

  # Every header together in the compiled mode too (where system.hpp leaves its body, and Asio, out).
  add_custom_command(OUTPUT ${gen_dir}/all_compiled_mode.stamp
    COMMAND ${CMAKE_CXX_COMPILER} ${flags} -DSTRATA_SEPARATE_COMPILATION -fsyntax-only -MD -MF ${gen_dir}/all_compiled_mode.d
            -MT ${gen_dir}/all_compiled_mode.stamp ${gen_dir}/all.cpp
    COMMAND ${CMAKE_COMMAND} -E touch ${gen_dir}/all_compiled_mode.stamp
    DEPENDS ${gen_dir}/all.cpp DEPFILE ${gen_dir}/all_compiled_mode.d
    COMMENT "header check: every header, compiled mode" VERBATIM)
  list(APPEND stamps ${gen_dir}/all_compiled_mode.stamp)
  add_custom_target(strata_header_check_each DEPENDS ${stamps})
  # Every header in one object, -O0 -g0: a strong (non-inline, non-static) definition in a header
  # would be defined again by every file that includes it; nm lists none, or the check fails.
  add_library(strata_header_check_odr OBJECT EXCLUDE_FROM_ALL ${gen_dir}/main.cpp)
  target_link_libraries(strata_header_check_odr PRIVATE strata::strata strata_project_flags)
  target_include_directories(strata_header_check_odr PRIVATE ${apps_dir})
  target_compile_options(strata_header_check_odr PRIVATE -O0 -g0)
  add_custom_target(strata_header_check
    COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} "-DOBJECTS=$<TARGET_OBJECTS:strata_header_check_odr>"
            -P ${PROJECT_SOURCE_DIR}/cmake/strataStrongSymbols.cmake
    DEPENDS strata_header_check_each strata_header_check_odr VERBATIM)
  add_test(NAME header_check
           COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target strata_header_check)
  # ctest -j: keep this build from running alongside other tests that also drive the build tree.
  # The longest test (minutes, where every other takes seconds): a high COST starts it first, so
  # the other tests run beside it instead of after it.
  set_tests_properties(header_check PROPERTIES RESOURCE_LOCK strata_build_tree TIMEOUT 1200 COST 10000)
endfunction()

strata_add_header_check()
