# strata_mf across a small cluster of network namespaces joined by a bridge (scripts/netns_cluster.sh):
# a BSP run over TCP equal to a loopback run, a link cut mid-run reported by address, and
# scripts/launch.sh --restarts resuming the job. Needs root and iproute2: elsewhere the script
# exits 77 and ctest reports the test as skipped. Runs alone (it starts 3 processes and cuts links
# on a timer); `ctest -L netns` runs just this one.
# tests/ is configured before examples/, so TARGET strata_mf is not known yet here: the option that
# builds it is the guard. The script needs strata_mf and the tiny data examples/ writes.
if(STRATA_BUILD_EXAMPLES AND EXISTS ${PROJECT_SOURCE_DIR}/examples/mf.cpp)
  find_program(STRATA_BASH bash)
  if(STRATA_BASH)
    add_test(NAME net.netns_cluster
             COMMAND ${STRATA_BASH} ${PROJECT_SOURCE_DIR}/scripts/netns_cluster.sh --build ${PROJECT_BINARY_DIR})
    set_tests_properties(net.netns_cluster PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE LABELS netns)
  endif()
endif()
