#include "interplace/kernels/layers/batch_norm.hpp"

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

namespace {

// ctx.saved = {x, mean, variance} with the statistics forward normalised by; eval mode
// appends an empty marker so that backward treats them as constants.
enum Saved { kInput, kMean, kVariance, kEvalMarker };

Tensor filled(Backend& backend, const Shape& shape, Device device, float value) {
  Tensor t(shape, device);
  backend.fill(t, value);
  return t;
}

}  // namespace

BatchNorm2d::BatchNorm2d(int64_t channels, float epsilon, float momentum)
    : channels_(channels), epsilon_(epsilon), momentum_(momentum) {
  if (channels < 1) {
    throw_invalid("BatchNorm2d: channels must be >= 1, got " + std::to_string(channels));
  }
  if (!(epsilon > 0.0f)) {
    throw_invalid("BatchNorm2d: epsilon must be > 0, got " + std::to_string(epsilon));
  }
  if (!(momentum >= 0.0f && momentum <= 1.0f)) {
    throw_invalid("BatchNorm2d: momentum must be in [0, 1], got " + std::to_string(momentum));
  }
  weight_ = {"weight", Tensor::full({channels}, 1.0f), Tensor(), false};
  bias_ = {"bias", Tensor::zeros({channels}), Tensor(), false};
  running_mean_ = Tensor::zeros({channels});
  running_var_ = Tensor::full({channels}, 1.0f);
}

void BatchNorm2d::init_parameters(Rng& /*rng*/) {
  weight_.value.fill(1.0f);
  bias_.value.fill(0.0f);
  running_mean_.fill(0.0f);
  running_var_.fill(1.0f);
}

Shape BatchNorm2d::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  const std::string name = "BatchNorm2d(" + std::to_string(channels_) + ")";
  if (in.size() != 4) throw_invalid(name + ": input must be [N, C, H, W], got " + to_string(in));
  if (in[1] != channels_) {
    throw_invalid(name + ": input " + to_string(in) + " has " + std::to_string(in[1]) +
                  " channels, expected " + std::to_string(channels_));
  }
  return in;
}

FlopCount BatchNorm2d::count_flops(std::span<const Shape> /*inputs*/, const Shape& output) const {
  const int64_t n = numel(output);
  // Eval mode: the scale/shift gradients (4n of the 6n) need no input-gradient work.
  return training() ? FlopCount{6 * n, 9 * n} : FlopCount{2 * n, 6 * n, 4 * n};
}

Tensor BatchNorm2d::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) {
  const Tensor& x = inputs[0];
  Tensor y(x.shape(), x.device());
  Tensor mean({channels_}, x.device());
  Tensor variance({channels_}, x.device());
  if (training()) {
    const int64_t count = x.numel() / channels_;
    if (count < 2) {
      throw_invalid("BatchNorm2d: training needs more than one value per channel, got input " +
                    to_string(x.shape()));
    }
    backend.batch_norm_forward_training(x, weight_.value, bias_.value, epsilon_, y, mean, variance);
    update_running_statistics(backend, mean, variance, count);
    ctx.saved = {x, mean, variance};
  } else {
    // Copies, so that backward sees the statistics this forward used.
    backend.copy(running_mean_, mean);
    backend.copy(running_var_, variance);
    backend.batch_norm_forward_inference(x, weight_.value, bias_.value, mean, variance, epsilon_,
                                         y);
    ctx.saved = {x, mean, variance, Tensor()};
  }
  return y;
}

void BatchNorm2d::update_running_statistics(Backend& backend, const Tensor& mean,
                                            const Tensor& variance, int64_t count) {
  const auto unbias =
      static_cast<float>(static_cast<double>(count) / static_cast<double>(count - 1));
  backend.update_running_statistics(mean, variance, momentum_, unbias, running_mean_, running_var_);
}

