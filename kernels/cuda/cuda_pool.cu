// 2-D max and average pooling on NCHW. Ours rather than cuDNN's: cuDNN's backward needs the
// forward input and output, which the Backend interface does not keep (it hands backward
// one workspace), and its padding rules are not spelt out; here max pooling records each
// window's winner and average pooling excludes padding from the divisor unless
// count_include_pad asks for kernel^2, as the CPU backend does. Backward
// gathers (one thread per input element, summing over the windows that cover it), so it
// needs no atomics even when windows overlap.
#include "cuda_kernels.hpp"
#include "cuda_launch.cuh"

namespace interplace::kernels::cuda {

namespace {

struct Window {
  int64_t h0, h1, w0, w1;  // the window's rows [h0, h1) and columns [w0, w1), clipped
};

__device__ Window window_of(const PoolShape& s, int64_t oh, int64_t ow) {
  const int64_t h = oh * s.stride - s.padding, w = ow * s.stride - s.padding;
  return {max(h, int64_t{0}), min(h + s.kernel, s.in_height), max(w, int64_t{0}),
          min(w + s.kernel, s.in_width)};
}

// The outputs whose windows cover input row (or column) i: o with
// o * stride - padding <= i < o * stride - padding + kernel, clipped to [0, out).
__device__ void covering(int64_t i, const PoolShape& s, int64_t out, int64_t& first,
                         int64_t& last) {
  const int64_t shifted = i + s.padding;
  first = shifted < s.kernel ? 0 : (shifted - s.kernel) / s.stride + 1;
  last = min(shifted / s.stride, out - 1);
}

// The average-pooling divisor of a window: its in-bounds elements, or the whole kernel.
__device__ float divisor(const PoolShape& s, const Window& win) {
  return s.count_include_pad ? static_cast<float>(s.kernel * s.kernel)
                             : static_cast<float>((win.h1 - win.h0) * (win.w1 - win.w0));
}

__global__ void max_pool_forward_kernel(PoolShape s, const float* x, float* y, int* argmax,
                                        int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const int64_t ow = i % s.out_width, oh = (i / s.out_width) % s.out_height;
    const int64_t plane = i / (s.out_width * s.out_height);
    const float* xp = x + plane * s.in_height * s.in_width;
    const Window win = window_of(s, oh, ow);
    // Row-major scan; the first maximum wins. Padding never wins (it is not scanned).
    int64_t best = win.h0 * s.in_width + win.w0;
    float best_value = xp[best];
    for (int64_t h = win.h0; h < win.h1; ++h) {
      for (int64_t w = win.w0; w < win.w1; ++w) {
        const float v = xp[h * s.in_width + w];
        if (v > best_value) {
          best_value = v;
          best = h * s.in_width + w;
        }
      }
    }
    y[i] = best_value;
    argmax[i] = static_cast<int>(best);
  }
}

__global__ void max_pool_backward_kernel(PoolShape s, const float* dy, const int* argmax, float* dx,
                                         int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const int64_t w = i % s.in_width, h = (i / s.in_width) % s.in_height;
    const int64_t plane = i / (s.in_width * s.in_height);
    const int64_t offset = plane * s.out_height * s.out_width;
    const auto position = static_cast<int>(h * s.in_width + w);
    int64_t oh0, oh1, ow0, ow1;
    covering(h, s, s.out_height, oh0, oh1);
    covering(w, s, s.out_width, ow0, ow1);
    float sum = 0.0f;
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const int64_t o = offset + oh * s.out_width + ow;
        if (argmax[o] == position) sum += dy[o];
      }
    }
    dx[i] = sum;
  }
}

__global__ void avg_pool_forward_kernel(PoolShape s, const float* x, float* y, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const int64_t ow = i % s.out_width, oh = (i / s.out_width) % s.out_height;
    const int64_t plane = i / (s.out_width * s.out_height);
    const float* xp = x + plane * s.in_height * s.in_width;
    const Window win = window_of(s, oh, ow);
    float sum = 0.0f;
    for (int64_t h = win.h0; h < win.h1; ++h) {
      for (int64_t w = win.w0; w < win.w1; ++w) sum += xp[h * s.in_width + w];
    }
    y[i] = sum / divisor(s, win);
  }
}

__global__ void avg_pool_backward_kernel(PoolShape s, const float* dy, float* dx, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const int64_t w = i % s.in_width, h = (i / s.in_width) % s.in_height;
    const int64_t plane = i / (s.in_width * s.in_height);
    const int64_t offset = plane * s.out_height * s.out_width;
    int64_t oh0, oh1, ow0, ow1;
    covering(h, s, s.out_height, oh0, oh1);
    covering(w, s, s.out_width, ow0, ow1);
    float sum = 0.0f;
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        sum += dy[offset + oh * s.out_width + ow] / divisor(s, window_of(s, oh, ow));
      }
    }
    dx[i] = sum;
  }
}

}  // namespace

cudaError_t launch_max_pool_forward(const PoolShape& s, const float* x, float* y, int* argmax,
                                    cudaStream_t stream) {
  const int64_t n = s.batch * s.channels * s.out_height * s.out_width;
  if (n <= 0) return cudaSuccess;
  max_pool_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(s, x, y, argmax, n);
  return cudaGetLastError();
}

cudaError_t launch_max_pool_backward(const PoolShape& s, const float* dy, const int* argmax,
                                     float* dx, cudaStream_t stream) {
  const int64_t n = s.batch * s.channels * s.in_height * s.in_width;
  if (n <= 0) return cudaSuccess;
  max_pool_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(s, dy, argmax, dx, n);
  return cudaGetLastError();
}

cudaError_t launch_avg_pool_forward(const PoolShape& s, const float* x, float* y,
                                    cudaStream_t stream) {
  const int64_t n = s.batch * s.channels * s.out_height * s.out_width;
  if (n <= 0) return cudaSuccess;
  avg_pool_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(s, x, y, n);
  return cudaGetLastError();
}

cudaError_t launch_avg_pool_backward(const PoolShape& s, const float* dy, float* dx,
                                     cudaStream_t stream) {
  const int64_t n = s.batch * s.channels * s.in_height * s.in_width;
  if (n <= 0) return cudaSuccess;
  avg_pool_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(s, dy, dx, n);
  return cudaGetLastError();
}

}  // namespace interplace::kernels::cuda
