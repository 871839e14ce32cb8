#include "interplace/kernels/layers/reshape.hpp"

#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

Shape Flatten::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (in.size() < 2) {
    throw_invalid("Flatten: input " + to_string(in) +
                  " has no axes after the batch axis to flatten (need rank >= 2)");
  }
  return {in[0], numel(in) / in[0]};
}

FlopCount Flatten::count_flops(std::span<const Shape> /*inputs*/, const Shape& /*output*/) const {
  return {0, 0};
}

Tensor Flatten::run_forward(Backend& /*backend*/, std::span<const Tensor> inputs, Context& ctx) {
  return inputs[0].reshaped(output_shape(ctx.input_shapes));
}

std::vector<Tensor> Flatten::run_backward(Backend& /*backend*/, const Tensor& grad_output,
                                          Context& ctx, Gradients /*which*/) {
  return {grad_output.reshaped(ctx.input_shapes[0])};
}

Reshape::Reshape(Shape per_sample_shape) : per_sample_shape_(std::move(per_sample_shape)) {
  if (per_sample_shape_.empty()) throw_invalid("Reshape: per_sample_shape must not be empty");
  for (int64_t extent : per_sample_shape_) {
    if (extent < 1) {
      throw_invalid("Reshape: per_sample_shape " + to_string(per_sample_shape_) +
                    " must have positive extents");
    }
  }
}

Shape Reshape::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  const int64_t per_sample = in.empty() ? 0 : numel(in) / in[0];
  if (in.empty() || per_sample != numel(per_sample_shape_)) {
    throw_invalid("Reshape to [N] + " + to_string(per_sample_shape_) + ": input " + to_string(in) +
                  " has " + std::to_string(per_sample) + " elements per sample, expected " +
                  std::to_string(numel(per_sample_shape_)));
  }
  Shape out = {in[0]};
  out.insert(out.end(), per_sample_shape_.begin(), per_sample_shape_.end());
  return out;
}

FlopCount Reshape::count_flops(std::span<const Shape> /*inputs*/, const Shape& /*output*/) const {
  return {0, 0};
}

Tensor Reshape::run_forward(Backend& /*backend*/, std::span<const Tensor> inputs, Context& ctx) {
  return inputs[0].reshaped(output_shape(ctx.input_shapes));
}

std::vector<Tensor> Reshape::run_backward(Backend& /*backend*/, const Tensor& grad_output,
                                          Context& ctx, Gradients /*which*/) {
  return {grad_output.reshaped(ctx.input_shapes[0])};
}

}  // namespace interplace::kernels
