# Defines INTERPLACE_CUBLAS, the cuBLAS target to link: the toolkit's CUDA::cublas, else
# cuBLAS found under CUBLAS_ROOT (e.g. a pip wheel's site-packages/nvidia/cu13, which
# ships only the versioned libcublas.so.13, hence that name).
set(CUBLAS_ROOT "$ENV{CUBLAS_ROOT}" CACHE PATH "cuBLAS prefix when the CUDA toolkit has none")
if(TARGET CUDA::cublas AND NOT CUBLAS_ROOT)
  set(INTERPLACE_CUBLAS CUDA::cublas)
  return()
endif()
find_path(CUBLAS_INCLUDE_DIR cublas_v2.h HINTS ${CUBLAS_ROOT} PATH_SUFFIXES include)
find_library(CUBLAS_LIBRARY NAMES cublas libcublas.so.13 libcublas.so.12
  HINTS ${CUBLAS_ROOT} PATH_SUFFIXES lib lib64)
if(NOT CUBLAS_INCLUDE_DIR OR NOT CUBLAS_LIBRARY)
  message(FATAL_ERROR "cuBLAS not found in the CUDA toolkit nor under CUBLAS_ROOT "
                      "('${CUBLAS_ROOT}'); set CUBLAS_ROOT, or configure with -DINTERPLACE_CUDA=OFF")
endif()
message(STATUS "cuBLAS: ${CUBLAS_LIBRARY}")
add_library(interplace::cublas UNKNOWN IMPORTED)
set_target_properties(interplace::cublas PROPERTIES
  IMPORTED_LOCATION ${CUBLAS_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${CUBLAS_INCLUDE_DIR})
set(INTERPLACE_CUBLAS interplace::cublas)
