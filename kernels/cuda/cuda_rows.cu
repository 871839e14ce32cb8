// Row-wise kernels (one block per row: layer norm, softmax, cross-entropy) and column sums
// over rows (bias and layer-norm parameter gradients). Column sums run in two passes,
// partial sums per chunk of rows then a sum over chunks, in a fixed order: no atomics, so
// results are deterministic. Statistics are two-pass (mean, then centred squares), as on
// the CPU.
#include "cuda_kernels.hpp"
#include "cuda_launch.cuh"

namespace interplace::kernels::cuda {

namespace {

// Rows per partial column sum: 64, or more so that the chunks (the grid's y extent, at
// most 65535) stay at most 4096.
int64_t chunk_rows(int64_t rows) {
  const int64_t spread = (rows + 4095) / 4096;
  return spread > 64 ? spread : 64;
}

int64_t chunks_of(int64_t rows) {
  return (rows + chunk_rows(rows) - 1) / chunk_rows(rows);
}

dim3 column_grid(int64_t rows, int64_t cols) {
  return dim3(static_cast<unsigned int>((cols + kThreads - 1) / kThreads),
              static_cast<unsigned int>(chunks_of(rows)));
}

// partial[chunk, c] = sum over the chunk's rows of x[r, c].
__global__ void column_partial_kernel(const float* x, float* partial, int64_t rows, int64_t cols,
                                      int64_t chunk) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * chunk;
  const int64_t r1 = min(rows, r0 + chunk);
  float sum = 0.0f;
  for (int64_t r = r0; r < r1; ++r) sum += x[r * cols + c];
  partial[blockIdx.y * cols + c] = sum;
}

// y[c] (+)= sum over chunks of partial[chunk, c].
__global__ void column_finish_kernel(const float* partial, float* y, int64_t chunks, int64_t cols,
                                     bool accumulate) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  double sum = accumulate ? y[c] : 0.0;
  for (int64_t k = 0; k < chunks; ++k) sum += partial[k * cols + c];
  y[c] = static_cast<float>(sum);
}

__global__ void squared_norm_partial_kernel(const float* x, int64_t n, double* partial) {
  __shared__ double shared[33];
  double sum = 0.0;
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    sum += static_cast<double>(x[i]) * x[i];
  }
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

__global__ void squared_norm_finish_kernel(const double* partial, int64_t blocks, double* result) {
  __shared__ double shared[33];
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < blocks; i += blockDim.x) sum += partial[i];
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) *result = sum;
}

__device__ float inverse_std(float variance, float epsilon) {
  return static_cast<float>(1.0 / sqrt(static_cast<double>(variance) + epsilon));
}

__global__ void layer_norm_forward_kernel(const float* x, const float* gamma, const float* beta,
                                          float* y, float* mean, float* variance, int64_t features,
                                          float epsilon) {
  __shared__ double shared[33];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * features;
  // Statistics in double, as the CPU backend: the same mean to the last bit in most rows.
  double sum = 0.0;
  for (int64_t c = threadIdx.x; c < features; c += blockDim.x) sum += xr[c];
  const double mu = block_sum(sum, shared) / static_cast<double>(features);
  double squares = 0.0;
  for (int64_t c = threadIdx.x; c < features; c += blockDim.x) {
    const double d = xr[c] - mu;
    squares += d * d;
  }
  const auto var = static_cast<float>(block_sum(squares, shared) / static_cast<double>(features));
  const auto m = static_cast<float>(mu);
  if (threadIdx.x == 0) {
    mean[row] = m;
    variance[row] = var;
  }
  const float rstd = inverse_std(var, epsilon);
  float* yr = y + row * features;
  for (int64_t c = threadIdx.x; c < features; c += blockDim.x) {
    yr[c] = (xr[c] - m) * rstd * gamma[c] + beta[c];
  }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma.
__global__ void layer_norm_backward_kernel(const float* x, const float* dy, const float* gamma,
                                           const float* mean, const float* variance, float* dx,
                                           int64_t features, float epsilon) {
  __shared__ double shared[33];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * features;
  const float* dyr = dy + row * features;
  const float m = mean[row];
  const float s = inverse_std(variance[row], epsilon);
  double sum_g = 0.0, sum_gx = 0.0;
  for (int64_t c = threadIdx.x; c < features; c += blockDim.x) {
    const float g = dyr[c] * gamma[c];
    sum_g += g;
    sum_gx += g * ((xr[c] - m) * s);
  }
  const double inv_features = 1.0 / static_cast<double>(features);
  const auto mean_g = static_cast<float>(block_sum(sum_g, shared) * inv_features);
  const auto mean_gx = static_cast<float>(block_sum(sum_gx, shared) * inv_features);
  float* dxr = dx + row * features;
  for (int64_t c = threadIdx.x; c < features; c += blockDim.x) {
    dxr[c] = s * (dyr[c] * gamma[c] - mean_g - (xr[c] - m) * s * mean_gx);
  }
}

// Partial sums per chunk of rows of dy * xhat (into partial_g) and dy (into partial_b).
__global__ void layer_norm_parameter_partial_kernel(const float* x, const float* dy,
                                                    const float* mean, const float* variance,
                                                    float* partial_g, float* partial_b,
                                                    int64_t rows, int64_t features, int64_t chunk,
                                                    float epsilon) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= features) return;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * chunk;
  const int64_t r1 = min(rows, r0 + chunk);
  float sum_g = 0.0f, sum_b = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    const float g = dy[r * features + c];
    sum_g += g * ((x[r * features + c] - mean[r]) * inverse_std(variance[r], epsilon));
    sum_b += g;
  }
  partial_g[blockIdx.y * features + c] = sum_g;
  partial_b[blockIdx.y * features + c] = sum_b;
}

