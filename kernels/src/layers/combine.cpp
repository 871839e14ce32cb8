#include "interplace/kernels/layers/combine.hpp"

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

Shape Add::infer_output_shape(std::span<const Shape> inputs) const {
  if (inputs.size() < 2) {
    throw_invalid("Add takes two or more inputs, got " + std::to_string(inputs.size()));
  }
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i] != inputs[0]) {
      throw_invalid("Add: input " + std::to_string(i) + " has shape " + to_string(inputs[i]) +
                    " but input 0 has " + to_string(inputs[0]) + "; all must be equal");
    }
  }
  return inputs[0];
}

FlopCount Add::count_flops(std::span<const Shape> inputs, const Shape& output) const {
  return {static_cast<int64_t>(inputs.size() - 1) * numel(output), 0};
}

Tensor Add::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& /*ctx*/) {
  Tensor y(inputs[0].shape(), inputs[0].device());
  backend.add(inputs[0], inputs[1], y);
  for (size_t i = 2; i < inputs.size(); ++i) backend.axpy(1.0f, inputs[i], y);
  return y;
}

std::vector<Tensor> Add::run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                      Gradients /*which*/) {
  std::vector<Tensor> grads = {grad_output};
  for (size_t i = 1; i < ctx.input_shapes.size(); ++i) {
    Tensor copy(grad_output.shape(), grad_output.device());
    backend.copy(grad_output, copy);
    grads.push_back(copy);
  }
  return grads;
}

Shape Concat::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& first = inputs[0];
  if (first.size() < 2) {
    throw_invalid("Concat: inputs must have an axis 1 to join along, input 0 is " +
                  to_string(first));
  }
  Shape out = first;
  for (size_t i = 1; i < inputs.size(); ++i) {
    Shape other = inputs[i];
    if (other.size() == first.size()) other[1] = first[1];
    if (other != first) {
      throw_invalid("Concat: input " + std::to_string(i) + " has shape " + to_string(inputs[i]) +
                    " but input 0 has " + to_string(first) +
                    "; all extents except axis 1 must be equal");
    }
    out[1] += inputs[i][1];
  }
  return out;
}

FlopCount Concat::count_flops(std::span<const Shape> /*inputs*/, const Shape& /*output*/) const {
  return {0, 0};
}

Tensor Concat::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) {
  Tensor y(output_shape(ctx.input_shapes), inputs[0].device());
  int64_t offset = 0;
  for (Tensor slice : inputs) {  // a handle copy: copy_channels takes a mutable slice
    backend.copy_channels(slice, y, offset, /*slice_to_whole=*/true);
    offset += slice.dim(1);
  }
  return y;
}

std::vector<Tensor> Concat::run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                         Gradients /*which*/) {
  std::vector<Tensor> grads;
  Tensor whole = grad_output;
  int64_t offset = 0;
  for (const Shape& shape : ctx.input_shapes) {
    Tensor slice(shape, grad_output.device());
    backend.copy_channels(slice, whole, offset, /*slice_to_whole=*/false);
    offset += shape[1];
    grads.push_back(slice);
  }
  return grads;
}

}  // namespace interplace::kernels
