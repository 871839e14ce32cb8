// The caching device allocator installed for Device::cuda. Freed blocks go to per-size-
// class free lists and are handed out again without cudaMalloc/cudaFree, which would
// synchronise the device on every tensor. Reuse is safe because all work runs in order on
// the backend's one stream: a block freed while kernels still read it is only written by
// work queued after them. (Work on other streams must not use tensors of this allocator
// without synchronising first.) The same cache serves pinned host memory, the staging
// buffers of MPI messages (host_staging_allocator in tensor.hpp).
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "interplace/kernels/cuda.hpp"
#include "interplace/kernels/tensor.hpp"

namespace interplace::kernels::cuda {

class CachingAllocator final : public Allocator {
 public:
  enum class Memory { device, pinned_host };
  explicit CachingAllocator(Memory memory) : memory_(memory) {}

  void* allocate(int64_t bytes) override;
  void deallocate(void* ptr, int64_t bytes) override;

  // cudaFree for every cached block, after the device finished its work.
  void release_cached();
  CudaMemoryStats stats();
  void reset_peak();

  // The block size serving a request: at least 512 bytes, and above that the next of
  // 2^k * {1, 1.25, 1.5, 1.75}, so at most a quarter is wasted.
  static int64_t size_class(int64_t bytes);

 private:
  void* raw_malloc(int64_t bytes);
  void raw_free(void* ptr);
  void free_cached_locked();  // with mutex_ held

  const Memory memory_;
  std::mutex mutex_;
  std::unordered_map<int64_t, std::vector<void*>> free_blocks_;  // by size class
  CudaMemoryStats stats_;
};

// The process's allocators (created on first use, never destroyed: tensors may outlive
// static destruction order).
CachingAllocator& caching_allocator();
CachingAllocator& pinned_host_allocator();

}  // namespace interplace::kernels::cuda
