# host_examples.cmake — every kernel of docs/examples that compiles for the GPU also compiles for
# the host target (the emulator's lowering knows every intrinsic codegen emits, gemm's ldmatrix
# and mma.sync included).
# Run as: cmake -DTILEC=path/to/tilec -DEXAMPLES=dir -DTMP=dir -P host_examples.cmake
file(GLOB files ${EXAMPLES}/*.tl)
set(count 0)
foreach(f ${files})
  execute_process(COMMAND ${TILEC} list ${f} OUTPUT_VARIABLE listing RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0)
    continue()
  endif()
  string(REGEX MATCHALL "kernel [A-Za-z_0-9]+" kernels "${listing}")
  foreach(k ${kernels})
    string(REPLACE "kernel " "" k "${k}")
    execute_process(COMMAND ${TILEC} emit --stage=ptx -k ${k} ${f} -o ${TMP}/host_example.ptx
                    RESULT_VARIABLE gpu OUTPUT_QUIET ERROR_QUIET)
    if(NOT gpu EQUAL 0)
      continue() # e.g. generics without defaults
    endif()
    execute_process(COMMAND ${TILEC} emit --target=host --stage=obj -k ${k} ${f} -o ${TMP}/host_example.o
                    RESULT_VARIABLE host ERROR_VARIABLE msg)
    if(NOT host EQUAL 0)
      message(FATAL_ERROR "${f}: kernel ${k} compiles for the GPU but not for the host:\n${msg}")
    endif()
    math(EXPR count "${count} + 1")
  endforeach()
endforeach()
if(count LESS 10)
  message(FATAL_ERROR "only ${count} example kernels compiled; expected the docs examples")
endif()
message(STATUS "${count} example kernels compile for the host")
