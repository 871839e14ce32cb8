// The CUDA backend's public side: device selection, start-up and reporting. Available when
// the kernel library was built with INTERPLACE_CUDA (it then defines INTERPLACE_HAVE_CUDA).
//
// One backend per process, on one device: pick the device with select_cuda_device (by
// node-local rank, as every rank of a node sees all its GPUs), then init_cuda_backend
// registers the backend, a caching device allocator and the host<->device copy function
// for Device::cuda. Everything runs in order on one CUDA stream; calls return before
// the GPU is done unless they hand a value back to the host (losses, norms, copies).
#pragma once

#include <cstdint>
#include <string>

namespace interplace::kernels {

// GPUs visible to this process; 0 (not an error) without a driver or device.
int cuda_device_count();

// Makes device node_local_rank % cuda_device_count() current and returns its index.
// Throws a runtime error when there is no GPU, or when the backend was already started
// on another device.
int select_cuda_device(int node_local_rank);

// Registers the CUDA backend on the current device (once; later calls return the first
// result). Returns false without a usable GPU; cuda_unavailable_reason() then says why.
bool init_cuda_backend();
std::string cuda_unavailable_reason();

// What result files record about the device and the libraries. Versions as the libraries
// encode them: CUDA 12040 = 12.4, cuDNN 91900 = 9.19.0, cuBLAS 130100 = 13.1.0.
struct CudaDeviceInfo {
  int device = -1;
  int device_count = 0;
  std::string name;
  std::string pci_bus_id;
  int64_t total_memory_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessors = 0;
  int driver_version = 0;   // the newest CUDA version the driver supports
  int runtime_version = 0;  // the CUDA runtime linked in
  int64_t cudnn_version = 0;
  int cublas_version = 0;
};
// Of the current device; throws a runtime error without a GPU.
CudaDeviceInfo cuda_device_info();
// One line for logs, e.g. "NVIDIA H200 (sm_90, 139.8 GiB, CUDA 12.8/13.0, cuDNN 9.19.0, ...)".
std::string to_string(const CudaDeviceInfo& info);

// TF32 tensor-core math for matrix products and convolutions: off by default (results
// then match the CPU backend to fp32 rounding), on for speed. Needs init_cuda_backend.
void set_tf32(bool enabled);
bool tf32_enabled();

// The caching allocator's counters, in bytes: held by tensors now and at most so far,
// and obtained from the driver (held plus cached for reuse).
struct CudaMemoryStats {
  int64_t allocated_bytes = 0;
  int64_t peak_allocated_bytes = 0;
  int64_t reserved_bytes = 0;
  int64_t device_allocations = 0;  // cudaMalloc calls so far
};
CudaMemoryStats cuda_memory_stats();
void reset_cuda_peak_memory();
// Returns cached, unused blocks to the driver (after waiting for queued work).
void release_cuda_cached_memory();

}  // namespace interplace::kernels