__global__ void softmax_forward_kernel(const float* x, float* y, int64_t cols, bool causal) {
  __shared__ float shared[33];
  const int64_t row = blockIdx.x;
  // Row i of each cols x cols block attends to columns 0..i.
  const int64_t valid = causal ? row % cols + 1 : cols;
  const float* xr = x + row * cols;
  float* yr = y + row * cols;
  float max = -CUDART_INF_F;
  for (int64_t c = threadIdx.x; c < valid; c += blockDim.x) max = fmaxf(max, xr[c]);
  max = block_max(max, shared);
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < valid; c += blockDim.x) {
    const float e = expf(xr[c] - max);
    yr[c] = e;
    sum += e;
  }
  const float inv = 1.0f / block_sum(sum, shared);
  // Each thread rescales the entries it wrote itself, so no barrier is needed between.
  for (int64_t c = threadIdx.x; c < valid; c += blockDim.x) yr[c] *= inv;
  for (int64_t c = valid + threadIdx.x; c < cols; c += blockDim.x) yr[c] = 0.0f;
}

// dx = y * (dy - sum(y * dy)); masked entries have y = 0 and so get dx = 0.
__global__ void softmax_backward_kernel(const float* y, const float* dy, float* dx, int64_t cols) {
  __shared__ float shared[33];
  const int64_t row = blockIdx.x;
  const float* yr = y + row * cols;
  const float* dyr = dy + row * cols;
  float dot = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) dot += yr[c] * dyr[c];
  dot = block_sum(dot, shared);
  float* dxr = dx + row * cols;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) dxr[c] = yr[c] * (dyr[c] - dot);
}

// Softmax statistics of part of a row: its maximum, the first column holding it, and the
// sum of exp(z - max) over the part. Two parts merge in any order to those of their union.
struct RowStats {
  float max;
  long long first;
  float sum;
};

__device__ inline float scaled(float sum, float from, float to) {
  return from == -CUDART_INF_F ? 0.0f : sum * expf(from - to);
}

__device__ inline RowStats merge(RowStats a, RowStats b) {
  const float max = fmaxf(a.max, b.max);
  const long long first =
      a.max == b.max ? min(a.first, b.first) : (a.max > b.max ? a.first : b.first);
  return {max, first, scaled(a.sum, a.max, max) + scaled(b.sum, b.max, max)};
}

// Adds column c with value z; columns come in increasing order per thread, so on a tie the
// earlier column stays first.
__device__ inline void add_column(RowStats& s, float z, long long c) {
  if (z > s.max) {
    s.sum = scaled(s.sum, s.max, z) + 1.0f;
    s.max = z;
    s.first = c;
  } else {
    s.sum += scaled(1.0f, z, s.max);
  }
}

__device__ RowStats warp_merge(RowStats s) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const RowStats other{__shfl_xor_sync(0xffffffffu, s.max, offset),
                         __shfl_xor_sync(0xffffffffu, s.first, offset),
                         __shfl_xor_sync(0xffffffffu, s.sum, offset)};
    s = merge(s, other);
  }
  return s;
}

