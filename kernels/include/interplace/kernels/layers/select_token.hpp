// SelectToken(index): one position of a sequence, x [B, T, D] -> y [B, D] with
// y[b] = x[b, index]; BERT's pooler reads the first token (index 0). Backward writes the
// gradient into that position and zeros into every other one. index < T is checked
// against the input.
// FLOPs: 0 (data movement only).
#pragma once

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class SelectToken final : public Layer {
 public:
  explicit SelectToken(int64_t index = 0);

  std::string type() const override { return "SelectToken"; }
  int64_t index() const { return index_; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;

 private:
  int64_t index_;
};

}  // namespace interplace::kernels
