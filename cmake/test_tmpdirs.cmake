# A temporary folder of its own for every test (TMPDIR), made at configure time. Open MPI
# keeps its session directory under TMPDIR, in one ompi.<host>.<uid> shared by every MPI
# process of the user, which the last process of a job removes: a process of another test
# starting at that moment saw the folder exist at mkdir but gone at stat and failed MPI_Init
# ("A call to mkdir was unable to create the desired directory ... File exists"; seen under
# `ctest -j`). Within a test, its own processes still share one session folder, as any
# user's concurrent jobs do.
#
# interplace_private_tmpdirs(): call at the end of every tests/ CMakeLists.txt that adds
# tests (set_tests_properties reaches only the current directory's). The tests that
# gtest_discover_tests adds at build time are not listed here: they share their executable's
# environment, and tests/check_test_isolation.py checks that none of them can start MPI.
set(INTERPLACE_TEST_TMP ${CMAKE_BINARY_DIR}/test-tmp)
function(interplace_private_tmpdirs)
  get_property(_tests DIRECTORY PROPERTY TESTS)
  foreach(_test IN LISTS _tests)
    set(_tmp ${INTERPLACE_TEST_TMP}/${_test})
    file(MAKE_DIRECTORY ${_tmp})
    set_property(TEST ${_test} APPEND PROPERTY ENVIRONMENT "TMPDIR=${_tmp}")
  endforeach()
endfunction()