// The statistics of the whole row, returned to every thread.
__device__ RowStats block_merge(RowStats s, RowStats* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  s = warp_merge(s);
  if (lane == 0) shared[warp] = s;
  __syncthreads();
  if (warp == 0) {
    RowStats part = lane < static_cast<int>(blockDim.x / 32)
                        ? shared[lane]
                        : RowStats{-CUDART_INF_F, 0x7fffffffffffffffLL, 0.0f};
    part = warp_merge(part);
    if (lane == 0) shared[32] = part;
  }
  __syncthreads();
  return shared[32];
}

constexpr int kLossThreads = 512;  // one block per row; wide rows (vocabularies) need many

// Per row: probabilities, loss = log(sum exp(z - max)) - (z[label] - max) (finite even
// when the label's probability underflows), and whether the first arg-max is the label.
// One pass gathers the statistics online (the running sum rescaled when the maximum
// grows), a second writes the probabilities: the logits are read twice, not four times.
__global__ void __launch_bounds__(kLossThreads)
    cross_entropy_rows_kernel(const float* logits, const float* labels, float* probs,
                              int64_t classes, double* row_loss, int* row_correct) {
  __shared__ RowStats shared[33];
  const int64_t row = blockIdx.x;
  const float* zr = logits + row * classes;
  float* pr = probs + row * classes;
  const int64_t stride = blockDim.x;
  RowStats s{-CUDART_INF_F, 0x7fffffffffffffffLL, 0.0f};
  int64_t c = threadIdx.x;
  // Four independent loads in flight per thread: the loop is bound by memory latency.
  for (; c + 3 * stride < classes; c += 4 * stride) {
    const float z0 = zr[c], z1 = zr[c + stride], z2 = zr[c + 2 * stride], z3 = zr[c + 3 * stride];
    add_column(s, z0, c);
    add_column(s, z1, c + stride);
    add_column(s, z2, c + 2 * stride);
    add_column(s, z3, c + 3 * stride);
  }
  for (; c < classes; c += stride) add_column(s, zr[c], c);
  s = block_merge(s, shared);
  const float inv = 1.0f / s.sum;
#pragma unroll 4
  for (int64_t k = threadIdx.x; k < classes; k += stride) pr[k] = expf(zr[k] - s.max) * inv;
  if (threadIdx.x == 0) {
    const auto label = static_cast<int64_t>(labels[row]);
    row_loss[row] = log(static_cast<double>(s.sum)) - (static_cast<double>(zr[label]) - s.max);
    row_correct[row] = s.first == label ? 1 : 0;
  }
}

// One block sums the rows in a fixed order.
__global__ void cross_entropy_sum_kernel(const double* row_loss, const int* row_correct,
                                         int64_t rows, CrossEntropySums* result) {
  __shared__ double shared_loss[33];
  __shared__ long long shared_correct[33];
  double loss = 0.0;
  long long correct = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    loss += row_loss[r];
    correct += row_correct[r];
  }
  loss = block_sum(loss, shared_loss);
  correct = block_sum(correct, shared_correct);
  if (threadIdx.x == 0) *result = {loss, correct};
}

__global__ void cross_entropy_backward_kernel(const float* probs, const float* labels, float scale,
                                              float* dlogits, int64_t classes, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const int64_t r = i / classes, c = i % classes;
    const float onehot = c == static_cast<int64_t>(labels[r]) ? scale : 0.0f;
    dlogits[i] = probs[i] * scale - onehot;
  }
}

unsigned int row_blocks(int64_t rows) {
  return static_cast<unsigned int>(rows);
}

}  // namespace

int64_t column_sum_scratch_floats(int64_t rows, int64_t cols) {
  return chunks_of(rows) * cols;
}

int64_t squared_norm_scratch_doubles(int64_t n) {
  return blocks_for(n);
}

cudaError_t launch_sum_rows(const float* x, float* y, int64_t rows, int64_t cols, bool accumulate,
                            float* scratch, cudaStream_t stream) {
  if (cols <= 0) return cudaSuccess;
  if (rows <= 0) {
    // An empty sum: zero, or y unchanged when accumulating.
    return accumulate ? cudaSuccess : launch_fill(y, cols, 0.0f, stream);
  }
  column_partial_kernel<<<column_grid(rows, cols), kThreads, 0, stream>>>(x, scratch, rows, cols,
                                                                          chunk_rows(rows));
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  const auto col_blocks = static_cast<unsigned int>((cols + kThreads - 1) / kThreads);
  column_finish_kernel<<<col_blocks, kThreads, 0, stream>>>(scratch, y, chunks_of(rows), cols,
                                                            accumulate);
  return cudaGetLastError();
}

