#include "interplace/kernels/layers/layer_norm.hpp"

#include <cmath>
#include <sstream>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

LayerNorm::LayerNorm(int64_t features, float epsilon) : features_(features), epsilon_(epsilon) {
  if (features < 1) {
    throw_invalid("LayerNorm: features must be positive, got " + std::to_string(features));
  }
  if (!(epsilon > 0.0f) || !std::isfinite(epsilon)) {
    std::ostringstream message;
    message << "LayerNorm: epsilon must be a positive number, got " << epsilon;
    throw_invalid(message.str());
  }
  weight_ = {"weight", Tensor::full({features}, 1.0f), Tensor(), false};
  bias_ = {"bias", Tensor::zeros({features}), Tensor(), false};
}

void LayerNorm::init_parameters(Rng& /*rng*/) {
  weight_.value.fill(1.0f);
  bias_.value.fill(0.0f);
}

Shape LayerNorm::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (in.empty() || in.back() != features_) {
    throw_invalid("LayerNorm(" + std::to_string(features_) + "): input " + to_string(in) +
                  " must end in " + std::to_string(features_) + " features");
  }
  return in;
}

FlopCount LayerNorm::count_flops(std::span<const Shape> /*inputs*/, const Shape& output) const {
  const int64_t n = numel(output);
  return {8 * n, 13 * n};
}

Tensor LayerNorm::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) {
  const Tensor& x = inputs[0];
  const int64_t rows = x.numel() / features_;
  Tensor y(x.shape(), x.device());
  Tensor mean({rows}, x.device());
  Tensor variance({rows}, x.device());
  backend.layer_norm_forward(x, weight_.value, bias_.value, epsilon_, y, mean, variance);
  ctx.saved = {x, mean, variance};
  return y;
}

std::vector<Tensor> LayerNorm::run_backward(Backend& backend, const Tensor& grad_output,
                                            Context& ctx, Gradients which) {
  const Tensor& x = ctx.saved[0];
  Tensor dx(x.shape(), x.device());
  // The kernel overwrites dgamma/dbeta, so accumulation goes through a scratch target. The
  // kernels compute them with dx (column sums beside dx's row sums): inputs_only lets them
  // write into scratch and leaves the parameters' gradients alone.
  // A deferring pass keeps the scratch sums for run_backward_parameters to commit.
  const bool parameters = which == Gradients::inputs_and_parameters;
  const int64_t features = weight_.value.numel();
  Tensor dweight = parameters ? grad_target(weight_) : Tensor({features}, x.device());
  Tensor dbias = parameters ? grad_target(bias_) : Tensor({features}, x.device());
  backend.layer_norm_backward(x, grad_output, weight_.value, ctx.saved[1], ctx.saved[2], epsilon_,
                              dx, dweight, dbias);
  if (parameters) {
    store_grad(backend, weight_, dweight);
    store_grad(backend, bias_, dbias);
  }
  if (which == Gradients::inputs_deferring_parameters) ctx.deferred = {dweight, dbias};
  return {dx};
}

void LayerNorm::run_backward_parameters(Context& ctx) {
  Backend& backend = backend_for(ctx.deferred[0].device());
  begin_grad(weight_);
  begin_grad(bias_);
  store_grad(backend, weight_, ctx.deferred[0]);
  store_grad(backend, bias_, ctx.deferred[1]);
}

}  // namespace interplace::kernels