std::vector<Tensor> BatchNorm2d::run_backward(Backend& backend, const Tensor& grad_output,
                                              Context& ctx, Gradients which) {
  if (ctx.saved.size() > kEvalMarker) return backward_eval(backend, grad_output, ctx, which);
  const Tensor& x = ctx.saved[kInput];
  Tensor dx(x.shape(), x.device());
  // With batch statistics the input gradient needs the per-channel sums of dy and
  // dy * xhat, which are dbeta and dgamma: inputs_only still computes them (into scratch)
  // and only leaves the parameters' gradients alone; a deferring pass keeps them for
  // run_backward_parameters to commit.
  const bool parameters = which == Gradients::inputs_and_parameters;
  Tensor dgamma = parameters ? grad_target(weight_) : Tensor({channels_}, x.device());
  Tensor dbeta = parameters ? grad_target(bias_) : Tensor({channels_}, x.device());
  backend.batch_norm_backward(x, grad_output, weight_.value, ctx.saved[kMean], ctx.saved[kVariance],
                              epsilon_, dx, dgamma, dbeta);
  if (parameters) {
    store_grad(backend, weight_, dgamma);
    store_grad(backend, bias_, dbeta);
  }
  if (which == Gradients::inputs_deferring_parameters) ctx.deferred = {dgamma, dbeta};
  return {dx};
}

void BatchNorm2d::run_backward_parameters(Context& ctx) {
  Backend& backend = backend_for(ctx.deferred[0].device());
  if (ctx.saved.size() > kEvalMarker) {  // the deferring pass kept the output gradient
    parameter_gradients_eval(backend, ctx.deferred[0], ctx);
    return;
  }
  begin_grad(weight_);
  begin_grad(bias_);
  store_grad(backend, weight_, ctx.deferred[0]);
  store_grad(backend, bias_, ctx.deferred[1]);
}

// With constant statistics y = gamma * xhat + beta is per-channel affine, so
//   dx = gamma / sqrt(var + eps) * dy   (an inference batch norm of dy with mean 0, beta 0)
//   dgamma = sum(dy * xhat), dbeta = sum(dy)   (the weight and bias gradients of a
//   depthwise 1x1 convolution applied to xhat).
// Built from backend calls so that it runs on every device.
std::vector<Tensor> BatchNorm2d::backward_eval(Backend& backend, const Tensor& grad_output,
                                               Context& ctx, Gradients which) {
  const Tensor& x = ctx.saved[kInput];
  const Tensor& variance = ctx.saved[kVariance];
  const Tensor zeros = filled(backend, {channels_}, x.device(), 0.0f);

  Tensor dx(x.shape(), x.device());
  backend.batch_norm_forward_inference(grad_output, weight_.value, zeros, zeros, variance, epsilon_,
                                       dx);
  if (which == Gradients::inputs_deferring_parameters) ctx.deferred = {grad_output};
  if (which == Gradients::inputs_and_parameters)
    parameter_gradients_eval(backend, grad_output, ctx);
  return {dx};
}

void BatchNorm2d::parameter_gradients_eval(Backend& backend, const Tensor& grad_output,
                                           const Context& ctx) {
  const Tensor& x = ctx.saved[kInput];
  const Tensor& mean = ctx.saved[kMean];
  const Tensor& variance = ctx.saved[kVariance];
  const Device device = x.device();
  const Tensor zeros = filled(backend, {channels_}, device, 0.0f);
  Tensor xhat(x.shape(), device);
  backend.batch_norm_forward_inference(x, filled(backend, {channels_}, device, 1.0f), zeros, mean,
                                       variance, epsilon_, xhat);
  const Conv2dGeometry per_channel{.batch = x.dim(0),
                                   .in_channels = channels_,
                                   .in_height = x.dim(2),
                                   .in_width = x.dim(3),
                                   .out_channels = channels_,
                                   .kernel_h = 1,
                                   .kernel_w = 1,
                                   .stride = 1,
                                   .padding_h = 0,
                                   .padding_w = 0,
                                   .groups = channels_};
  Tensor dgamma = grad_target(weight_);
  Tensor dbeta = grad_target(bias_);
  Tensor dgamma_view = dgamma.reshaped({channels_, 1, 1, 1});
  backend.conv2d_backward_weights(per_channel, xhat, grad_output, dgamma_view, dbeta);
  store_grad(backend, weight_, dgamma);
  store_grad(backend, bias_, dbeta);
}

}  // namespace interplace::kernels
