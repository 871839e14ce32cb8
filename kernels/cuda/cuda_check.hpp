// Status checks for the CUDA runtime, cuBLAS and cuDNN: a failed call becomes a runtime
// Error naming the call and the library's own description of the status.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

#include "interplace/kernels/error.hpp"

namespace interplace::kernels::cuda {

inline void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw_runtime(std::string("CUDA: ") + call + " failed: " + cudaGetErrorName(status) + " (" +
                  cudaGetErrorString(status) + ")");
  }
}

inline void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw_runtime(std::string("cuBLAS: ") + call + " failed: " + cublasGetStatusName(status) +
                  " (" + cublasGetStatusString(status) + ")");
  }
}

inline void check_cudnn(cudnnStatus_t status, const char* call) {
  if (status != CUDNN_STATUS_SUCCESS) {
    throw_runtime(std::string("cuDNN: ") + call + " failed: " + cudnnGetErrorString(status));
  }
}

// After a kernel launch: launch-configuration errors show up here, faults in the kernel
// itself at the next synchronising call.
inline void check_launch(const char* kernel) {
  check_cuda(cudaGetLastError(), kernel);
}

}  // namespace interplace::kernels::cuda

// The call's text goes into the message.
#define INTERPLACE_CUDA_CHECK(call) ::interplace::kernels::cuda::check_cuda((call), #call)
#define INTERPLACE_CUBLAS_CHECK(call) ::interplace::kernels::cuda::check_cublas((call), #call)
#define INTERPLACE_CUDNN_CHECK(call) ::interplace::kernels::cuda::check_cudnn((call), #call)
