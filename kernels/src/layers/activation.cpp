#include "interplace/kernels/layers/activation.hpp"

namespace interplace::kernels {

namespace {

FlopCount flops_per_element(Activation kind) {
  switch (kind) {
    case Activation::relu:
      return {1, 1};
    case Activation::relu6:
      return {2, 2};
    case Activation::gelu:
      return {9, 18};
    case Activation::tanh:
      return {1, 4};
    case Activation::sigmoid:
      return {4, 4};
  }
  return {0, 0};
}

}  // namespace

Shape ActivationLayer::infer_output_shape(std::span<const Shape> inputs) const {
  return inputs[0];
}

FlopCount ActivationLayer::count_flops(std::span<const Shape> /*inputs*/,
                                       const Shape& output) const {
  const FlopCount per = flops_per_element(kind_);
  const int64_t n = numel(output);
  return {per.forward_flops * n, per.backward_flops * n};
}

Tensor ActivationLayer::run_forward(Backend& backend, std::span<const Tensor> inputs,
                                    Context& ctx) {
  const Tensor& x = inputs[0];
  Tensor y(x.shape(), x.device());
  backend.activation_forward(kind_, x, y);
  ctx.saved = {x};
  return y;
}

std::vector<Tensor> ActivationLayer::run_backward(Backend& backend, const Tensor& grad_output,
                                                  Context& ctx, Gradients /*which*/) {
  const Tensor& x = ctx.saved[0];
  Tensor dx(x.shape(), x.device());
  backend.activation_backward(kind_, x, grad_output, dx);
  return {dx};
}

}  // namespace interplace::kernels