cudaError_t launch_squared_norm(const float* x, int64_t n, double* scratch, double* result,
                                cudaStream_t stream) {
  if (n <= 0) return cudaMemsetAsync(result, 0, sizeof(double), stream);
  const unsigned int blocks = blocks_for(n);
  squared_norm_partial_kernel<<<blocks, kThreads, 0, stream>>>(x, n, scratch);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  squared_norm_finish_kernel<<<1, kThreads, 0, stream>>>(scratch, blocks, result);
  return cudaGetLastError();
}

cudaError_t launch_layer_norm_forward(const float* x, const float* gamma, const float* beta,
                                      float* y, float* mean, float* variance, int64_t rows,
                                      int64_t features, float epsilon, cudaStream_t stream) {
  if (rows <= 0 || features <= 0) return cudaSuccess;
  layer_norm_forward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(x, gamma, beta, y, mean,
                                                                       variance, features, epsilon);
  return cudaGetLastError();
}

cudaError_t launch_layer_norm_backward(const float* x, const float* dy, const float* gamma,
                                       const float* mean, const float* variance, float* dx,
                                       int64_t rows, int64_t features, float epsilon,
                                       cudaStream_t stream) {
  if (rows <= 0 || features <= 0) return cudaSuccess;
  layer_norm_backward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(
      x, dy, gamma, mean, variance, dx, features, epsilon);
  return cudaGetLastError();
}

cudaError_t launch_layer_norm_parameter_grads(const float* x, const float* dy, const float* mean,
                                              const float* variance, float* dgamma, float* dbeta,
                                              int64_t rows, int64_t features, float epsilon,
                                              float* scratch, cudaStream_t stream) {
  if (rows <= 0 || features <= 0) return cudaSuccess;
  float* partial_g = scratch;
  float* partial_b = scratch + column_sum_scratch_floats(rows, features);
  layer_norm_parameter_partial_kernel<<<column_grid(rows, features), kThreads, 0, stream>>>(
      x, dy, mean, variance, partial_g, partial_b, rows, features, chunk_rows(rows), epsilon);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  const auto col_blocks = static_cast<unsigned int>((features + kThreads - 1) / kThreads);
  column_finish_kernel<<<col_blocks, kThreads, 0, stream>>>(partial_g, dgamma, chunks_of(rows),
                                                            features, false);
  status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  column_finish_kernel<<<col_blocks, kThreads, 0, stream>>>(partial_b, dbeta, chunks_of(rows),
                                                            features, false);
  return cudaGetLastError();
}

cudaError_t launch_softmax_forward(const float* x, float* y, int64_t rows, int64_t cols,
                                   bool causal, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  softmax_forward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(x, y, cols, causal);
  return cudaGetLastError();
}

cudaError_t launch_softmax_backward(const float* y, const float* dy, float* dx, int64_t rows,
                                    int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  softmax_backward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(y, dy, dx, cols);
  return cudaGetLastError();
}

cudaError_t launch_cross_entropy_forward(const float* logits, const float* labels, float* probs,
                                         int64_t rows, int64_t classes, double* row_loss,
                                         int* row_correct, CrossEntropySums* result,
                                         cudaStream_t stream) {
  if (rows <= 0 || classes <= 0) return cudaMemsetAsync(result, 0, sizeof *result, stream);
  cross_entropy_rows_kernel<<<row_blocks(rows), kLossThreads, 0, stream>>>(
      logits, labels, probs, classes, row_loss, row_correct);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  cross_entropy_sum_kernel<<<1, kThreads, 0, stream>>>(row_loss, row_correct, rows, result);
  return cudaGetLastError();
}

cudaError_t launch_cross_entropy_backward(const float* probs, const float* labels, float scale,
                                          float* dlogits, int64_t rows, int64_t classes,
                                          cudaStream_t stream) {
  const int64_t n = rows * classes;
  if (n <= 0) return cudaSuccess;
  cross_entropy_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(probs, labels, scale,
                                                                        dlogits, classes, n);
  return cudaGetLastError();
}

}  // namespace interplace::kernels::cuda
