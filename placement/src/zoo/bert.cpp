// BERT encoders (Devlin et al. 2019; Hugging Face's BertModel): token + position +
// token-type embedding and its LayerNorm, post-LN layers
//   encoder.layer.i.attention (bidirectional) -> .attention_add -> .attention_norm
//   encoder.layer.i.intermediate (dim -> 4 dim) -> .intermediate_act (GELU)
//     -> .output (4 dim -> dim) -> .output_add -> .output_norm
// and the pooler: pooler.select (the first token) -> pooler.dense -> pooler.activation
// (tanh). LayerNorm epsilon 1e-12 as BERT. With ModelOptions.classes a "classifier"
// Linear(dim, classes) follows the pooler (sequence classification). The one input is
// input_ids: every token has type 0 (the embedding would take type ids as a second input).
// Differences from the original: GELU is the tanh approximation (BERT uses erf; same
// parameters and nearly the same values), no dropout nodes, no padding mask (sequences
// are full length).
#include "model_builder.hpp"
#include "models.hpp"
#include "transformer_config.hpp"

namespace interplace::placement::zoo {

namespace {

constexpr double kLayerNormEpsilon = 1e-12;
constexpr int64_t kTokenTypes = 2;

NodeId layer_norm(ModelBuilder& b, const std::string& name, NodeId x, int64_t dim) {
  return b.layer(name, "layer_norm", {{"features", dim}, {"epsilon", kLayerNormEpsilon}}, {x});
}

NodeId linear(ModelBuilder& b, const std::string& name, NodeId x, int64_t in, int64_t out) {
  return b.layer(name, "linear", {{"in_features", in}, {"out_features", out}}, {x});
}

NodeId encoder_layer(ModelBuilder& b, const std::string& prefix, NodeId x,
                     const TransformerConfig& c) {
  NodeId h =
      b.layer(prefix + "attention", "self_attention", {{"dim", c.dim}, {"heads", c.heads}}, {x});
  h = b.layer(prefix + "attention_add", "add", {}, {x, h});
  x = layer_norm(b, prefix + "attention_norm", h, c.dim);
  h = linear(b, prefix + "intermediate", x, c.dim, 4 * c.dim);
  h = b.layer(prefix + "intermediate_act", "gelu", {}, {h});
  h = linear(b, prefix + "output", h, 4 * c.dim, c.dim);
  h = b.layer(prefix + "output_add", "add", {}, {x, h});
  return layer_norm(b, prefix + "output_norm", h, c.dim);
}

}  // namespace

Graph build_bert(std::string_view name, const TransformerConfig& preset,
                 const ModelOptions& options) {
  const TransformerConfig c = resolve_transformer(name, preset, options);
  ModelBuilder b(std::string(name), options.batch_size);
  NodeId x = b.input("input_ids", {c.sequence_length});
  x = b.layer("embeddings", "embedding",
              {{"vocab_size", c.vocab_size},
               {"max_positions", c.max_positions},
               {"dim", c.dim},
               {"token_types", kTokenTypes}},
              {x});
  x = layer_norm(b, "embeddings.LayerNorm", x, c.dim);
  for (int64_t i = 0; i < c.layers; ++i) {
    x = encoder_layer(b, "encoder.layer." + std::to_string(i) + ".", x, c);
  }
  x = b.layer("pooler.select", "select_token", {{"index", int64_t{0}}}, {x});
  x = linear(b, "pooler.dense", x, c.dim, c.dim);
  x = b.layer("pooler.activation", "tanh", {}, {x});
  if (options.classes > 0) linear(b, "classifier", x, c.dim, options.classes);
  return b.take();
}

}  // namespace interplace::placement::zoo
