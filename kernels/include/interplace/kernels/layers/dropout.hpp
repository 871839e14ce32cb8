// Dropout: in training, y = x * mask with mask = (u >= p) / (1 - p), u uniform in [0, 1);
// identity (the output is the input, no copy) in evaluation mode or when p = 0.
// Masks are reproducible: training forward call n (counted per layer from 0) draws its mask
// from the n-th output of splitmix64(seed), and element i of a mask depends only on that
// and i, so the same seed gives the same sequence of masks on any thread count.
// set_call_counter pins n, e.g. to replay a mask. p must be in [0, 1).
// FLOPs (multiply-add = 2): training forward 1 per element (mask generation not counted),
// backward 1 per element; 0 when the layer is the identity.
#pragma once

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class Dropout final : public Layer {
 public:
  Dropout(float p, uint64_t seed);

  std::string type() const override { return "Dropout"; }
  float p() const { return p_; }
  uint64_t call_counter() const { return call_counter_; }
  void set_call_counter(uint64_t n) { call_counter_ = n; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override { return inputs[0]; }
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;

 private:
  bool is_identity() const { return !training() || p_ == 0.0f; }
  float p_;
  uint64_t seed_;
  uint64_t call_counter_ = 0;
};

}  // namespace interplace::kernels
