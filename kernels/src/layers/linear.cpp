#include "interplace/kernels/layers/linear.hpp"

#include <cmath>

#include "init.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias)
    : in_features_(in_features), out_features_(out_features), has_bias_(bias) {
  if (in_features < 1 || out_features < 1) {
    throw_invalid("Linear: features must be positive, got in=" + std::to_string(in_features) +
                  " out=" + std::to_string(out_features));
  }
  weight_ = {"weight", Tensor::zeros({out_features, in_features}), Tensor(), true};
  if (has_bias_) bias_ = {"bias", Tensor::zeros({out_features}), Tensor(), false};
}

Shape Linear::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (in.back() != in_features_) {
    throw_invalid("Linear(" + std::to_string(in_features_) + " -> " +
                  std::to_string(out_features_) + "): input " + to_string(in) + " must end in " +
                  std::to_string(in_features_) + " features");
  }
  Shape out = in;
  out.back() = out_features_;
  return out;
}

FlopCount Linear::count_flops(std::span<const Shape> /*inputs*/, const Shape& output) const {
  const int64_t rows = numel(output) / out_features_;
  const int64_t product = 2 * rows * in_features_ * out_features_;
  const int64_t bias = has_bias_ ? rows * out_features_ : 0;
  return {product + bias, 2 * product + bias, product + bias};
}

Tensor Linear::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) {
  const Tensor& x = inputs[0];
  Shape out_shape = x.shape();
  out_shape.back() = out_features_;
  Tensor y(out_shape, x.device());
  const int64_t rows = x.numel() / in_features_;
  backend.matmul({1, rows, out_features_, in_features_, false, true}, x, weight_.value, y);
  if (has_bias_) backend.add_row_bias(bias_.value, y);
  ctx.saved = {x};
  return y;
}

std::vector<Tensor> Linear::run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                         Gradients which) {
  const Tensor& x = ctx.saved[0];
  const int64_t rows = x.numel() / in_features_;

  Tensor dx(x.shape(), x.device());
  backend.matmul({1, rows, in_features_, out_features_}, grad_output, weight_.value, dx);
  if (which == Gradients::inputs_only) return {dx};
  if (which == Gradients::inputs_deferring_parameters) {
    ctx.deferred = {grad_output};
    return {dx};
  }
  parameter_gradients(backend, grad_output, x, weight_, has_bias_ ? &bias_ : nullptr);
  return {dx};
}

void Linear::run_backward_parameters(Context& ctx) {
  const Tensor& grad_output = ctx.deferred[0];
  parameter_gradients(backend_for(grad_output.device()), grad_output, ctx.saved[0], weight_,
                      has_bias_ ? &bias_ : nullptr);
}

void Linear::parameter_gradients(Backend& backend, const Tensor& grad_output, const Tensor& input,
                                 Parameter& weight, Parameter* bias) {
  const int64_t out_features = weight.value.dim(0), in_features = weight.value.dim(1);
  const int64_t rows = input.numel() / in_features;
  const bool accumulate = begin_grad(weight);
  backend.matmul({1, out_features, in_features, rows, true, false, 1.0f, accumulate ? 1.0f : 0.0f},
                 grad_output, input, weight.grad);
  weight.grad_is_zero = false;
  if (bias != nullptr) {
    const bool accumulate_bias = begin_grad(*bias);
    backend.sum_rows(grad_output, bias->grad, accumulate_bias);
    bias->grad_is_zero = false;
  }
}

std::vector<Parameter*> Linear::parameters() {
  if (has_bias_) return {&weight_, &bias_};
  return {&weight_};
}

void Linear::init_parameters(Rng& rng) {
  const float bound = 1.0f / std::sqrt(static_cast<float>(in_features_));
  for (Parameter* p : parameters()) {
    fill_uniform(p->value, rng, -bound, bound);
  }
}

}  // namespace interplace::kernels
