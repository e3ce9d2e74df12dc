# cmake -DNM=nm -DOBJECTS=a.o;b.o -P strataStrongSymbols.cmake: fails when an object defines a strong
# symbol (nm kinds T, D, B, R: a non-inline function or variable). Used by the header check on an
# object that only includes headers, where every definition must be inline, a template or static.
foreach(obj IN LISTS OBJECTS)
  execute_process(COMMAND ${NM} --defined-only -C ${obj} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on ${obj}")
  endif()
  string(REGEX MATCHALL "[0-9a-f]+ [TDBR] [^\n]+" strong "${out}")
  if(strong)
    list(JOIN strong "\n  " lines)
    message(FATAL_ERROR "header check: a header defines non-inline symbols (each file that includes it defines them again):\n  ${lines}")
  endif()
endforeach()
list(LENGTH OBJECTS n)
message(STATUS "header check: no strong definition in ${n} objects")
