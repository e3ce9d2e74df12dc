# strata_lasso capped by --rounds before --tolerance is met: exit status 3, "not converged" on
# stderr, and --save still writes the model (one coefficient per line, d = 4 lines).
file(REMOVE ${SAVE})
execute_process(COMMAND ${EXE} --data ${DATA} --standardize --scheduler round_robin --rounds 2 --tolerance 1e-12
                        --lambda-fraction 0.01 --save ${SAVE} --quiet
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 3)
  message(FATAL_ERROR "exit status ${rc}, expected 3 (not converged); stderr: ${err}")
endif()
if(NOT err MATCHES "not converged: gap .* after --rounds 2")
  message(FATAL_ERROR "no 'not converged' sentence on stderr: ${err}")
endif()
if(NOT EXISTS ${SAVE})
  message(FATAL_ERROR "--save ${SAVE} wrote nothing")
endif()
file(STRINGS ${SAVE} lines)
list(LENGTH lines n)
if(NOT n EQUAL 4)
  message(FATAL_ERROR "--save wrote ${n} coefficients, expected 4")
endif()
message("LASSO NC OK")
