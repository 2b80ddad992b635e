# mma_h200_detects.cmake — test_numerics_mma_h200 is not vacuous: on a recording of two outputs
# (e4m3 and e5m2, both from the H200 run of 2026-12-02), one of them with its GPU value changed
# by one ulp, and a line that is not an output, it must fail and say which line and why.
# Run as: cmake -DTEST=path/to/test_numerics_mma_h200 -DTMP=dir -P mma_h200_detects.cmake
set(f ${TMP}/mma_h200_detects.txt)
file(WRITE ${f} "# two recorded outputs, the first one altered (the H200 gave 451d0df6)
e4m3 normal 51,c6,f7,af,4f,90,96,1a,8,5,0,a3,96,bc,1f,80,80,68,35,de,db,1d,e,a5,39,0,22,4a,af,6f,1,2 | 0,96,d4,0,8e,20,3f,60,bc,46,2,2,8c,c6,3f,c7,ab,82,10,83,52,4,b0,e1,92,2a,3f,46,14,bc,13,c0 3d59a9ec 451d0df7
e5m2 normal f,e1,db,60,54,4,2,c1,30,43,c1,96,1,4f,1a,4,c2,67,b1,d7,ae,1,42,45,2,80,e8,df,6a,2c,ed,1 | 1,ae,81,25,81,45,2e,6c,cd,bd,4b,37,5e,8d,bd,1b,e4,29,bc,25,ba,20,a2,e2,e0,be,e7,d2,17,a6,c4,0 40efb88d 4a61e5b3
e4m3 normal 51,c6 | 0 3d59a9ec 451d0df6
")
execute_process(COMMAND ${TEST} ${f} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "test_numerics_mma_h200 passed on a falsified recording:\n${all}")
endif()
foreach(want "2 checked, 1 mismatches"
        "line 2 (e4m3 normal, c 3d59a9ec): the model gives 451d0df6, the H200 451d0df7"
        "line 4: not a recorded output"
        "the recording has no e4m3 wide outputs")
  string(FIND "${all}" "${want}" at)
  if(at LESS 0)
    message(FATAL_ERROR "test_numerics_mma_h200 does not say \"${want}\":\n${all}")
  endif()
endforeach()
string(FIND "${all}" "line 3 (" at)
if(at GREATER_EQUAL 0)
  message(FATAL_ERROR "test_numerics_mma_h200 reports the unchanged line 3:\n${all}")
endif()
