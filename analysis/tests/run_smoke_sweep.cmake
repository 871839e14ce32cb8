# CTest fixture (tests/CMakeLists.txt): writes FILE afresh with the SWEEP command line
# (mpirun ... interplace sweep SPEC), so the analysis tests read what the C++ writer wrote.
file(REMOVE "${FILE}" "${FILE}.tmp")
get_filename_component(dir "${FILE}" DIRECTORY)
file(MAKE_DIRECTORY "${dir}")
execute_process(COMMAND ${SWEEP} --out "${FILE}" RESULT_VARIABLE status)
if(NOT status EQUAL 0 OR NOT EXISTS "${FILE}")
  message(FATAL_ERROR "smoke sweep failed (exit ${status}): no ${FILE}")
endif()
