// Device selection, start-up and reporting (interplace/kernels/cuda.hpp).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>
#include <exception>
#include <mutex>

#include "cuda_allocator.hpp"
#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "interplace/kernels/cuda.hpp"

namespace interplace::kernels {

namespace {

struct StartUp {
  std::once_flag once;
  bool ok = false;
  std::string reason = "init_cuda_backend() has not been called";
  cuda::CudaBackend* backend = nullptr;  // never destroyed: tensors may outlive statics
};

StartUp& start_up() {
  static StartUp state;
  return state;
}

// The number of devices, or a runtime error saying why there are none.
int require_devices(const char* who) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw_runtime(std::string(who) + ": no CUDA device (cudaGetDeviceCount: " +
                  cudaGetErrorName(status) + ", " + cudaGetErrorString(status) + ")");
  }
  if (count == 0) throw_runtime(std::string(who) + ": no CUDA device (the driver reports none)");
  return count;
}

// Host<->device and device<->device copies, ordered after the work queued on the
// backend's stream (so a read-back sees finished results) and complete on return.
void copy_on_stream(void* dst, Device /*dst_device*/, const void* src, Device /*src_device*/,
                    int64_t bytes) {
  const cudaStream_t stream = cuda::cuda_backend().stream();
  INTERPLACE_CUDA_CHECK(
      cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault, stream));
  INTERPLACE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

std::string version(int64_t encoded, int64_t major_unit, int64_t minor_unit) {
  return std::to_string(encoded / major_unit) + "." +
         std::to_string(encoded % major_unit / minor_unit);
}

}  // namespace

namespace cuda {

CudaBackend& cuda_backend() {
  StartUp& state = start_up();
  if (!state.ok) throw_runtime("the CUDA backend is not running: " + state.reason);
  return *state.backend;
}

}  // namespace cuda

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

int select_cuda_device(int node_local_rank) {
  if (node_local_rank < 0) {
    throw_invalid("select_cuda_device: node-local rank must be >= 0, got " +
                  std::to_string(node_local_rank));
  }
  const int device = node_local_rank % require_devices("select_cuda_device");
  const StartUp& state = start_up();
  if (state.ok && state.backend->device_index() != device) {
    throw_runtime("select_cuda_device(" + std::to_string(node_local_rank) +
                  "): the CUDA backend already runs on device " +
                  std::to_string(state.backend->device_index()) + ", not " +
                  std::to_string(device) + "; select the device before init_cuda_backend()");
  }
  INTERPLACE_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

bool init_cuda_backend() {
  StartUp& state = start_up();
  std::call_once(state.once, [&state] {
    try {
      require_devices("init_cuda_backend");
      int device = 0;
      INTERPLACE_CUDA_CHECK(cudaGetDevice(&device));
      set_allocator(Device::cuda, &cuda::caching_allocator());
      state.backend = new cuda::CudaBackend(device);
      register_backend(Device::cuda, state.backend);
      set_copy_function(Device::cuda, copy_on_stream);
      set_host_staging_allocator(&cuda::pinned_host_allocator());
      state.ok = true;
      state.reason.clear();
    } catch (const std::exception& e) {
      state.reason = e.what();
    }
  });
  return state.ok;
}

std::string cuda_unavailable_reason() {
  return start_up().reason;
}

CudaDeviceInfo cuda_device_info() {
  CudaDeviceInfo info;
  info.device_count = require_devices("cuda_device_info");
  INTERPLACE_CUDA_CHECK(cudaGetDevice(&info.device));
  cudaDeviceProp prop{};
  INTERPLACE_CUDA_CHECK(cudaGetDeviceProperties(&prop, info.device));
  info.name = prop.name;
  info.total_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  info.compute_capability_major = prop.major;
  info.compute_capability_minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  char bus_id[32] = {};
  INTERPLACE_CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, info.device));
  info.pci_bus_id = bus_id;
  INTERPLACE_CUDA_CHECK(cudaDriverGetVersion(&info.driver_version));
  INTERPLACE_CUDA_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
  info.cudnn_version = static_cast<int64_t>(cudnnGetVersion());
  int major = 0, minor = 0, patch = 0;
  INTERPLACE_CUBLAS_CHECK(cublasGetProperty(MAJOR_VERSION, &major));
  INTERPLACE_CUBLAS_CHECK(cublasGetProperty(MINOR_VERSION, &minor));
  INTERPLACE_CUBLAS_CHECK(cublasGetProperty(PATCH_LEVEL, &patch));
  info.cublas_version = major * 10000 + minor * 100 + patch;
  return info;
}

std::string to_string(const CudaDeviceInfo& info) {
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB",
                static_cast<double>(info.total_memory_bytes) / (1024.0 * 1024.0 * 1024.0));
  return info.name + " (cuda:" + std::to_string(info.device) + " of " +
         std::to_string(info.device_count) + ", " + info.pci_bus_id + ", sm_" +
         std::to_string(info.compute_capability_major) +
         std::to_string(info.compute_capability_minor) + ", " +
         std::to_string(info.multiprocessors) + " SMs, " + memory + ", driver CUDA " +
         version(info.driver_version, 1000, 10) + ", runtime CUDA " +
         version(info.runtime_version, 1000, 10) + ", cuDNN " +
         version(info.cudnn_version, 10000, 100) + "." + std::to_string(info.cudnn_version % 100) +
         ", cuBLAS " + version(info.cublas_version, 10000, 100) + "." +
         std::to_string(info.cublas_version % 100) + ")";
}

void set_tf32(bool enabled) {
  cuda::cuda_backend().set_tf32(enabled);
}

bool tf32_enabled() {
  return cuda::cuda_backend().tf32();
}

CudaMemoryStats cuda_memory_stats() {
  return cuda::caching_allocator().stats();
}

void reset_cuda_peak_memory() {
  cuda::caching_allocator().reset_peak();
}

void release_cuda_cached_memory() {
  if (!start_up().ok) return;  // nothing was ever allocated
  cuda::caching_allocator().release_cached();
}

}  // namespace interplace::kernels
