// The CUDA backend's core: handles, stream, scratch memory, read-backs and index checks.
#include "cuda_backend.hpp"

#include <climits>
#include <sstream>

#include "cuda_check.hpp"
#include "cuda_kernels.hpp"

namespace interplace::kernels::cuda {

CudaBackend::CudaBackend(int device) : device_(device) {
  INTERPLACE_CUDA_CHECK(cudaSetDevice(device));
  // Non-blocking: no implicit ordering with the legacy default stream, which nothing of
  // ours uses (copies, memsets and library calls all go to stream_).
  INTERPLACE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  INTERPLACE_CUBLAS_CHECK(cublasCreate(&cublas_));
  INTERPLACE_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
  INTERPLACE_CUDNN_CHECK(cudnnCreate(&cudnn_));
  INTERPLACE_CUDNN_CHECK(cudnnSetStream(cudnn_, stream_));
  set_tf32(false);
}

CudaBackend::~CudaBackend() {
  // Best effort: errors while tearing down cannot be reported anywhere useful.
  conv_plans_.clear();
  workspace_ = Tensor();
  if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

std::string CudaBackend::name() const {
  cudaDeviceProp prop{};
  INTERPLACE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  std::ostringstream out;
  out << "cuda:" << device_ << " (" << prop.name << ", cuDNN " << cudnnGetVersion()
      << (tf32_ ? ", TF32" : ", FP32") << ")";
  return out.str();
}

void CudaBackend::synchronize() {
  INTERPLACE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::set_tf32(bool enabled) {
  // cuBLAS uses TF32 for fp32 GEMMs only when asked; convolution plans carry the choice
  // in their key (cuDNN's FMA math excludes tensor cores, default math allows TF32).
  INTERPLACE_CUBLAS_CHECK(
      cublasSetMathMode(cublas_, enabled ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  tf32_ = enabled;
}

void* CudaBackend::workspace(size_t bytes) {
  const auto floats = static_cast<int64_t>((bytes + sizeof(float) - 1) / sizeof(float));
  if (!workspace_.defined() || workspace_.numel() < floats) {
    workspace_ = Tensor({floats}, Device::cuda);
  }
  return workspace_.data();
}

void CudaBackend::read_back(void* host, const void* device_ptr, size_t bytes) {
  INTERPLACE_CUDA_CHECK(cudaMemcpyAsync(host, device_ptr, bytes, cudaMemcpyDeviceToHost, stream_));
  INTERPLACE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::check_indices(const Tensor& indices, int64_t limit, const std::string& what,
                                const std::string& limit_name) {
  if (indices.numel() == 0) return;
  // Two floats hold the 8-byte index (allocations are 256-byte aligned).
  Tensor first_bad_storage({2}, Device::cuda);
  auto* first_bad = reinterpret_cast<unsigned long long*>(first_bad_storage.data());
  INTERPLACE_CUDA_CHECK(cudaMemsetAsync(first_bad, 0xFF, sizeof *first_bad, stream_));
  check_cuda(launch_find_bad_index(indices.data(), indices.numel(), limit, first_bad, stream_),
             "find_bad_index kernel");
  unsigned long long index = 0;
  read_back(&index, first_bad, sizeof index);
  if (index == ULLONG_MAX) return;
  float value = 0.0f;
  read_back(&value, indices.data() + index, sizeof value);
  std::ostringstream message;  // worded as cpu_indices.hpp
  message << what << " " << value << " at index " << index << " is not an integer in [0, " << limit
          << ") (" << limit_name << ")";
  throw_invalid(message.str());
}

}  // namespace interplace::kernels::cuda
