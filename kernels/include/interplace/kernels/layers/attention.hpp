// Multi-head self-attention, causal (GPT-2) or bidirectional (BERT): x [B, T, dim] ->
//   [q k v] = x Wqkv^T + bqkv                        (Wqkv [3 dim, dim], q/k/v [B, T, dim])
//   per head h: a = softmax(q_h k_h^T / sqrt(dim / heads)) v_h, where the causal layer
//               masks keys after the query's position (probability 0)
//   y = merge_heads(a) Wproj^T + bproj               (Wproj [dim, dim])
// Parameters "qkv.weight", "qkv.bias", "proj.weight", "proj.bias": 4 dim^2 + 4 dim, as
// GPT-2 and BERT (whose separate q, k, v projections hold the same numbers). Weights init
// N(0, 0.02), biases 0 (GPT-2's depth scaling of proj.weight is the model's business).
// Built only from backend ops, so it runs on any backend. Every position attends (no
// padding mask): sequences are full length.
// FLOPs (multiply-add = 2; N = B*T): forward 8 N dim^2 + 4 N dim (projections with bias)
// + 4 B T^2 dim (scores and weighted sum, computed in full) + 5 per unmasked score
// (softmax: max, subtract, exp, sum, scale; B*heads*T(T+1)/2 of them when causal,
// B*heads*T^2 otherwise); backward 16 N dim^2 + 4 N dim + 8 B T^2 dim + 4 per unmasked
// score. Head split/merge copies cost no FLOPs.
#pragma once

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class SelfAttention : public Layer {
 public:
  SelfAttention(int64_t dim, int64_t heads, bool causal);

  std::string type() const override { return causal_ ? "CausalSelfAttention" : "SelfAttention"; }
  std::vector<Parameter*> parameters() override {
    return {&qkv_weight_, &qkv_bias_, &proj_weight_, &proj_bias_};
  }
  void init_parameters(Rng& rng) override;

  int64_t dim() const { return dim_; }
  int64_t heads() const { return heads_; }
  bool causal() const { return causal_; }
  Parameter& qkv_weight() { return qkv_weight_; }
  Parameter& qkv_bias() { return qkv_bias_; }
  Parameter& proj_weight() { return proj_weight_; }
  Parameter& proj_bias() { return proj_bias_; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;
  Deferral deferral() override { return Deferral::own; }
  void run_backward_parameters(Context& ctx) override;

 private:
  int64_t dim_, heads_, head_dim_;
  bool causal_;
  Parameter qkv_weight_, qkv_bias_, proj_weight_, proj_bias_;
};

// GPT-2's attention under its original name: SelfAttention with the causal mask.
class CausalSelfAttention final : public SelfAttention {
 public:
  CausalSelfAttention(int64_t dim, int64_t heads) : SelfAttention(dim, heads, true) {}
};

}  // namespace interplace::kernels
