// Shared pieces of our kernels: launch shapes for grid-stride loops and block reductions.
#pragma once

#include <cuda_runtime.h>

#include <math_constants.h>

#include <cstdint>

namespace interplace::kernels::cuda {

constexpr int kThreads = 256;  // threads per block everywhere (a multiple of the warp size)

// Blocks for a grid-stride loop over n elements: enough to fill the GPU, bounded so the
// grid stays small for huge n (each thread then loops).
inline unsigned int blocks_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(blocks < 65536 ? blocks : 65536);
}

__device__ inline int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_threads() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

template <class T>
__device__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}

// Reductions over the whole block (blockDim.x a multiple of 32, at most 1024), returning
// the result to every thread. `shared` holds 33 values; consecutive calls may reuse it.
template <class T>
__device__ T block_sum(T v, T* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  __syncthreads();  // the previous call's readers are done with `shared`
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T partial = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : T(0);
    partial = warp_sum(partial);
    if (lane == 0) shared[32] = partial;
  }
  __syncthreads();
  return shared[32];
}

__device__ inline float block_max(float v, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float partial = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : -CUDART_INF_F;
    partial = warp_max(partial);
    if (lane == 0) shared[32] = partial;
  }
  __syncthreads();
  return shared[32];
}

}  // namespace interplace::kernels::cuda
