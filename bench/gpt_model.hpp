// A small GPT (decoder-only Transformer LM, GPT-2's block layout) built from kernel-library
// layers, for the GPU training-step benchmark and its PyTorch peer (gpt_torch.py):
//   token + position embedding, `layers` x [x + attn(LN(x)), x + MLP(LN(x))] with
//   MLP = Linear(d, 4d) -> GELU(tanh) -> Linear(4d, d), final LN, untied linear head.
// Maps token ids [B, T] (T <= positions) to logits [B, T, vocab].
#pragma once

#include <cstdint>
#include <memory>

#include "interplace/kernels/layers/container.hpp"

namespace interplace::bench {

struct GptConfig {
  int64_t vocab = 50257;
  int64_t positions = 256;
  int64_t dim = 512;
  int64_t heads = 8;
  int64_t layers = 4;
};

std::unique_ptr<kernels::Sequential> make_gpt(const GptConfig& config);

}  // namespace interplace::bench
