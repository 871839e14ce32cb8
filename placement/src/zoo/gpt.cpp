// GPT-2-style decoder-only language models (Radford et al. 2019, nanoGPT's layout): token
// plus learned position embedding, pre-LN blocks
//   h.i.ln_1 -> h.i.attn (causal) -> h.i.add_1 (residual)
//   h.i.ln_2 -> h.i.mlp.fc (dim -> 4 dim) -> h.i.mlp.gelu -> h.i.mlp.proj -> h.i.add_2
// a final LayerNorm ln_f and the LM head, a bias-free Linear(dim, vocab) tied to the token
// table of "embed" (a tied_linear node, parameter_count 0; see zoo.hpp). The graph ends at
// the logits [B, T, vocab]; the loss (next-token cross-entropy) belongs to the runtime.
// No dropout nodes (nanoGPT's default for small models is 0).
#include "interplace/kernels/error.hpp"
#include "model_builder.hpp"
#include "models.hpp"
#include "transformer_config.hpp"

namespace interplace::placement::zoo {

namespace {

constexpr double kLayerNormEpsilon = 1e-5;

NodeId layer_norm(ModelBuilder& b, const std::string& name, NodeId x, int64_t dim) {
  return b.layer(name, "layer_norm", {{"features", dim}, {"epsilon", kLayerNormEpsilon}}, {x});
}

NodeId block(ModelBuilder& b, const std::string& prefix, NodeId x, const TransformerConfig& c) {
  NodeId h = layer_norm(b, prefix + "ln_1", x, c.dim);
  h = b.layer(prefix + "attn", "causal_self_attention", {{"dim", c.dim}, {"heads", c.heads}}, {h});
  x = b.layer(prefix + "add_1", "add", {}, {x, h});
  h = layer_norm(b, prefix + "ln_2", x, c.dim);
  h = b.layer(prefix + "mlp.fc", "linear", {{"in_features", c.dim}, {"out_features", 4 * c.dim}},
              {h});
  h = b.layer(prefix + "mlp.gelu", "gelu", {}, {h});
  h = b.layer(prefix + "mlp.proj", "linear", {{"in_features", 4 * c.dim}, {"out_features", c.dim}},
              {h});
  return b.layer(prefix + "add_2", "add", {}, {x, h});
}

}  // namespace

Graph build_gpt(std::string_view name, const TransformerConfig& preset,
                const ModelOptions& options) {
  const TransformerConfig c = resolve_transformer(name, preset, options);
  if (options.classes > 0) {
    throw_invalid("model " + std::string(name) + ": a language model takes no classes (its " +
                  "outputs are the vocabulary; set vocab_size)");
  }
  ModelBuilder b(std::string(name), options.batch_size);
  NodeId x = b.input("input_ids", {c.sequence_length});
  x = b.layer("embed", "embedding",
              {{"vocab_size", c.vocab_size}, {"max_positions", c.max_positions}, {"dim", c.dim}},
              {x});
  for (int64_t i = 0; i < c.layers; ++i) x = block(b, "h." + std::to_string(i) + ".", x, c);
  x = layer_norm(b, "ln_f", x, c.dim);
  b.layer("lm_head", "tied_linear",
          {{"in_features", c.dim},
           {"out_features", c.vocab_size},
           {"tied_to", std::string("embed")},
           {"tied_parameter", std::string("token_table")}},
          {x});
  return b.take();
}

}  // namespace interplace::placement::zoo
