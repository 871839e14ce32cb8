#include "interplace/kernels/layers/elementwise.hpp"

#include <cmath>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

Shape Multiply::infer_output_shape(std::span<const Shape> inputs) const {
  if (inputs[1] != inputs[0]) {
    throw_invalid("Multiply: input 1 has shape " + to_string(inputs[1]) + " but input 0 has " +
                  to_string(inputs[0]) + "; both must be equal");
  }
  return inputs[0];
}

FlopCount Multiply::count_flops(std::span<const Shape> /*inputs*/, const Shape& output) const {
  return {numel(output), 2 * numel(output)};
}

Tensor Multiply::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) {
  Tensor y(inputs[0].shape(), inputs[0].device());
  backend.multiply(inputs[0], inputs[1], y);
  ctx.saved = {inputs[0], inputs[1]};
  return y;
}

std::vector<Tensor> Multiply::run_backward(Backend& backend, const Tensor& grad_output,
                                           Context& ctx, Gradients /*which*/) {
  const Tensor& a = ctx.saved[0];
  const Tensor& b = ctx.saved[1];
  Tensor da(a.shape(), a.device());
  Tensor db(b.shape(), b.device());
  backend.multiply(grad_output, b, da);
  backend.multiply(grad_output, a, db);
  return {da, db};
}

Affine::Affine(float scale, float shift) : scale_(scale), shift_(shift) {
  if (!std::isfinite(scale) || !std::isfinite(shift)) {
    throw_invalid("Affine: scale and shift must be finite, got scale=" + std::to_string(scale) +
                  " shift=" + std::to_string(shift));
  }
}

Shape Affine::infer_output_shape(std::span<const Shape> inputs) const {
  return inputs[0];
}

FlopCount Affine::count_flops(std::span<const Shape> /*inputs*/, const Shape& output) const {
  return {2 * numel(output), numel(output)};
}

// fill then axpy: two passes, but only kernels every backend already has.
Tensor Affine::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& /*ctx*/) {
  Tensor y(inputs[0].shape(), inputs[0].device());
  backend.fill(y, shift_);
  backend.axpy(scale_, inputs[0], y);
  return y;
}

std::vector<Tensor> Affine::run_backward(Backend& backend, const Tensor& grad_output,
                                         Context& /*ctx*/, Gradients /*which*/) {
  Tensor dx(grad_output.shape(), grad_output.device());
  backend.copy(grad_output, dx);
  backend.scale(scale_, dx);
  return {dx};
}

Slice::Slice(int64_t offset, int64_t length) : offset_(offset), length_(length) {
  if (offset < 0 || length < 1) {
    throw_invalid("Slice: offset must be >= 0 and length >= 1, got offset=" +
                  std::to_string(offset) + " length=" + std::to_string(length));
  }
}

Shape Slice::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (in.size() < 2 || offset_ + length_ > in[1]) {
    throw_invalid("Slice [" + std::to_string(offset_) + ", " + std::to_string(offset_ + length_) +
                  ") of axis 1: input " + to_string(in) + " has no such channels");
  }
  Shape out = in;
  out[1] = length_;
  return out;
}

FlopCount Slice::count_flops(std::span<const Shape> /*inputs*/, const Shape& /*output*/) const {
  return {0, 0};
}

Tensor Slice::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) {
  Tensor y(output_shape(ctx.input_shapes), inputs[0].device());
  Tensor whole = inputs[0];  // a handle copy: copy_channels takes a mutable whole
  backend.copy_channels(y, whole, offset_, /*slice_to_whole=*/false);
  return y;
}

std::vector<Tensor> Slice::run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                        Gradients /*which*/) {
  Tensor dx(ctx.input_shapes[0], grad_output.device());
  backend.fill(dx, 0.0f);
  Tensor dy = grad_output;
  backend.copy_channels(dy, dx, offset_, /*slice_to_whole=*/true);
  return {dx};
}

}  // namespace interplace::kernels
