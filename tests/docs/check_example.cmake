# check_example.cmake — runs `tilec check` on one documentation example.
# An example without `// expected-error: MESSAGE` lines must pass cleanly (exit 0, no
# diagnostics at all). An example with them must exit 1, and each MESSAGE must appear in an
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
foreach(line ${expected})
  string(REGEX REPLACE "^// expected-error: " "" msg "${line}")
  string(REPLACE "<semicolon>" ";" msg "${msg}")
  string(STRIP "${msg}" msg)
  # ": error: " matches the diagnostic itself, not the echoed source line with this comment
  string(FIND "${all}" ": error: ${msg}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${EXAMPLE}: no error '${msg}' in the output:\n${all}")
  endif()
endforeach()
