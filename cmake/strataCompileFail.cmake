# cmake -DCXX=c++ "-DFLAGS=-std=c++20;-fsyntax-only;..." -DSRC=file.cpp "-DEXPECT=regex" -P strataCompileFail.cmake
# A compile-fail test: compiling SRC must fail, and the compiler's output must match EXPECT.
execute_process(COMMAND ${CXX} ${FLAGS} ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SRC} compiled, but must fail with: ${EXPECT}\n${out}")
endif()
if(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "${SRC} failed to compile, but without the expected message '${EXPECT}':\n${out}")
endif()
message(STATUS "${SRC}: refused with '${EXPECT}'")
