// Elementwise activations, any input shape: ReLU, ReLU6 (clip to [0, 6]), GELU (tanh
// approximation, as GPT-2: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))), Tanh
// (BERT's pooler) and Sigmoid 1 / (1 + exp(-x)) (the gates of the ENAS recurrent cell and
// of LSTMs). At the kinks (x = 0, 6) the gradient is 0, as in PyTorch.
//
// FLOPs per element (tanh counted as one): ReLU forward 1, backward 1; ReLU6 forward 2,
// backward 2; GELU forward 9, backward 18; Tanh forward 1, backward 4 (backward starts
// from the input: tanh, square, subtract from 1, multiply); Sigmoid forward 4 (negate, exp,
// add, divide), backward 4 (from the input: sigmoid counted as one, 1 - s, two multiplies).
#pragma once

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class ActivationLayer : public Layer {
 public:
  Activation kind() const { return kind_; }

 protected:
  explicit ActivationLayer(Activation kind) : kind_(kind) {}
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;

 private:
  Activation kind_;
};

class ReLU final : public ActivationLayer {
 public:
  ReLU() : ActivationLayer(Activation::relu) {}
  std::string type() const override { return "ReLU"; }
};

class ReLU6 final : public ActivationLayer {
 public:
  ReLU6() : ActivationLayer(Activation::relu6) {}
  std::string type() const override { return "ReLU6"; }
};

class GELU final : public ActivationLayer {
 public:
  GELU() : ActivationLayer(Activation::gelu) {}
  std::string type() const override { return "GELU"; }
};

class Tanh final : public ActivationLayer {
 public:
  Tanh() : ActivationLayer(Activation::tanh) {}
  std::string type() const override { return "Tanh"; }
};

class Sigmoid final : public ActivationLayer {
 public:
  Sigmoid() : ActivationLayer(Activation::sigmoid) {}
  std::string type() const override { return "Sigmoid"; }
};

}  // namespace interplace::kernels
