// Swaps the middle axes of a 4-d tensor (attention head split and merge).
#include <cstring>

#include "cpu_backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels::cpu {

void CpuBackend::swap_axes_12(const Tensor& x, Tensor& y) {
  if (x.rank() != 4) {
    throw_invalid("swap_axes_12: input must be [A, B, C, D], got " + to_string(x.shape()));
  }
  const int64_t a_n = x.dim(0), b_n = x.dim(1), c_n = x.dim(2), d_n = x.dim(3);
  check_shape(y, {a_n, c_n, b_n, d_n}, "swap_axes_12 output");
  const float* px = x.data();
  float* py = y.data();
  // Each task copies the C rows of one (a, b) slab to their strided places in y.
#pragma omp parallel for if (x.numel() > 65536)
  for (int64_t ab = 0; ab < a_n * b_n; ++ab) {
    const int64_t a = ab / b_n, b = ab % b_n;
    for (int64_t c = 0; c < c_n; ++c) {
      const float* src = px + ((a * b_n + b) * c_n + c) * d_n;
      float* dst = py + ((a * c_n + c) * b_n + b) * d_n;
      std::memcpy(dst, src, static_cast<size_t>(d_n) * sizeof(float));
    }
  }
}

}  // namespace interplace::kernels::cpu
