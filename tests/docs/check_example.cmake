# check_example.cmake — runs `tilec check` on one documentation example.
# An example without `// expected-error: MESSAGE` lines must pass cleanly (exit 0, no
# diagnostics at all). An example with them must exit 1, and each MESSAGE must be part of an
# `error:` line of the output.
# usage: cmake -DTILEC=path/to/tilec -DEXAMPLE=file.tl -P check_example.cmake
if(NOT TILEC OR NOT EXAMPLE)
  message(FATAL_ERROR "usage: cmake -DTILEC=... -DEXAMPLE=... -P check_example.cmake")
endif()
# a message may contain ';', which CMake would take as a list separator: hide it meanwhile
file(READ ${EXAMPLE} text)
string(REPLACE ";" "<semicolon>" text "${text}")
string(REGEX MATCHALL "// expected-error: [^\n]*" expected "${text}")
execute_process(COMMAND ${TILEC} check ${EXAMPLE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT expected)
  if(NOT rc EQUAL 0 OR NOT all STREQUAL "")
    message(FATAL_ERROR "${EXAMPLE}: expected a clean check, got exit ${rc}:\n${all}")
  endif()
  return()
endif()
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "${EXAMPLE}: expected exit 1 (errors in the input), got ${rc}:\n${all}")
endif()
# the error lines of the output (": error: " does not match an echoed source line that holds
# an expected-error comment); ';' hidden as above
string(REPLACE ";" "<semicolon>" hidden "${all}")
string(REGEX MATCHALL "[^\n]*: error: [^\n]*" errors "${hidden}")
foreach(line ${expected})
  string(REGEX REPLACE "^// expected-error: " "" msg "${line}")
  string(STRIP "${msg}" msg)
  set(found FALSE)
  foreach(err ${errors})
    string(FIND "${err}" "${msg}" at)
    if(NOT at EQUAL -1)
      set(found TRUE)
    endif()
  endforeach()
  if(NOT found)
    string(REPLACE "<semicolon>" ";" msg "${msg}")
    message(FATAL_ERROR "${EXAMPLE}: no error containing '${msg}' in the output:\n${all}")
  endif()
endforeach()
