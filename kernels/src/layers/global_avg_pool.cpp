// GlobalAvgPool as matrix products with a ones vector: viewing x as [N*C, H*W],
// y = x * ones / (H*W) and dx = dy * ones^T / (H*W). Works for any H and W on every backend.
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/pooling.hpp"

namespace interplace::kernels {

namespace {

Tensor ones(Backend& backend, int64_t n, Device device) {
  Tensor t({n}, device);
  backend.fill(t, 1.0f);
  return t;
}

}  // namespace

Shape GlobalAvgPool::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (in.size() != 4) {
    throw_invalid("GlobalAvgPool: input must be [N, C, H, W], got " + to_string(in));
  }
  return {in[0], in[1]};
}

FlopCount GlobalAvgPool::count_flops(std::span<const Shape> inputs, const Shape& /*output*/) const {
  const int64_t n = numel(inputs[0]);
  return {n, n};
}

Tensor GlobalAvgPool::run_forward(Backend& backend, std::span<const Tensor> inputs,
                                  Context& /*ctx*/) {
  const Tensor& x = inputs[0];
  const int64_t rows = x.dim(0) * x.dim(1);
  const int64_t area = x.dim(2) * x.dim(3);
  Tensor y({x.dim(0), x.dim(1)}, x.device());
  const float inverse = 1.0f / static_cast<float>(area);
  backend.matmul({1, rows, 1, area, false, false, inverse}, x, ones(backend, area, x.device()), y);
  return y;
}

std::vector<Tensor> GlobalAvgPool::run_backward(Backend& backend, const Tensor& grad_output,
                                                Context& ctx, Gradients /*which*/) {
  const Shape& in = ctx.input_shapes[0];
  const int64_t rows = in[0] * in[1];
  const int64_t area = in[2] * in[3];
  Tensor dx(in, grad_output.device());
  const float inverse = 1.0f / static_cast<float>(area);
  backend.matmul({1, rows, area, 1, false, false, inverse}, grad_output,
                 ones(backend, area, grad_output.device()), dx);
  return {dx};
}

}  // namespace interplace::kernels
