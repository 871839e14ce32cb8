// Layers that join several tensors.
//   Add:    y = x0 + x1 + ... over two or more inputs of one shape. Backward hands the
//           output gradient to every input (the first gets grad_output itself, the others
//           copies, so no two returned gradients share storage).
//           FLOPs: forward (inputs - 1) per element, backward 0 (copies only).
//   Concat: joins inputs [N, C_i, ...] along axis 1 into [N, sum C_i, ...]; all other
//           extents must be equal. FLOPs: 0 (data movement only).
#pragma once

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class Add final : public Layer {
 public:
  std::string type() const override { return "Add"; }
  int input_count() const override { return -1; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;
};

class Concat final : public Layer {
 public:
  std::string type() const override { return "Concat"; }
  int input_count() const override { return -1; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;
};

}  // namespace interplace::kernels
