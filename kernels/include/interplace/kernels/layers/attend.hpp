// Attend: dot-product attention of queries over a memory, no parameters (the attention of
// an encoder-decoder, Luong et al. 2015's "dot" score, scaled as in Vaswani et al.):
//   inputs  q [B, Tq, D] (decoder states), m [B, S, D] (encoder states)
//   y = softmax(q m^T / sqrt(D)) m                    -> [B, Tq, D] (the context)
// Every memory position is attended (no mask). Built from backend matmul and softmax, so
// it runs on any backend.
// FLOPs (multiply-add = 2): forward 4 B Tq S D + 5 B Tq S (softmax: max, subtract, exp,
// sum, scale); backward 8 B Tq S D + 4 B Tq S.
#pragma once

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class Attend final : public Layer {
 public:
  std::string type() const override { return "Attend"; }
  int input_count() const override { return 2; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;
};

}  // namespace interplace::kernels
