# A run that fails after its output files were named leaves them as they were (issue 36, files):
# OUT holds "OLD\n" before; EXE ARGS must exit non-zero; OUT must still hold "OLD\n" and no
# temporary "OUT.tmp-*" may be left beside it.
#   cmake -DEXE=prog -DARGS="a;b" -DOUT=file -P output_atomic.cmake
file(WRITE ${OUT} "OLD\n")
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "exit status 0, expected a failure; stdout: ${out}")
endif()
file(READ ${OUT} now)
if(NOT now STREQUAL "OLD\n")
  message(FATAL_ERROR "${OUT} changed by the failed run (${err}): now '${now}'")
endif()
file(GLOB left "${OUT}.tmp-*")
if(left)
  message(FATAL_ERROR "temporary files left: ${left}")
endif()
message("OUTPUT ATOMIC OK: ${err}")
