#include "cuda_allocator.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>

#include "cuda_check.hpp"

namespace interplace::kernels::cuda {

int64_t CachingAllocator::size_class(int64_t bytes) {
  constexpr int64_t kSmallest = 512;
  if (bytes <= kSmallest) return kSmallest;
  const auto n = static_cast<uint64_t>(bytes);
  const uint64_t power = std::bit_floor(n);
  if (n == power) return bytes;
  const uint64_t step = power / 4;
  return static_cast<int64_t>((n + step - 1) / step * step);
}

void* CachingAllocator::raw_malloc(int64_t bytes) {
  const auto size = static_cast<size_t>(bytes);
  const auto try_malloc = [&](void** ptr) {
    return memory_ == Memory::device ? cudaMalloc(ptr, size) : cudaMallocHost(ptr, size);
  };
  void* ptr = nullptr;
  cudaError_t status = try_malloc(&ptr);
  if (status == cudaErrorMemoryAllocation) {
    // Out of memory: give the cached blocks back and try once more.
    cudaGetLastError();  // clear the error so later checks do not see it
    free_cached_locked();
    status = try_malloc(&ptr);
  }
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw_runtime(std::string("CUDA: out of ") +
                  (memory_ == Memory::device ? "device" : "pinned host") + " memory allocating " +
                  std::to_string(bytes) + " bytes (" + std::to_string(stats_.allocated_bytes) +
                  " bytes held by tensors): " + cudaGetErrorString(status));
  }
  ++stats_.device_allocations;
  stats_.reserved_bytes += bytes;
  return ptr;
}

void* CachingAllocator::allocate(int64_t bytes) {
  const int64_t size = size_class(bytes);
  std::lock_guard lock(mutex_);
  void* ptr = nullptr;
  auto& blocks = free_blocks_[size];
  if (!blocks.empty()) {
    ptr = blocks.back();
    blocks.pop_back();
  } else {
    ptr = raw_malloc(size);
  }
  stats_.allocated_bytes += size;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return ptr;
}

void CachingAllocator::deallocate(void* ptr, int64_t bytes) {
  const int64_t size = size_class(bytes);
  std::lock_guard lock(mutex_);
  free_blocks_[size].push_back(ptr);
  stats_.allocated_bytes -= size;
}

void CachingAllocator::release_cached() {
  std::lock_guard lock(mutex_);
  free_cached_locked();
}

void CachingAllocator::free_cached_locked() {
  // Queued kernels may still read cached blocks; let them finish first.
  INTERPLACE_CUDA_CHECK(cudaDeviceSynchronize());
  for (auto& [size, blocks] : free_blocks_) {
    for (void* block : blocks) {
      raw_free(block);
      stats_.reserved_bytes -= size;
    }
    blocks.clear();
  }
}

void CachingAllocator::raw_free(void* ptr) {
  if (memory_ == Memory::device) {
    INTERPLACE_CUDA_CHECK(cudaFree(ptr));
  } else {
    INTERPLACE_CUDA_CHECK(cudaFreeHost(ptr));
  }
}

CudaMemoryStats CachingAllocator::stats() {
  std::lock_guard lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
}

CachingAllocator& caching_allocator() {
  static auto* allocator = new CachingAllocator(CachingAllocator::Memory::device);
  return *allocator;
}

CachingAllocator& pinned_host_allocator() {
  static auto* allocator = new CachingAllocator(CachingAllocator::Memory::pinned_host);
  return *allocator;
}

}  // namespace interplace::kernels::cuda
