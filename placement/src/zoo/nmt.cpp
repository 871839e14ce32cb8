// An attention encoder-decoder (the "nmt" family of the device-placement literature:
// Mirhoseini et al. 2017 and Placeto place GNMT-style models; Luong et al. 2015's global
// dot attention), with LSTM layers unrolled over time as op-level nodes and every weight
// shared across time steps (recurrent_builder.hpp):
//   LSTM cell, per gate g in {i, f, o, u}: a_g = x W_xg + h_{t-1} W_hg (bias-free),
//     i, f, o = sigmoid(a), u = tanh(a); c_t = f * c_{t-1} + i * u; h_t = o * tanh(c_t).
//     The encoder starts from the zero state (step 0 has no h or f terms), decoder layer l
//     from encoder layer l's last (h, c).
//   Attention on the top decoder layer: context_t = Attend(h_t, E) with E the encoder's
//     top-layer states [B, S, D] (attend.hpp); attentional state
//     a_t = tanh(context_t W_c + h_t W_a).
//   Output: the a_t concatenated to [B, T, D], one linear head to the 256 bytes.
// The task (docs/models.md): "shift" on the byte-level text corpus. The encoder reads a
// window x[0..T) (source embedding), the decoder is fed x[t] (target embedding; teacher
// forcing, x[0] standing for the start symbol) and predicts x[t + 1], the data set's
// next-byte labels: the target is the source shifted by one byte, which the decoder can
// find by attending to source position t + 1. The synthetic data set feeds it too.
// A seed draws the shape, each unless the option is set: layers (per side) in 1..4, dim
// in {64, 128, 256, 512}, sequence_length in 8..24 (source and target).
#include <string>
#include <vector>

#include "../seeded_random.hpp"
#include "interplace/kernels/error.hpp"
#include "model_builder.hpp"
#include "models.hpp"
#include "recurrent_builder.hpp"

namespace interplace::placement::zoo {

namespace {

struct LstmState {
  NodeId h = -1, c = -1;  // -1: the zero state
};

class LstmBuilder {
 public:
  LstmBuilder(RecurrentBuilder& r, int64_t dim) : r_(r), dim_(dim) {}

  // One step of the layer whose weights are named by `layer` ("enc0"); `name` prefixes
  // the nodes.
  LstmState step(const std::string& name, const std::string& layer, NodeId x, LstmState state) {
    const bool zero = state.h < 0;
    const auto gate = [&](const std::string& g, const char* activation) {
      NodeId a = r_.shared_linear(name + ".x" + g, layer + ".w_x" + g, x, dim_);
      if (!zero) {
        a = r_.add(name + "." + g + "_sum", a,
                   r_.shared_linear(name + ".h" + g, layer + ".w_h" + g, state.h, dim_));
      }
      return r_.unary(name + "." + g, activation, a);
    };
    const NodeId i = gate("i", "sigmoid");
    const NodeId u = gate("u", "tanh");
    NodeId c = r_.multiply(name + ".iu", i, u);
    if (state.c >= 0) {
      const NodeId f = gate("f", "sigmoid");
      c = r_.add(name + ".c", r_.multiply(name + ".fc", f, state.c), c);
    }
    const NodeId o = gate("o", "sigmoid");
    const NodeId h = r_.multiply(name + ".h", o, r_.unary(name + ".c_tanh", "tanh", c));
    return {h, c};
  }

 private:
  RecurrentBuilder& r_;
  int64_t dim_;
};

}  // namespace

Graph build_nmt(std::string_view name, const ModelOptions& options, uint64_t seed) {
  check_options(name, options);
  if (options.classes > 0 || options.image_size > 0 || options.in_channels > 0 ||
      options.heads > 0) {
    throw_invalid("model " + std::string(name) +
                  ": an encoder-decoder takes no classes, image_size, in_channels or heads (set "
                  "layers, dim, sequence_length, vocab_size)");
  }
  kernels::Rng rng(seed);
  const int64_t drawn_layers = 1 + static_cast<int64_t>(detail::uniform_index(rng, 4));
  const int64_t drawn_dim = int64_t{64} << detail::uniform_index(rng, 4);
  const int64_t drawn_length = 8 + static_cast<int64_t>(detail::uniform_index(rng, 17));
  const int64_t layers = scaled_depth(or_default(options.layers, drawn_layers), options);
  const int64_t dim = or_default(options.dim, drawn_dim);
  const int64_t steps = or_default(options.sequence_length, drawn_length);
  const int64_t vocab = or_default(options.vocab_size, 256);
  if (options.max_positions > 0 && options.max_positions < steps) {
    throw_invalid("model " + std::string(name) + ": max_positions " +
                  std::to_string(options.max_positions) + " is below sequence_length " +
                  std::to_string(steps));
  }
  const Attributes embedding = {{"vocab_size", vocab},
                                {"max_positions", or_default(options.max_positions, steps)},
                                {"dim", dim}};

  ModelBuilder b(std::string(name), options.batch_size);
  RecurrentBuilder r(b);
  LstmBuilder lstm(r, dim);
  const NodeId ids = b.input("input_ids", {steps});
  const NodeId source = b.layer("src_embed", "embedding", embedding, {ids});
  const NodeId target = b.layer("tgt_embed", "embedding", embedding, {ids});

  std::vector<LstmState> state(static_cast<size_t>(layers));
  std::vector<NodeId> encoded;
  for (int64_t t = 0; t < steps; ++t) {
    NodeId x = r.step(indexed("enc.t", t) + ".x", source, t);
    for (int64_t l = 0; l < layers; ++l) {
      const std::string layer = indexed("enc", l);
      auto& s = state[static_cast<size_t>(l)];
      s = lstm.step(layer + indexed(".t", t), layer, x, s);
      x = s.h;
    }
    encoded.push_back(x);
  }
  const NodeId memory =
      encoded.size() == 1 ? encoded[0] : b.layer("enc.states", "concat", {}, encoded);

  std::vector<NodeId> attentional;
  for (int64_t t = 0; t < steps; ++t) {
    const std::string p = indexed("dec.t", t);
    NodeId x = r.step(p + ".x", target, t);
    for (int64_t l = 0; l < layers; ++l) {
      const std::string layer = indexed("dec", l);
      auto& s = state[static_cast<size_t>(l)];
      s = lstm.step(layer + indexed(".t", t), layer, x, s);
      x = s.h;
    }
    const NodeId context = b.layer(p + ".attend", "attend", {}, {x, memory});
    const NodeId mixed = r.add(p + ".mix", r.shared_linear(p + ".wc", "attn.w_c", context, dim),
                               r.shared_linear(p + ".wa", "attn.w_a", x, dim));
    attentional.push_back(r.unary(p + ".attentional", "tanh", mixed));
  }
  const NodeId all =
      attentional.size() == 1 ? attentional[0] : b.layer("dec.states", "concat", {}, attentional);
  b.layer("lm_head", "linear", {{"in_features", dim}, {"out_features", vocab}}, {all});
  return b.take();
}

}  // namespace interplace::placement::zoo
