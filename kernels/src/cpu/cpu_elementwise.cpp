// Elementwise helpers of the CPU backend: plain OpenMP loops the compiler vectorises.
#include <cmath>
#include <cstring>

#include "cpu_backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels::cpu {

namespace {

void require_same_numel(const Tensor& a, const Tensor& b, const char* op) {
  if (a.numel() != b.numel()) {
    throw_invalid(std::string(op) + ": element counts differ, " + to_string(a.shape()) + " vs " +
                  to_string(b.shape()));
  }
}

}  // namespace

void CpuBackend::fill(Tensor& x, float value) {
  float* p = x.data();
  const int64_t n = x.numel();
#pragma omp parallel for simd if (n > 65536)
  for (int64_t i = 0; i < n; ++i) p[i] = value;
}

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
  require_same_numel(src, dst, "copy");
  if (src.numel() > 0 && src.data() != dst.data()) {
    std::memcpy(dst.data(), src.data(), static_cast<size_t>(src.bytes()));
  }
}

void CpuBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  require_same_numel(a, b, "add");
  require_same_numel(a, y, "add");
  const float* pa = a.data();
  const float* pb = b.data();
  float* py = y.data();
  const int64_t n = a.numel();
#pragma omp parallel for simd if (n > 65536)
  for (int64_t i = 0; i < n; ++i) py[i] = pa[i] + pb[i];
}

void CpuBackend::multiply(const Tensor& a, const Tensor& b, Tensor& y) {
  require_same_numel(a, b, "multiply");
  require_same_numel(a, y, "multiply");
  const float* pa = a.data();
  const float* pb = b.data();
  float* py = y.data();
  const int64_t n = a.numel();
#pragma omp parallel for simd if (n > 65536)
  for (int64_t i = 0; i < n; ++i) py[i] = pa[i] * pb[i];
}

void CpuBackend::axpy(float alpha, const Tensor& x, Tensor& y) {
  require_same_numel(x, y, "axpy");
  const float* px = x.data();
  float* py = y.data();
  const int64_t n = x.numel();
#pragma omp parallel for simd if (n > 65536)
  for (int64_t i = 0; i < n; ++i) py[i] += alpha * px[i];
}

void CpuBackend::scale(float alpha, Tensor& x) {
  float* p = x.data();
  const int64_t n = x.numel();
#pragma omp parallel for simd if (n > 65536)
  for (int64_t i = 0; i < n; ++i) p[i] *= alpha;
}

void CpuBackend::sum_rows(const Tensor& x, Tensor& y, bool accumulate) {
  const int64_t cols = y.numel();
  if (cols == 0 || x.numel() % cols != 0) {
    throw_invalid("sum_rows: " + to_string(x.shape()) + " is not rows of " + std::to_string(cols) +
                  " columns");
  }
  const int64_t rows = x.numel() / cols;
  const float* px = x.data();
  float* py = y.data();
  // Parallel over columns, each thread summing its columns over all rows (in double,
  // so bias gradients of long sequences keep their precision).
#pragma omp parallel for if (rows * cols > 65536)
  for (int64_t c = 0; c < cols; ++c) {
    double sum = accumulate ? py[c] : 0.0;
    for (int64_t r = 0; r < rows; ++r) sum += px[r * cols + c];
    py[c] = static_cast<float>(sum);
  }
}

void CpuBackend::add_row_bias(const Tensor& bias, Tensor& y) {
  const int64_t cols = bias.numel();
  if (cols == 0 || y.numel() % cols != 0) {
    throw_invalid("add_row_bias: " + to_string(y.shape()) + " is not rows of " +
                  std::to_string(cols) + " columns");
  }
  const int64_t rows = y.numel() / cols;
  const float* pb = bias.data();
  float* py = y.data();
#pragma omp parallel for if (rows * cols > 65536)
  for (int64_t r = 0; r < rows; ++r) {
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) py[r * cols + c] += pb[c];
  }
}

void CpuBackend::copy_channels(Tensor& slice, Tensor& whole, int64_t offset, bool slice_to_whole) {
  if (slice.rank() < 2 || whole.rank() != slice.rank() || slice.dim(0) != whole.dim(0) ||
      offset < 0 || offset + slice.dim(1) > whole.dim(1) ||
      slice.numel() / (slice.dim(0) * slice.dim(1)) !=
          whole.numel() / (whole.dim(0) * whole.dim(1))) {
    throw_invalid("copy_channels: slice " + to_string(slice.shape()) + " at channel " +
                  std::to_string(offset) + " does not fit in " + to_string(whole.shape()));
  }
  const int64_t outer = slice.dim(0);
  const int64_t inner = slice.numel() / (outer * slice.dim(1));
  const int64_t slice_block = slice.dim(1) * inner;
  const int64_t whole_block = whole.dim(1) * inner;
#pragma omp parallel for if (slice.numel() > 65536)
  for (int64_t o = 0; o < outer; ++o) {
    float* s = slice.data() + o * slice_block;
    float* w = whole.data() + o * whole_block + offset * inner;
    if (slice_to_whole) {
      std::memcpy(w, s, static_cast<size_t>(slice_block) * sizeof(float));
    } else {
      std::memcpy(s, w, static_cast<size_t>(slice_block) * sizeof(float));
    }
  }
}

double CpuBackend::squared_norm(const Tensor& x) {
  const float* p = x.data();
  const int64_t n = x.numel();
  double sum = 0.0;
#pragma omp parallel for reduction(+ : sum) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(p[i]) * p[i];
  return sum;
}

}  // namespace interplace::kernels::cpu
