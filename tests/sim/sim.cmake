# strata_sim_link: shipped platforms built in SimGrid carry messages in the times their links say
# (hand-computed in the program). One SimGrid engine per process, so a program of its own per run.
if(STRATA_HAVE_SIMGRID)
  add_executable(strata_sim_link ${CMAKE_CURRENT_LIST_DIR}/sim_link.cpp)
  target_link_libraries(strata_sim_link PRIVATE strata::sim strata_project_flags)
  foreach(pf cluster16_10gbe fattree256 cluster16_stragglers)
    add_test(NAME sim.link.${pf} COMMAND strata_sim_link ${PROJECT_SOURCE_DIR}/examples/platforms/${pf}.txt)
    set_tests_properties(sim.link.${pf} PROPERTIES TIMEOUT 60 FAIL_REGULAR_EXPRESSION "MISMATCH")
  endforeach()
endif()
