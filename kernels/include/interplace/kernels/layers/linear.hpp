// Linear: y = x W^T + b over the last axis; x [..., in] -> y [..., out], W [out, in].
#pragma once

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class Linear final : public Layer {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);

  std::string type() const override { return "Linear"; }
  std::vector<Parameter*> parameters() override;
  // PyTorch's default: weight and bias ~ U(-1/sqrt(in), 1/sqrt(in)).
  void init_parameters(Rng& rng) override;

  // dW (+)= dy^T x and db (+)= column sums of dy for dy [rows, out], x [rows, in],
  // accumulating in place when a gradient is already there. Shared with the attention
  // layer's projections.
  static void parameter_gradients(Backend& backend, const Tensor& grad_output, const Tensor& input,
                                  Parameter& weight, Parameter* bias);

  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;
  Deferral deferral() override { return Deferral::own; }
  void run_backward_parameters(Context& ctx) override;

 private:
  int64_t in_features_, out_features_;
  bool has_bias_;
  Parameter weight_, bias_;
};

}  // namespace interplace::kernels
