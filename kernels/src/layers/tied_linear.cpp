#include "interplace/kernels/layers/tied_linear.hpp"

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/linear.hpp"

namespace interplace::kernels {

TiedLinear::TiedLinear(int64_t in_features, int64_t out_features)
    : in_features_(in_features), out_features_(out_features) {
  if (in_features < 1 || out_features < 1) {
    throw_invalid("TiedLinear: features must be positive, got in=" + std::to_string(in_features) +
                  " out=" + std::to_string(out_features));
  }
}

void TiedLinear::bind(Parameter& weight) {
  const Shape expected{out_features_, in_features_};
  if (weight.value.shape() != expected) {
    throw_invalid("TiedLinear: cannot bind parameter '" + weight.name + "' " +
                  to_string(weight.value.shape()) + ", the weight must be " + to_string(expected));
  }
  weight_ = &weight;
}

Parameter& TiedLinear::bound_weight() const {
  if (weight_ == nullptr) {
    throw_invalid("TiedLinear(" + std::to_string(in_features_) + " -> " +
                  std::to_string(out_features_) +
                  "): no weight bound; bind the owning layer's parameter first");
  }
  return *weight_;
}

Shape TiedLinear::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (in.back() != in_features_) {
    throw_invalid("TiedLinear(" + std::to_string(in_features_) + " -> " +
                  std::to_string(out_features_) + "): input " + to_string(in) + " must end in " +
                  std::to_string(in_features_) + " features");
  }
  Shape out = in;
  out.back() = out_features_;
  return out;
}

FlopCount TiedLinear::count_flops(std::span<const Shape> /*inputs*/, const Shape& output) const {
  const int64_t product = 2 * (numel(output) / out_features_) * in_features_ * out_features_;
  return {product, 2 * product, product};
}

Tensor TiedLinear::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) {
  const Parameter& weight = bound_weight();
  const Tensor& x = inputs[0];
  if (weight.value.device() != x.device()) {
    throw_invalid("TiedLinear: the bound weight is on " + to_string(weight.value.device()) +
                  ", the input on " + to_string(x.device()));
  }
  Shape out_shape = x.shape();
  out_shape.back() = out_features_;
  Tensor y(out_shape, x.device());
  const int64_t rows = x.numel() / in_features_;
  backend.matmul({1, rows, out_features_, in_features_, false, true}, x, weight.value, y);
  ctx.saved = {x};
  return y;
}

std::vector<Tensor> TiedLinear::run_backward(Backend& backend, const Tensor& grad_output,
                                             Context& ctx, Gradients which) {
  Parameter& weight = bound_weight();
  const Tensor& x = ctx.saved[0];
  const int64_t rows = x.numel() / in_features_;
  Tensor dx(x.shape(), x.device());
  backend.matmul({1, rows, in_features_, out_features_}, grad_output, weight.value, dx);
  if (which == Gradients::inputs_and_parameters) {
    Linear::parameter_gradients(backend, grad_output, x, weight, nullptr);
  }
  if (which == Gradients::inputs_deferring_parameters) ctx.deferred = {grad_output};
  return {dx};
}

void TiedLinear::run_backward_parameters(Context& ctx) {
  const Tensor& grad_output = ctx.deferred[0];
  Linear::parameter_gradients(backend_for(grad_output.device()), grad_output, ctx.saved[0],
                              bound_weight(), nullptr);
}

}  // namespace interplace::kernels
