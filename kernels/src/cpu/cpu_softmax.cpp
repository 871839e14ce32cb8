// Softmax over the last axis as OpenMP loops. oneDNN's softmax has no causal mask, and
// masking through a copy filled with -inf would double the memory traffic; the loop skips
// masked columns entirely (half of the work of causal attention).
#include "cpu_backend.hpp"
#include "cpu_fast_exp.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels::cpu {

namespace {

constexpr int64_t kParallelElements = 32768;

}  // namespace

void CpuBackend::softmax_forward(const Tensor& x, bool causal, Tensor& y) {
  if (x.rank() < 1 || x.numel() == 0 || y.numel() != x.numel()) {
    throw_invalid("softmax_forward: input " + to_string(x.shape()) + " and output " +
                  to_string(y.shape()) + " must be non-empty and of equal size");
  }
  const int64_t cols = x.dim(-1);
  const int64_t rows = x.numel() / cols;
  if (causal && rows % cols != 0) {
    throw_invalid("softmax_forward: the causal mask needs [..., T, T] blocks, got " +
                  to_string(x.shape()));
  }
  const float* px = x.data();
  float* py = y.data();
#pragma omp parallel for if (x.numel() > kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    // Row i of each T x T block attends to columns 0..i.
    const int64_t valid = causal ? r % cols + 1 : cols;
    const float* xr = px + r * cols;
    float* yr = py + r * cols;
    float max = xr[0];
#pragma omp simd reduction(max : max)
    for (int64_t c = 0; c < valid; ++c) max = xr[c] > max ? xr[c] : max;
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < valid; ++c) {
      yr[c] = exp_nonpositive(xr[c] - max);
      sum += yr[c];
    }
    const auto inv = static_cast<float>(1.0 / sum);
#pragma omp simd
    for (int64_t c = 0; c < valid; ++c) yr[c] *= inv;
    for (int64_t c = valid; c < cols; ++c) yr[c] = 0.0f;
  }
}

void CpuBackend::softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  if (y.rank() < 1 || y.numel() == 0 || dy.numel() != y.numel() || dx.numel() != y.numel()) {
    throw_invalid("softmax_backward: y " + to_string(y.shape()) + ", dy " + to_string(dy.shape()) +
                  " and dx " + to_string(dx.shape()) + " must be non-empty and of equal size");
  }
  const int64_t cols = y.dim(-1);
  const int64_t rows = y.numel() / cols;
  const float* py = y.data();
  const float* pdy = dy.data();
  float* pdx = dx.data();
  // dx = y * (dy - sum(y * dy)); masked entries have y = 0 and so get dx = 0.
#pragma omp parallel for if (y.numel() > kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = py + r * cols;
    const float* dyr = pdy + r * cols;
    float* dxr = pdx + r * cols;
    double dot = 0.0;
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < cols; ++c) dot += yr[c] * dyr[c];
    const auto d = static_cast<float>(dot);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) dxr[c] = yr[c] * (dyr[c] - d);
  }
}

}  // namespace interplace::kernels::cpu
