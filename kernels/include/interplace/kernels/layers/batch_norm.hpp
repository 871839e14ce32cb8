// BatchNorm2d over x [N, C, H, W], per channel over N, H, W:
// y = gamma * (x - mean) / sqrt(var + epsilon) + beta.
// Training normalises with the batch mean and biased batch variance and updates the
// running statistics as PyTorch does: running = (1 - momentum) * running +
// momentum * batch, with the unbiased variance (times n / (n - 1), n = N*H*W) for
// running_var. Eval mode (set_training(false)) normalises with the running statistics.
//
// FLOPs per element of x (per-channel work is ignored): forward 6 in training (mean 1,
// variance 3, scale-and-shift 2) and 2 in eval; backward 9 in training (beta gradient 1,
// normalised input and gamma gradient 4, input gradient 4) and 6 in eval (input
// gradient 1, beta 1, gamma 4).
#pragma once

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class BatchNorm2d final : public Layer {
 public:
  explicit BatchNorm2d(int64_t channels, float epsilon = 1e-5f, float momentum = 0.1f);

  std::string type() const override { return "BatchNorm2d"; }
  std::vector<Parameter*> parameters() override { return {&weight_, &bias_}; }
  std::vector<Tensor*> buffers() override { return {&running_mean_, &running_var_}; }
  // gamma = 1, beta = 0, running_mean = 0, running_var = 1 (no randomness).
  void init_parameters(Rng& rng) override;

  Parameter& weight() { return weight_; }  // gamma
  Parameter& bias() { return bias_; }      // beta
  Tensor& running_mean() { return running_mean_; }
  Tensor& running_var() { return running_var_; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;
  Deferral deferral() override { return Deferral::own; }
  void run_backward_parameters(Context& ctx) override;

 private:
  void update_running_statistics(Backend& backend, const Tensor& mean, const Tensor& variance,
                                 int64_t count);
  std::vector<Tensor> backward_eval(Backend& backend, const Tensor& grad_output, Context& ctx,
                                    Gradients which);
  // Eval mode's scale/shift gradients for output gradient dy.
  void parameter_gradients_eval(Backend& backend, const Tensor& grad_output, const Context& ctx);

  int64_t channels_;
  float epsilon_, momentum_;
  Parameter weight_, bias_;
  Tensor running_mean_, running_var_;
};

}  // namespace interplace::kernels
