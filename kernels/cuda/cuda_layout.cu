// Kernels that move or gather data: axis swaps, channel slices, row biases, embedding
// lookups and their gradient, and index validation. One thread per output element, so
// every kernel but the token-gradient scatter writes each element exactly once.
#include "cuda_kernels.hpp"
#include "cuda_launch.cuh"

namespace interplace::kernels::cuda {

namespace {

__global__ void swap_axes_12_kernel(const float* x, float* y, int64_t b_n, int64_t c_n, int64_t d_n,
                                    int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    // i indexes y [A, C, B, D].
    const int64_t d = i % d_n;
    const int64_t b = (i / d_n) % b_n;
    const int64_t c = (i / (d_n * b_n)) % c_n;
    const int64_t a = i / (d_n * b_n * c_n);
    y[i] = x[((a * b_n + b) * c_n + c) * d_n + d];
  }
}

__global__ void copy_channels_kernel(float* slice, float* whole, int64_t slice_block,
                                     int64_t whole_block, int64_t offset_elements, bool to_whole,
                                     int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const int64_t o = i / slice_block, rest = i % slice_block;
    float* w = whole + o * whole_block + offset_elements + rest;
    if (to_whole) {
      *w = slice[i];
    } else {
      slice[i] = *w;
    }
  }
}

__global__ void add_row_bias_kernel(const float* bias, float* y, int64_t cols, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) y[i] += bias[i % cols];
}

__global__ void embedding_forward_kernel(const float* ids, const float* token,
                                         const float* position, float* y, int64_t time, int64_t dim,
                                         int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const int64_t r = i / dim, c = i % dim;
    const auto id = static_cast<int64_t>(ids[r]);
    y[i] = token[id * dim + c] + position[(r % time) * dim + c];
  }
}

// Repeated ids make the token scatter racy: atomics (the summation order, and so the
// last bits, vary from run to run).
__global__ void embedding_token_grad_kernel(const float* ids, const float* dy, float* dtoken,
                                            int64_t dim, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const int64_t r = i / dim, c = i % dim;
    atomicAdd(&dtoken[static_cast<int64_t>(ids[r]) * dim + c], dy[i]);
  }
}

// Every position row gets exactly one thread per column: a plain loop over the batch.
__global__ void embedding_position_grad_kernel(const float* dy, float* dposition, int64_t batch,
                                               int64_t time, int64_t dim) {
  const int64_t n = time * dim;
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    float sum = 0.0f;
    for (int64_t b = 0; b < batch; ++b) sum += dy[b * n + i];
    dposition[i] += sum;
  }
}

__global__ void find_bad_index_kernel(const float* values, int64_t n, float limit,
                                      unsigned long long* first_bad) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const float v = values[i];
    // Written so that NaN fails too, as cpu_indices.hpp.
    if (!(v >= 0.0f && v < limit && v == truncf(v))) {
      atomicMin(first_bad, static_cast<unsigned long long>(i));
    }
  }
}

__global__ void shifted_copy_kernel(const float* src, int64_t src_h, int64_t src_w, float* dst,
                                    int64_t dst_h, int64_t dst_w, int64_t shift_h, int64_t shift_w,
                                    int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    // i indexes dst [planes, dst_h, dst_w].
    const int64_t j = i % dst_w, row = (i / dst_w) % dst_h, plane = i / (dst_w * dst_h);
    const int64_t r = row - shift_h, c = j - shift_w;
    dst[i] =
        (r >= 0 && r < src_h && c >= 0 && c < src_w) ? src[(plane * src_h + r) * src_w + c] : 0.0f;
  }
}

}  // namespace

cudaError_t launch_shifted_copy(const float* src, int64_t src_h, int64_t src_w, float* dst,
                                int64_t dst_h, int64_t dst_w, int64_t planes, int64_t shift_h,
                                int64_t shift_w, cudaStream_t stream) {
  const int64_t n = planes * dst_h * dst_w;
  if (n <= 0) return cudaSuccess;
  shifted_copy_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, src_h, src_w, dst, dst_h, dst_w,
                                                              shift_h, shift_w, n);
  return cudaGetLastError();
}

cudaError_t launch_swap_axes_12(const float* x, float* y, int64_t a, int64_t b, int64_t c,
                                int64_t d, cudaStream_t stream) {
  const int64_t n = a * b * c * d;
  if (n <= 0) return cudaSuccess;
  swap_axes_12_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, b, c, d, n);
  return cudaGetLastError();
}

cudaError_t launch_copy_channels(float* slice, float* whole, int64_t outer, int64_t slice_channels,
                                 int64_t whole_channels, int64_t offset, int64_t inner,
                                 bool slice_to_whole, cudaStream_t stream) {
  const int64_t n = outer * slice_channels * inner;
  if (n <= 0) return cudaSuccess;
  copy_channels_kernel<<<blocks_for(n), kThreads, 0, stream>>>(slice, whole, slice_channels * inner,
                                                               whole_channels * inner,
                                                               offset * inner, slice_to_whole, n);
  return cudaGetLastError();
}

cudaError_t launch_add_row_bias(const float* bias, float* y, int64_t rows, int64_t cols,
                                cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n <= 0) return cudaSuccess;
  add_row_bias_kernel<<<blocks_for(n), kThreads, 0, stream>>>(bias, y, cols, n);
  return cudaGetLastError();
}

cudaError_t launch_embedding_forward(const float* ids, const float* token, const float* position,
                                     float* y, int64_t rows, int64_t time, int64_t dim,
                                     cudaStream_t stream) {
  const int64_t n = rows * dim;
  if (n <= 0) return cudaSuccess;
  embedding_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(ids, token, position, y, time,
                                                                   dim, n);
  return cudaGetLastError();
}

cudaError_t launch_embedding_backward(const float* ids, const float* dy, float* dtoken,
                                      float* dposition, int64_t batch, int64_t time, int64_t dim,
                                      cudaStream_t stream) {
  const int64_t n = batch * time * dim;
  if (n <= 0) return cudaSuccess;
  embedding_token_grad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(ids, dy, dtoken, dim, n);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  embedding_position_grad_kernel<<<blocks_for(time * dim), kThreads, 0, stream>>>(dy, dposition,
                                                                                  batch, time, dim);
  return cudaGetLastError();
}

cudaError_t launch_find_bad_index(const float* values, int64_t n, int64_t limit,
                                  unsigned long long* first_bad, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  // The limit as the CPU check compares it: converted to float.
  find_bad_index_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
      values, n, static_cast<float>(limit), first_bad);
  return cudaGetLastError();
}

}  // namespace interplace::kernels::cuda
