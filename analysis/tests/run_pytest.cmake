# Runs the analysis tests for CTest (tests/CMakeLists.txt): cmake -DPYTHON=... -DTESTS=dir
# -P run_pytest.cmake. Fails with a clear message when the venv is missing, instead of
# CTest's bare "could not find executable".
if(NOT EXISTS "${PYTHON}")
  message(FATAL_ERROR "analysis tests: no Python at ${PYTHON}; run scripts/install-deps "
                      "(it creates .venv with analysis/requirements.txt)")
endif()
execute_process(COMMAND "${PYTHON}" -c
                "import numpy, h5py, pandas, matplotlib, pytest, xarray, h5netcdf, pyarrow"
                RESULT_VARIABLE missing OUTPUT_QUIET ERROR_QUIET)
if(NOT missing EQUAL 0)
  message(FATAL_ERROR "analysis tests: ${PYTHON} lacks numpy, h5py, pandas, matplotlib, "
                      "pytest, xarray, h5netcdf or pyarrow; run scripts/install-deps")
endif()
execute_process(COMMAND "${PYTHON}" -m pytest -q -rs -p no:cacheprovider "${TESTS}"
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "analysis tests: pytest ${TESTS} failed (exit ${status})")
endif()
