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

# The real runtime on a simulated cluster (strata::simulated, through ps_node): every consistency
# model's invariants (staleness bounds, no lost update: ps_node exits 2 on a violation) at 256
# workers (16 hosts x 16), the runtime scenario (coordinator, app messages, collectives, a second
# run), the same simulated times and rows from two runs, and a platform too small for the run refused.
if(STRATA_HAVE_SIMGRID AND TARGET strata_ps_node)
  find_program(STRATA_BASH bash)
  set(sim_node $<TARGET_FILE:strata_ps_node> --transport sim --sim-cpu none)
  set(sim16 --platform ${PROJECT_SOURCE_DIR}/examples/platforms/cluster16_10gbe.txt --size 16)
  foreach(model bsp ssp2 essp2)
    add_test(NAME sim.ps.${model}_256 COMMAND ${sim_node} ${sim16} --wpn 16 --model ${model} --clocks 20 --rows 64)
    set_tests_properties(sim.ps.${model}_256 PROPERTIES TIMEOUT 240 PASS_REGULAR_EXPRESSION "RESULT rank=0 .* ok")
  endforeach()
  # vap and async send far more (every inc may flush): fewer clocks.
  foreach(model vap async)
    add_test(NAME sim.ps.${model}_256 COMMAND ${sim_node} ${sim16} --wpn 16 --model ${model} --clocks 6 --rows 32)
    set_tests_properties(sim.ps.${model}_256 PROPERTIES TIMEOUT 240 PASS_REGULAR_EXPRESSION "RESULT rank=0 .* ok")
  endforeach()
  add_test(NAME sim.ps.runtime COMMAND ${sim_node} ${sim16} --wpn 4 --scenario runtime)
  set_tests_properties(sim.ps.runtime PROPERTIES TIMEOUT 120 PASS_REGULAR_EXPRESSION "RESULT rank=0 scenario=runtime runs=2 ok")
  add_test(NAME sim.ps.deterministic
           COMMAND ${STRATA_BASH} ${CMAKE_CURRENT_LIST_DIR}/deterministic.sh $<TARGET_FILE:strata_ps_node> --transport sim --sim-cpu none
                   --platform ${PROJECT_SOURCE_DIR}/examples/platforms/cluster16_stragglers.txt --size 16 --wpn 4 --model essp2 --clocks 10)
  set_tests_properties(sim.ps.deterministic PROPERTIES TIMEOUT 120 PASS_REGULAR_EXPRESSION "MATCH [(]")
  # Every node talks to every other: 120 nodes need more lanes than a pair of actors per pair of
  # nodes allowed (SimGrid aborted past ~110 nodes, out of memory mappings); and a pool of 4 lanes
  # for 64 workers makes transfers wait for one: invariants hold, lane waits are counted, and two
  # runs give the same simulated times.
  add_test(NAME sim.ps.bsp_120_hosts COMMAND ${sim_node} --platform ${PROJECT_SOURCE_DIR}/examples/platforms/fattree256.txt
                                                         --size 120 --wpn 1 --model bsp --clocks 3 --rows 8)
  set_tests_properties(sim.ps.bsp_120_hosts PROPERTIES TIMEOUT 240 PASS_REGULAR_EXPRESSION "RESULT rank=0 .* ok")
  add_test(NAME sim.ps.lane_budget
           COMMAND ${STRATA_BASH} ${CMAKE_CURRENT_LIST_DIR}/deterministic.sh $<TARGET_FILE:strata_ps_node> --transport sim --sim-cpu none
                   --platform ${PROJECT_SOURCE_DIR}/examples/platforms/cluster16_10gbe.txt --size 16 --wpn 4 --model essp2 --clocks 10
                   --sim-max-lanes 4)
  set_tests_properties(sim.ps.lane_budget PROPERTIES TIMEOUT 120 PASS_REGULAR_EXPRESSION "lanes=4 lane_waits=[1-9][0-9]*.*RESULT rank=0 .* ok.*MATCH [(]")
  add_test(NAME sim.ps.worker_error COMMAND ${sim_node} ${sim16} --wpn 2 --model bsp --throw-at 3)
  set_tests_properties(sim.ps.worker_error PROPERTIES TIMEOUT 60 PASS_REGULAR_EXPRESSION "ERROR: worker [0-9]+ failed on purpose at clock 3")
  add_test(NAME sim.ps.too_few_hosts COMMAND ${sim_node} --platform ${PROJECT_SOURCE_DIR}/examples/platforms/this_machine.txt --size 4)
  set_tests_properties(sim.ps.too_few_hosts PROPERTIES TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "ERROR: platform this-machine: it has 1 hosts, fewer than the run's 4 processes")
endif()
