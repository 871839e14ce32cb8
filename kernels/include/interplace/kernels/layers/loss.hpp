// SoftmaxCrossEntropy: inputs logits [rows, classes] (or [B, T, classes], flattened to rows)
// and integer labels stored as floats, shaped as the logits without their last axis (or
// flat [rows]); output a [1] tensor holding the mean loss over rows. Backward takes that
// [1] gradient g and returns dlogits = (softmax - onehot) * g / rows, and an undefined
// Tensor() for the labels. A label that is not an integer in [0, classes) is an
// invalid_input error. The number of rows whose arg-max (first maximum) equals the label
// is kept in the Context: read it with correct_count(ctx) for accuracy reports.
// FLOPs (multiply-add = 2): forward 5 per logit (max, subtract, exp, sum, normalise) + 2
// per row (log, subtract); backward 1 per logit + 1 per row.
#pragma once

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class SoftmaxCrossEntropy final : public Layer {
 public:
  std::string type() const override { return "SoftmaxCrossEntropy"; }
  int input_count() const override { return 2; }

  // Rows predicted correctly by the forward call that filled `ctx` (exact up to 2^24 rows).
  static int64_t correct_count(const Context& ctx);

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;
};

}  // namespace interplace::kernels
