// Layers that change only the shape; outputs and gradients are views of the same storage
// (no copy). Dimension 0 (the batch) is kept.
//   Flatten: [N, d1, d2, ...] -> [N, d1 * d2 * ...].
//   Reshape(per_sample_shape): [N, ...] -> [N, per_sample_shape...]; the element count per
//            sample must match.
// FLOPs: 0.
#pragma once

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class Flatten final : public Layer {
 public:
  std::string type() const override { return "Flatten"; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;
};

class Reshape final : public Layer {
 public:
  explicit Reshape(Shape per_sample_shape);

  std::string type() const override { return "Reshape"; }
  const Shape& per_sample_shape() const { return per_sample_shape_; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;

 private:
  Shape per_sample_shape_;
};

}  // namespace interplace::kernels
