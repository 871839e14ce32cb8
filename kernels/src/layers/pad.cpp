#include "interplace/kernels/layers/pad.hpp"

#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

Pad2d::Pad2d(int64_t top, int64_t bottom, int64_t left, int64_t right)
    : top_(top), bottom_(bottom), left_(left), right_(right) {}

Shape Pad2d::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  const std::string name = "Pad2d(top " + std::to_string(top_) + ", bottom " +
                           std::to_string(bottom_) + ", left " + std::to_string(left_) +
                           ", right " + std::to_string(right_) + ")";
  if (in.size() != 4) throw_invalid(name + ": input must be [N, C, H, W], got " + to_string(in));
  const Pad2dGeometry g = geometry(in);
  if (g.out_height() < 1 || g.out_width() < 1) {
    throw_invalid(name + ": cropping input " + to_string(in) + " leaves an empty " +
                  std::to_string(g.out_height()) + "x" + std::to_string(g.out_width()) + " output");
  }
  return {in[0], in[1], g.out_height(), g.out_width()};
}

Pad2dGeometry Pad2d::geometry(const Shape& input) const {
  return {.batch = input[0],
          .channels = input[1],
          .in_height = input[2],
          .in_width = input[3],
          .top = top_,
          .bottom = bottom_,
          .left = left_,
          .right = right_};
}

FlopCount Pad2d::count_flops(std::span<const Shape> /*inputs*/, const Shape& /*output*/) const {
  return {0, 0};
}

Tensor Pad2d::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& /*ctx*/) {
  const Tensor& x = inputs[0];
  const Pad2dGeometry g = geometry(x.shape());
  Tensor y({g.batch, g.channels, g.out_height(), g.out_width()}, x.device());
  backend.pad2d_forward(g, x, y);
  return y;
}

std::vector<Tensor> Pad2d::run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                        Gradients /*which*/) {
  Tensor dx(ctx.input_shapes[0], grad_output.device());
  backend.pad2d_backward(geometry(ctx.input_shapes[0]), grad_output, dx);
  return {dx};
}

}  // namespace interplace::kernels
