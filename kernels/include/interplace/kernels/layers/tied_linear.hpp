// TiedLinear: y = x W^T over the last axis, x [..., in] -> y [..., out], with a weight
// W [out, in] that belongs to another layer: GPT-2's LM head shares the token embedding
// table. The layer owns no parameters (parameter_count 0, parameters() empty); bind()
// points it at the owner's Parameter before the first forward. Backward adds dW into the
// owner's gradient with the usual rule (overwrite after zero_grad, add otherwise), so
// when owner and head live in one process the shared weight gets the sum of both
// gradients and the optimiser, which sees the parameter only through its owner, steps it
// once. (A head on another process binds to a replica: see zoo.hpp.)
// FLOPs as Linear without bias: forward 2 rows in out, backward twice that.
#pragma once

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class TiedLinear final : public Layer {
 public:
  TiedLinear(int64_t in_features, int64_t out_features);

  std::string type() const override { return "TiedLinear"; }
  // Throws invalid_input unless `weight` is a [out, in] tensor.
  void bind(Parameter& weight);
  bool bound() const { return weight_ != nullptr; }
  Parameter* weight() { return weight_; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;
  Deferral deferral() override { return Deferral::own; }
  void run_backward_parameters(Context& ctx) override;

 private:
  Parameter& bound_weight() const;
  int64_t in_features_, out_features_;
  Parameter* weight_ = nullptr;
};

}  // namespace interplace::kernels
