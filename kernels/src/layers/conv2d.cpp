#include "interplace/kernels/layers/conv2d.hpp"

#include <cmath>

#include "init.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

namespace {

void require_positive(int64_t value, const char* what) {
  if (value < 1)
    throw_invalid(std::string("Conv2d: ") + what + " must be >= 1, got " + std::to_string(value));
}

// "3" for square extents, "1x7" (height x width) otherwise.
std::string extent(Extent2d e) {
  return e.h == e.w ? std::to_string(e.h) : std::to_string(e.h) + "x" + std::to_string(e.w);
}

}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride,
               int64_t padding, int64_t groups, bool bias)
    : Conv2d(in_channels, out_channels, Extent2d{kernel_size, kernel_size}, stride,
             Extent2d{padding, padding}, groups, bias) {}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Extent2d kernel, int64_t stride,
               Extent2d padding, int64_t groups, bool bias)
    : in_channels_(in_channels),
      out_channels_(out_channels),
      kernel_(kernel),
      stride_(stride),
      padding_(padding),
      groups_(groups),
      has_bias_(bias) {
  require_positive(in_channels, "in_channels");
  require_positive(out_channels, "out_channels");
  if (kernel.h == kernel.w) {
    require_positive(kernel.h, "kernel_size");
  } else {
    require_positive(kernel.h, "kernel_h");
    require_positive(kernel.w, "kernel_w");
  }
  require_positive(stride, "stride");
  require_positive(groups, "groups");
  for (int64_t p : {padding.h, padding.w}) {
    if (p < 0) throw_invalid("Conv2d: padding must be >= 0, got " + std::to_string(p));
  }
  if (in_channels % groups != 0 || out_channels % groups != 0) {
    throw_invalid("Conv2d: groups " + std::to_string(groups) + " must divide in_channels " +
                  std::to_string(in_channels) + " and out_channels " +
                  std::to_string(out_channels));
  }
  weight_ = {"weight", Tensor::zeros({out_channels, in_channels / groups, kernel.h, kernel.w}),
             Tensor(), true};
  if (has_bias_) bias_ = {"bias", Tensor::zeros({out_channels}), Tensor(), false};
}

Shape Conv2d::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  const std::string name = "Conv2d(" + std::to_string(in_channels_) + " -> " +
                           std::to_string(out_channels_) + ", kernel " + extent(kernel_) + ")";
  if (in.size() != 4) {
    throw_invalid(name + ": input must be [N, C, H, W], got " + to_string(in));
  }
  if (in[1] != in_channels_) {
    throw_invalid(name + ": input " + to_string(in) + " has " + std::to_string(in[1]) +
                  " channels, expected " + std::to_string(in_channels_));
  }
  if (in[2] + 2 * padding_.h < kernel_.h || in[3] + 2 * padding_.w < kernel_.w) {
    throw_invalid(name + ": kernel " + extent(kernel_) + " is larger than the padded input " +
                  std::to_string(in[2]) + "x" + std::to_string(in[3]) + " (padding " +
                  extent(padding_) + ")");
  }
  const Conv2dGeometry g = geometry(in);
  return {in[0], out_channels_, g.out_height(), g.out_width()};
}

Conv2dGeometry Conv2d::geometry(const Shape& input) const {
  return {.batch = input[0],
          .in_channels = in_channels_,
          .in_height = input[2],
          .in_width = input[3],
          .out_channels = out_channels_,
          .kernel_h = kernel_.h,
          .kernel_w = kernel_.w,
          .stride = stride_,
          .padding_h = padding_.h,
          .padding_w = padding_.w,
          .groups = groups_};
}

FlopCount Conv2d::count_flops(std::span<const Shape> /*inputs*/, const Shape& output) const {
  const int64_t outputs = numel(output);
  const int64_t product = 2 * outputs * (in_channels_ / groups_) * kernel_.h * kernel_.w;
  const int64_t bias = has_bias_ ? outputs : 0;
  return {product + bias, 2 * product + bias, product + bias};
}

Tensor Conv2d::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) {
  const Tensor& x = inputs[0];
  const Conv2dGeometry g = geometry(x.shape());
  Tensor y({g.batch, g.out_channels, g.out_height(), g.out_width()}, x.device());
  backend.conv2d_forward(g, x, weight_.value, has_bias_ ? bias_.value : Tensor(), y);
  ctx.saved = {x};
  return y;
}

std::vector<Tensor> Conv2d::run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                         Gradients which) {
  const Tensor& x = ctx.saved[0];
  const Conv2dGeometry g = geometry(x.shape());
  Tensor dx(x.shape(), x.device());
  backend.conv2d_backward_data(g, grad_output, weight_.value, dx);
  if (which == Gradients::inputs_only) return {dx};
  if (which == Gradients::inputs_deferring_parameters) {
    ctx.deferred = {grad_output};
    return {dx};
  }
  parameter_gradients(backend, grad_output, x);
  return {dx};
}

void Conv2d::parameter_gradients(Backend& backend, const Tensor& grad_output, const Tensor& x) {
  // The backend overwrites dw and db; grad_target/store_grad add them when accumulating.
  Tensor dw = grad_target(weight_);
  Tensor db = has_bias_ ? grad_target(bias_) : Tensor();
  backend.conv2d_backward_weights(geometry(x.shape()), x, grad_output, dw, db);
  store_grad(backend, weight_, dw);
  if (has_bias_) store_grad(backend, bias_, db);
}

void Conv2d::run_backward_parameters(Context& ctx) {
  const Tensor& grad_output = ctx.deferred[0];
  parameter_gradients(backend_for(grad_output.device()), grad_output, ctx.saved[0]);
}

std::vector<Parameter*> Conv2d::parameters() {
  if (has_bias_) return {&weight_, &bias_};
  return {&weight_};
}

void Conv2d::init_parameters(Rng& rng) {
  const auto fan_in = static_cast<float>(in_channels_ / groups_ * kernel_.h * kernel_.w);
  const float bound = 1.0f / std::sqrt(fan_in);
  for (Parameter* p : parameters()) {
    fill_uniform(p->value, rng, -bound, bound);
  }
}

}  // namespace interplace::kernels
