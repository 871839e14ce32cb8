// The ENAS recurrent cell for language modelling (Pham et al. 2018, section 2.1 and the
// authors' code, ptb_enas_child.py), one architecture per seed, unrolled over T time
// steps as op-level nodes with every weight shared across the steps:
//   node 0:  c0 = sigmoid(x_t W_xc + h_{t-1} W_hc), h0 = f0(x_t W_xh + h_{t-1} W_hh),
//            s0 = c0 * h0 + (1 - c0) * h_{t-1}
//   node i (1..N-1) reads one earlier node j:
//            ci = sigmoid(s_j W_ic), hi = fi(s_j W_ih), s_i = ci * hi + (1 - ci) * s_j
//   h_t = the mean of the loose ends (nodes no other node reads).
// The activations f are drawn from {tanh, ReLU, identity, sigmoid}, j uniformly from the
// earlier nodes. Weights are bias-free D x D matrices, one node each (x W is a "linear"
// node at its first use, a "tied_linear" node after: recurrent_builder.hpp). The initial
// state is zero, so step 0 has no h_{t-1} terms. The model: byte embedding (the kernel
// library's Embedding, which adds learned positions) [B, T, D], a slice per step, the
// cell, the h_t concatenated to [B, T, D] and one linear head to the 256 bytes: next-byte
// logits [B, T, 256] on the text corpus, as gpt-mini.
// Options: sequence_length T (default 35, ENAS's PTB unrolling), dim D (default 256),
// N = 12 nodes times depth_multiplier (rounded, at least 1). vocab_size is 256 unless set.
#include <string>
#include <vector>

#include "../seeded_random.hpp"
#include "interplace/kernels/error.hpp"
#include "model_builder.hpp"
#include "models.hpp"
#include "recurrent_builder.hpp"

namespace interplace::placement::zoo {

namespace {

constexpr int64_t kCellNodes = 12;
const char* const kActivations[] = {"tanh", "relu", "identity", "sigmoid"};

struct RnnNode {
  int64_t previous;  // node j this node reads (-1 for node 0: x_t and h_{t-1})
  std::string activation;
};

std::vector<RnnNode> draw_rnn_cell(kernels::Rng& rng, int64_t nodes) {
  std::vector<RnnNode> cell;
  for (int64_t i = 0; i < nodes; ++i) {
    const int64_t previous =
        i == 0 ? -1 : static_cast<int64_t>(detail::uniform_index(rng, static_cast<uint64_t>(i)));
    cell.push_back({previous, kActivations[detail::uniform_index(rng, 4)]});
  }
  return cell;
}

}  // namespace

Graph build_enas_rnn(std::string_view name, const ModelOptions& options, uint64_t seed) {
  check_options(name, options);
  if (options.classes > 0 || options.image_size > 0 || options.in_channels > 0 ||
      options.heads > 0 || options.layers > 0) {
    throw_invalid("model " + std::string(name) +
                  ": a recurrent language model takes no classes, image_size, in_channels, "
                  "heads or layers (set sequence_length, dim, vocab_size)");
  }
  const int64_t steps = or_default(options.sequence_length, 35);
  const int64_t dim = or_default(options.dim, 256);
  const int64_t vocab = or_default(options.vocab_size, 256);
  const int64_t nodes = scaled_depth(kCellNodes, options);
  if (options.max_positions > 0 && options.max_positions < steps) {
    throw_invalid("model " + std::string(name) + ": max_positions " +
                  std::to_string(options.max_positions) + " is below sequence_length " +
                  std::to_string(steps));
  }
  kernels::Rng rng(seed);
  const std::vector<RnnNode> cell = draw_rnn_cell(rng, nodes);
  std::vector<bool> read(static_cast<size_t>(nodes), false);
  for (const RnnNode& n : cell) {
    if (n.previous >= 0) read[static_cast<size_t>(n.previous)] = true;
  }

  ModelBuilder b(std::string(name), options.batch_size);
  RecurrentBuilder r(b);
  NodeId x = b.input("input_ids", {steps});
  const NodeId embedded = b.layer("embed", "embedding",
                                  {{"vocab_size", vocab},
                                   {"max_positions", or_default(options.max_positions, steps)},
                                   {"dim", dim}},
                                  {x});
  const auto activate = [&](const std::string& n, const std::string& f, NodeId v) {
    return f == "identity" ? v : r.unary(n + "." + f, f, v);
  };
  NodeId h = -1;  // h_{t-1}; none at t = 0 (zero state)
  std::vector<NodeId> outputs;
  for (int64_t t = 0; t < steps; ++t) {
    const std::string p = indexed("t", t) + ".";
    const NodeId xt = r.step(p + "x", embedded, t);
    std::vector<NodeId> s(static_cast<size_t>(nodes));
    for (int64_t i = 0; i < nodes; ++i) {
      const RnnNode& node = cell[static_cast<size_t>(i)];
      const std::string n = p + indexed("n", i);
      const std::string w = indexed("n", i);
      NodeId c, hh, base;
      if (i == 0) {
        c = r.shared_linear(n + ".xc", "w_xc", xt, dim);
        hh = r.shared_linear(n + ".xh", "w_xh", xt, dim);
        if (h >= 0) {
          c = r.add(n + ".c_sum", c, r.shared_linear(n + ".hc", "w_hc", h, dim));
          hh = r.add(n + ".h_sum", hh, r.shared_linear(n + ".hh", "w_hh", h, dim));
        }
        base = h;
      } else {
        base = s[static_cast<size_t>(node.previous)];
        c = r.shared_linear(n + ".wc", w + "_c", base, dim);
        hh = r.shared_linear(n + ".wh", w + "_h", base, dim);
      }
      c = r.unary(n + ".gate", "sigmoid", c);
      hh = activate(n, node.activation, hh);
      NodeId out = r.multiply(n + ".gated", c, hh);
      if (base >= 0) {
        const NodeId carry = r.multiply(n + ".carry", r.one_minus(n + ".keep", c), base);
        out = r.add(n + ".s", out, carry);
      }
      s[static_cast<size_t>(i)] = out;
    }
    std::vector<NodeId> loose;
    for (int64_t i = 0; i < nodes; ++i) {
      if (!read[static_cast<size_t>(i)]) loose.push_back(s[static_cast<size_t>(i)]);
    }
    h = loose.front();
    if (loose.size() > 1) {
      h = b.layer(p + "h", "affine",
                  {{"scale", 1.0 / static_cast<double>(loose.size())}, {"shift", 0.0}},
                  {b.layer(p + "loose_sum", "add", {}, loose)});
    }
    outputs.push_back(h);
  }
  const NodeId all = outputs.size() == 1 ? outputs[0] : b.layer("hidden", "concat", {}, outputs);
  b.layer("lm_head", "linear", {{"in_features", dim}, {"out_features", vocab}}, {all});
  return b.take();
}

}  // namespace interplace::placement::zoo
