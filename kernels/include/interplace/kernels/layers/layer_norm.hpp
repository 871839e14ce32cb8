// LayerNorm over the last axis: y = (x - mean) / sqrt(var + epsilon) * weight + bias, with
// each row's biased variance; x [..., features]. Parameters "weight" (init 1) and "bias"
// (init 0), both without weight decay.
// FLOPs (multiply-add = 2) per element: forward 8 (mean 1, variance 3, normalise 2, scale
// and shift 2); backward 13 (input gradient 10, weight and bias gradients 3).
#pragma once

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class LayerNorm final : public Layer {
 public:
  explicit LayerNorm(int64_t features, float epsilon = 1e-5f);

  std::string type() const override { return "LayerNorm"; }
  std::vector<Parameter*> parameters() override { return {&weight_, &bias_}; }
  // Resets weight to 1 and bias to 0 (the rng is not used).
  void init_parameters(Rng& rng) override;

  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }
  float epsilon() const { return epsilon_; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;
  Deferral deferral() override { return Deferral::own; }
  void run_backward_parameters(Context& ctx) override;

 private:
  int64_t features_;
  float epsilon_;
  Parameter weight_, bias_;
};

}  // namespace interplace::kernels
