# recorded_detects.cmake — test_emu_recorded is not vacuous: on a copy of a recording whose GPU
# output was replaced by the emulator's old answer (subnormals flushed in a shared-memory atomic
# add), with a case the test has no entry for and a truncated input, it must fail and say why.
# Run as: cmake -DTEST=path/to/test_emu_recorded -DDIR=recording -DTMP=dir -P recorded_detects.cmake
set(d ${TMP}/recorded_detects)
file(REMOVE_RECURSE ${d})
file(MAKE_DIRECTORY ${d})
file(GLOB files ${DIR}/probe_atomic.*)
file(COPY ${files} DESTINATION ${d})
file(COPY_FILE ${DIR}/probe_atomic.gpu.1.bin ${d}/probe_atomic.gpu.2.bin) # global: flushed
file(COPY_FILE ${DIR}/probe_atomic.txt ${d}/not_in_the_table.txt)
file(COPY_FILE ${DIR}/probe_cvt.txt ${d}/probe_cvt.txt)
file(WRITE ${d}/probe_cvt.in.0.bin "short")
execute_process(COMMAND ${TEST} ${d} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "test_emu_recorded passed on a falsified recording:\n${all}")
endif()
foreach(want "probe_atomic (O3) argument 2: probe_atomic (atomic_add with subnormals, global and shared) differs from the GPU's bytes"
        "probe_atomic (O3) argument 2: element 0 differs: got 0x00000001, want 0x00000000"
        "not_in_the_table.txt: a recorded case that test_emu_recorded.c has no entry for"
        "probe_cvt.in.0.bin holds 5 bytes; argument 0 is 104 bytes of f32")
  string(FIND "${all}" "${want}" at)
  if(at LESS 0)
    message(FATAL_ERROR "test_emu_recorded does not say \"${want}\":\n${all}")
  endif()
endforeach()
string(FIND "${all}" "probe_atomic (O3) argument 1" at)
if(at GREATER_EQUAL 0)
  message(FATAL_ERROR "test_emu_recorded reports the unchanged output 1 of probe_atomic:\n${all}")
endif()
