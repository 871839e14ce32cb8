// Zero padding and cropping of the spatial axes (Pad2dGeometry). Forward and backward are
// the same shifted-window copy in opposite directions, so both call one routine.
#include <algorithm>
#include <cstring>

#include "cpu_backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels::cpu {

namespace {

void check_geometry(const Pad2dGeometry& g) {
  if (g.batch < 1 || g.channels < 1 || g.in_height < 1 || g.in_width < 1 || g.out_height() < 1 ||
      g.out_width() < 1) {
    throw_invalid("pad2d: invalid geometry " + g.key() +
                  " (extents must be positive and cropping must leave a non-empty output)");
  }
}

// dst[p, i, j] = src[p, i - shift_h, j - shift_w], or 0 outside src, for every plane p.
void shifted_copy(const float* src, int64_t src_h, int64_t src_w, float* dst, int64_t dst_h,
                  int64_t dst_w, int64_t planes, int64_t shift_h, int64_t shift_w) {
  // Columns of dst that have a source column: [j0, j1).
  const int64_t j0 = std::clamp<int64_t>(shift_w, 0, dst_w);
  const int64_t j1 = std::clamp<int64_t>(src_w + shift_w, j0, dst_w);
#pragma omp parallel for if (planes * dst_h * dst_w > 65536)
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t i = 0; i < dst_h; ++i) {
      float* row = dst + (p * dst_h + i) * dst_w;
      const int64_t r = i - shift_h;
      if (r < 0 || r >= src_h || j1 == j0) {
        std::fill(row, row + dst_w, 0.0f);
        continue;
      }
      std::fill(row, row + j0, 0.0f);
      std::memcpy(row + j0, src + (p * src_h + r) * src_w + (j0 - shift_w),
                  static_cast<size_t>(j1 - j0) * sizeof(float));
      std::fill(row + j1, row + dst_w, 0.0f);
    }
  }
}

}  // namespace

void CpuBackend::pad2d_forward(const Pad2dGeometry& g, const Tensor& x, Tensor& y) {
  check_geometry(g);
  check_shape(x, {g.batch, g.channels, g.in_height, g.in_width}, "pad2d input");
  check_shape(y, {g.batch, g.channels, g.out_height(), g.out_width()}, "pad2d output");
  shifted_copy(x.data(), g.in_height, g.in_width, y.data(), g.out_height(), g.out_width(),
               g.batch * g.channels, g.top, g.left);
}

void CpuBackend::pad2d_backward(const Pad2dGeometry& g, const Tensor& dy, Tensor& dx) {
  check_geometry(g);
  check_shape(dy, {g.batch, g.channels, g.out_height(), g.out_width()}, "pad2d output gradient");
  check_shape(dx, {g.batch, g.channels, g.in_height, g.in_width}, "pad2d input gradient");
  shifted_copy(dy.data(), g.out_height(), g.out_width(), dx.data(), g.in_height, g.in_width,
               g.batch * g.channels, -g.top, -g.left);
}

}  // namespace interplace::kernels::cpu
