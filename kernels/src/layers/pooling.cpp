#include "interplace/kernels/layers/pooling.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

namespace {

const char* kind_name(PoolKind kind) {
  return kind == PoolKind::max ? "MaxPool2d" : "AvgPool2d";
}

}  // namespace

Pool2dLayer::Pool2dLayer(PoolKind kind, int64_t kernel, int64_t stride, int64_t padding,
                         bool count_include_pad)
    : kind_(kind),
      kernel_(kernel),
      stride_(stride),
      padding_(padding),
      count_include_pad_(count_include_pad) {
  const std::string name = kind_name(kind);
  if (kernel < 1) throw_invalid(name + ": kernel must be >= 1, got " + std::to_string(kernel));
  if (stride < 1) throw_invalid(name + ": stride must be >= 1, got " + std::to_string(stride));
  // More would let a window lie entirely in the padding (as PyTorch, we refuse).
  if (padding < 0 || 2 * padding > kernel) {
    throw_invalid(name + ": padding must be in [0, kernel/2] = [0, " + std::to_string(kernel / 2) +
                  "], got " + std::to_string(padding));
  }
}

Shape Pool2dLayer::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  const std::string name = type() + "(kernel " + std::to_string(kernel_) + ", stride " +
                           std::to_string(stride_) + ", padding " + std::to_string(padding_) + ")";
  if (in.size() != 4) throw_invalid(name + ": input must be [N, C, H, W], got " + to_string(in));
  if (in[2] + 2 * padding_ < kernel_ || in[3] + 2 * padding_ < kernel_) {
    throw_invalid(name + ": kernel " + std::to_string(kernel_) +
                  " is larger than the padded input " + std::to_string(in[2]) + "x" +
                  std::to_string(in[3]));
  }
  const Pool2dGeometry g = geometry(in);
  return {in[0], in[1], g.out_height(), g.out_width()};
}

Pool2dGeometry Pool2dLayer::geometry(const Shape& input) const {
  return {.kind = kind_,
          .batch = input[0],
          .channels = input[1],
          .in_height = input[2],
          .in_width = input[3],
          .kernel = kernel_,
          .stride = stride_,
          .padding = padding_,
          .count_include_pad = count_include_pad_};
}

FlopCount Pool2dLayer::count_flops(std::span<const Shape> /*inputs*/, const Shape& output) const {
  const int64_t outputs = numel(output);
  const int64_t window = outputs * kernel_ * kernel_;
  return {window, kind_ == PoolKind::max ? outputs : window};
}

Tensor Pool2dLayer::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) {
  const Tensor& x = inputs[0];
  const Pool2dGeometry g = geometry(x.shape());
  Tensor y({g.batch, g.channels, g.out_height(), g.out_width()}, x.device());
  Tensor workspace;  // the arg-max positions of max pooling, owned by this call's ctx
  backend.pool2d_forward(g, x, y, workspace);
  ctx.saved = {workspace};
  return y;
}

std::vector<Tensor> Pool2dLayer::run_backward(Backend& backend, const Tensor& grad_output,
                                              Context& ctx, Gradients /*which*/) {
  const Shape& in = ctx.input_shapes[0];
  Tensor dx(in, grad_output.device());
  backend.pool2d_backward(geometry(in), grad_output, ctx.saved[0], dx);
  return {dx};
}

}  // namespace interplace::kernels
