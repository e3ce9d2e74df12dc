# Clusters made on this machine. strata_mf across network namespaces joined by a bridge (scripts/netns_cluster.sh):
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

# The trainers under srun on a one-node Slurm of the script's own (scripts/slurm_local.sh): tcp with
# addresses from Slurm's variables, mpi through srun --mpi=pmix, a --size that disagrees. Needs root
# and Slurm (scripts/deps.sh slurm-wlm munge); elsewhere skipped (exit 77), with the reason printed.
if(STRATA_BUILD_EXAMPLES AND EXISTS ${PROJECT_SOURCE_DIR}/examples/mf.cpp AND STRATA_BASH)
  add_test(NAME net.slurm_local COMMAND ${STRATA_BASH} ${PROJECT_SOURCE_DIR}/scripts/slurm_local.sh --build ${PROJECT_BINARY_DIR})
  set_tests_properties(net.slurm_local PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE LABELS slurm)
endif()
