// Pooling operations of the CUDA backend (kernels in cuda_pool.cu). Max pooling keeps its
// arg-max positions in the caller's workspace tensor (one int32 per output), so backward
// needs no backend state and several forward calls can be in flight at once.
#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "cuda_kernels.hpp"
#include "cuda_validate.hpp"

namespace interplace::kernels::cuda {

namespace {

void check_geometry(const Pool2dGeometry& g) {
  if (g.batch < 1 || g.channels < 1 || g.in_height < 1 || g.in_width < 1 || g.kernel < 1 ||
      g.stride < 1 || g.padding < 0 || 2 * g.padding > g.kernel ||
      g.in_height + 2 * g.padding < g.kernel || g.in_width + 2 * g.padding < g.kernel) {
    throw_invalid("pool2d: invalid geometry " + g.key() +
                  " (extents, kernel and stride must be positive, padding in [0, kernel/2] and "
                  "the kernel must fit the padded input)");
  }
  if (g.in_height * g.in_width > INT32_MAX) {
    throw_invalid("pool2d " + g.key() + ": planes above 2^31 elements are not supported");
  }
}

PoolShape shape_of(const Pool2dGeometry& g) {
  return {g.batch,       g.channels, g.in_height, g.in_width, g.out_height(),
          g.out_width(), g.kernel,   g.stride,    g.padding,  g.count_include_pad};
}

void check_geometry(const Pad2dGeometry& g) {
  if (g.batch < 1 || g.channels < 1 || g.in_height < 1 || g.in_width < 1 || g.out_height() < 1 ||
      g.out_width() < 1) {
    throw_invalid("pad2d: invalid geometry " + g.key() +
                  " (extents must be positive and cropping must leave a non-empty output)");
  }
}

void require_shape(const Tensor& t, const Shape& expected, const std::string& op,
                   const char* what) {
  if (t.shape() != expected) {
    throw_invalid(op + ": " + what + " is " + to_string(t.shape()) + ", expected " +
                  to_string(expected));
  }
}

int64_t input_size(const Pool2dGeometry& g) {
  return g.batch * g.channels * g.in_height * g.in_width;
}
int64_t output_size(const Pool2dGeometry& g) {
  return g.batch * g.channels * g.out_height() * g.out_width();
}

}  // namespace

void CudaBackend::pool2d_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y,
                                 Tensor& workspace) {
  check_geometry(g);
  const std::string op = "pool2d " + g.key();
  require_cuda({&x, &y}, op);
  require_numel(x, input_size(g), op, "input");
  require_numel(y, output_size(g), op, "output");
  const PoolShape s = shape_of(g);
  if (g.kind == PoolKind::average) {
    check_cuda(launch_avg_pool_forward(s, x.data(), y.data(), stream_), "avg_pool forward kernel");
    return;
  }
  // int32 positions stored in float-sized slots.
  static_assert(sizeof(int) == sizeof(float));
  if (!workspace.defined() || workspace.numel() != output_size(g) ||
      workspace.device() != Device::cuda) {
    workspace = Tensor({output_size(g)}, Device::cuda);
  }
  check_cuda(launch_max_pool_forward(s, x.data(), y.data(),
                                     reinterpret_cast<int*>(workspace.data()), stream_),
             "max_pool forward kernel");
}

void CudaBackend::pool2d_backward(const Pool2dGeometry& g, const Tensor& dy,
                                  const Tensor& workspace, Tensor& dx) {
  check_geometry(g);
  const std::string op = "pool2d backward " + g.key();
  require_cuda({&dy, &dx}, op);
  require_numel(dy, output_size(g), op, "output gradient");
  require_numel(dx, input_size(g), op, "input gradient");
  const PoolShape s = shape_of(g);
  if (g.kind == PoolKind::average) {
    check_cuda(launch_avg_pool_backward(s, dy.data(), dx.data(), stream_),
               "avg_pool backward kernel");
    return;
  }
  if (!workspace.defined() || workspace.device() != Device::cuda ||
      workspace.numel() < output_size(g)) {
    throw_invalid(op + ": the workspace from the matching forward call is missing or too small");
  }
  check_cuda(launch_max_pool_backward(s, dy.data(), reinterpret_cast<const int*>(workspace.data()),
                                      dx.data(), stream_),
             "max_pool backward kernel");
}

// Padding and cropping: one shifted-window copy, forward by (top, left), backward by the
// opposite shift (cropped elements get zero gradient), as cpu_pad.cpp.
void CudaBackend::pad2d_forward(const Pad2dGeometry& g, const Tensor& x, Tensor& y) {
  check_geometry(g);
  const std::string op = "pad2d " + g.key();
  require_cuda({&x, &y}, op);
  require_shape(x, {g.batch, g.channels, g.in_height, g.in_width}, op, "input");
  require_shape(y, {g.batch, g.channels, g.out_height(), g.out_width()}, op, "output");
  check_cuda(launch_shifted_copy(x.data(), g.in_height, g.in_width, y.data(), g.out_height(),
                                 g.out_width(), g.batch * g.channels, g.top, g.left, stream_),
             "pad2d forward kernel");
}

void CudaBackend::pad2d_backward(const Pad2dGeometry& g, const Tensor& dy, Tensor& dx) {
  check_geometry(g);
  const std::string op = "pad2d backward " + g.key();
  require_cuda({&dy, &dx}, op);
  require_shape(dy, {g.batch, g.channels, g.out_height(), g.out_width()}, op, "output gradient");
  require_shape(dx, {g.batch, g.channels, g.in_height, g.in_width}, op, "input gradient");
  check_cuda(launch_shifted_copy(dy.data(), g.out_height(), g.out_width(), dx.data(), g.in_height,
                                 g.in_width, g.batch * g.channels, -g.top, -g.left, stream_),
             "pad2d backward kernel");
}

}  // namespace interplace::kernels::cuda
