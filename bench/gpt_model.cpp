#include "gpt_model.hpp"

#include "interplace/kernels/layers/activation.hpp"
#include "interplace/kernels/layers/attention.hpp"
#include "interplace/kernels/layers/embedding.hpp"
#include "interplace/kernels/layers/layer_norm.hpp"
#include "interplace/kernels/layers/linear.hpp"

namespace interplace::bench {

using namespace interplace::kernels;

namespace {

// x + f(x): a Residual with the identity shortcut.
std::unique_ptr<Layer> residual(std::unique_ptr<Sequential> f) {
  return std::make_unique<Residual>(std::move(f), nullptr);
}

}  // namespace

std::unique_ptr<Sequential> make_gpt(const GptConfig& c) {
  auto net = std::make_unique<Sequential>();
  net->emplace<Embedding>(c.vocab, c.positions, c.dim);
  for (int64_t i = 0; i < c.layers; ++i) {
    auto attention = std::make_unique<Sequential>();
    attention->emplace<LayerNorm>(c.dim);
    attention->emplace<CausalSelfAttention>(c.dim, c.heads);
    net->add(residual(std::move(attention)));
    auto mlp = std::make_unique<Sequential>();
    mlp->emplace<LayerNorm>(c.dim);
    mlp->emplace<Linear>(c.dim, 4 * c.dim);
    mlp->emplace<GELU>();
    mlp->emplace<Linear>(4 * c.dim, c.dim);
    net->add(residual(std::move(mlp)));
  }
  net->emplace<LayerNorm>(c.dim);
  net->emplace<Linear>(c.dim, c.vocab, /*bias=*/false);
  return net;
}

}  // namespace interplace::bench
