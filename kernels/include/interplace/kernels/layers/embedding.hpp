// Input embedding of GPT-2 and BERT: token ids [B, T] (integers stored as floats) ->
// [B, T, dim] with y[b, t] = token_table[ids[b, t]] + position_table[t], plus, when the
// layer has token types (BERT's segments), token_type_table[type_ids[b, t]].
// Parameters "token_table" [vocab_size, dim], "position_table" [max_positions, dim] and,
// with token_types > 0, "token_type_table" [token_types, dim]; all N(0, 0.02) and with
// weight decay (as nanoGPT and BERT).
// Inputs: the token ids, and with token types optionally the type ids [B, T] as a second
// input; without it every token has type 0 (a single segment, as a language model's
// input), so the table still trains its row 0. Ids are not differentiable: backward
// returns an undefined Tensor() for each input. A bad id (token or type) or
// T > max_positions is an invalid_input error.
// FLOPs (multiply-add = 2): forward B*T*dim per table after the first (one add per
// element and table); backward B*T*dim per table (accumulating into each).
#pragma once

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class Embedding final : public Layer {
 public:
  // token_types = 0: no token-type table (GPT-2).
  Embedding(int64_t vocab_size, int64_t max_positions, int64_t dim, int64_t token_types = 0);

  std::string type() const override { return "Embedding"; }
  // With token types: the ids, or the ids and the type ids (checked in output_shape).
  int input_count() const override { return token_types_ > 0 ? -1 : 1; }
  std::vector<Parameter*> parameters() override;
  void init_parameters(Rng& rng) override;

  int64_t token_types() const { return token_types_; }
  Parameter& token_table() { return token_table_; }
  Parameter& position_table() { return position_table_; }
  Parameter& token_type_table() { return token_type_table_; }  // empty without token types

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;

 private:
  int64_t vocab_size_, max_positions_, dim_, token_types_;
  Parameter token_table_, position_table_, token_type_table_;
};

}  // namespace interplace::kernels
