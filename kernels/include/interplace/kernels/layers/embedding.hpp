// GPT-2's input embedding: token ids [B, T] (integers stored as floats) -> [B, T, dim] with
// y[b, t] = token_table[ids[b, t]] + position_table[t]. Parameters "token_table"
// [vocab_size, dim] and "position_table" [max_positions, dim], both N(0, 0.02) and with
// weight decay (as nanoGPT). The ids are not differentiable: backward returns an undefined
// Tensor() for them. A bad id or T > max_positions is an invalid_input error.
// FLOPs (multiply-add = 2): forward B*T*dim (one add per element); backward 2*B*T*dim
// (accumulating into both tables).
#pragma once

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class Embedding final : public Layer {
 public:
  Embedding(int64_t vocab_size, int64_t max_positions, int64_t dim);

  std::string type() const override { return "Embedding"; }
  std::vector<Parameter*> parameters() override { return {&token_table_, &position_table_}; }
  void init_parameters(Rng& rng) override;

  Parameter& token_table() { return token_table_; }
  Parameter& position_table() { return position_table_; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output,
                                   Context& ctx) override;

 private:
  int64_t vocab_size_, max_positions_, dim_;
  Parameter token_table_, position_table_;
};

}  // namespace interplace::kernels
