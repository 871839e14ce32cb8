# Finds cuDNN 9 (headers and the libcudnn.so front-end library) and defines the imported
# target interplace::cudnn. Looks beside the CUDA toolkit, in the system paths and under
# CUDNN_ROOT (e.g. a pip wheel's site-packages/nvidia/cudnn, which ships no unversioned
# libcudnn.so, hence the versioned name).
set(CUDNN_ROOT "$ENV{CUDNN_ROOT}" CACHE PATH "cuDNN prefix (include/ and lib/ or lib64/)")

find_path(CUDNN_INCLUDE_DIR cudnn_version.h
  HINTS ${CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS}
  PATH_SUFFIXES include)
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
  HINTS ${CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR}
  PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)
if(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY)
  message(FATAL_ERROR "cuDNN not found (include: ${CUDNN_INCLUDE_DIR}, library: "
                      "${CUDNN_LIBRARY}); set CUDNN_ROOT, or configure with -DINTERPLACE_CUDA=OFF")
endif()

file(STRINGS ${CUDNN_INCLUDE_DIR}/cudnn_version.h _cudnn_major REGEX "define CUDNN_MAJOR ")
string(REGEX MATCH "[0-9]+" CUDNN_VERSION_MAJOR "${_cudnn_major}")
if(CUDNN_VERSION_MAJOR LESS 9)
  message(FATAL_ERROR "cuDNN ${CUDNN_VERSION_MAJOR} in ${CUDNN_INCLUDE_DIR}: interplace needs cuDNN 9")
endif()
message(STATUS "cuDNN ${CUDNN_VERSION_MAJOR}: ${CUDNN_LIBRARY}")

add_library(interplace::cudnn UNKNOWN IMPORTED)
set_target_properties(interplace::cudnn PROPERTIES
  IMPORTED_LOCATION ${CUDNN_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${CUDNN_INCLUDE_DIR})
