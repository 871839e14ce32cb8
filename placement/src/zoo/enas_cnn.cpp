// The ENAS micro search space for CIFAR-10 (Pham et al. 2018, "Efficient Neural
// Architecture Search via Parameter Sharing", section 2.3 and the authors' code,
// micro_child.py), one architecture per seed:
//   - a cell has two inputs (the outputs of the previous two cells, h[i-2] and h[i-1]) and
//     B = 5 nodes; node k picks two inputs among the cell inputs and nodes 0..k-1 and one
//     operation for each among {identity, separable conv 3x3, separable conv 5x5, average
//     pool 3x3, max pool 3x3}, and sums the two results;
//   - the nodes no other node reads (the "loose ends") are concatenated, then ReLU, 1x1
//     conv back to the cell's width and BN, as micro_child.py does;
//   - a separable conv is (ReLU -> depthwise k x k -> pointwise 1x1 -> BN) twice, pools are
//     3x3 stride 1 "same" (average pools exclude padding);
//   - cell inputs are calibrated to the cell's width: ReLU + 1x1 conv + BN when only the
//     width differs, a factorized reduction (two 1x1/2 average pools, the second shifted by
//     a pixel, 1x1 convs to half the width each, concat, BN) when the size differs;
//   - a reduction cell first reduces both inputs that way to half the size and twice the
//     width, then is a cell of its own (separately drawn) architecture at stride 1;
//   - the network: 3x3 conv + BN stem, then N normal cells, a reduction cell, N normal
//     cells, a reduction cell, N normal cells; ReLU, global average pooling, linear.
// A seed draws the normal and the reduction cell (all choices uniform); N, the width and
// the input are options: N = layers (default 2: the search-time child, 6 normal and 2
// reduction cells), width = 20 x width_multiplier (the search-time out_filters), input
// 3x32x32 and 10 classes (CIFAR-10).
#include <string>
#include <vector>

#include "../seeded_random.hpp"
#include "interplace/kernels/error.hpp"
#include "model_builder.hpp"
#include "models.hpp"

namespace interplace::placement::zoo {

namespace {

constexpr int kCellNodes = 5;
constexpr int kOperations = 5;
enum class CnnOp { identity, sep_conv_3, sep_conv_5, avg_pool, max_pool };

struct CellNode {
  int input[2];
  CnnOp op[2];
};
using Cell = std::vector<CellNode>;

Cell draw_cell(kernels::Rng& rng) {
  Cell cell;
  for (int k = 0; k < kCellNodes; ++k) {
    CellNode node{};
    for (int side = 0; side < 2; ++side) {
      node.input[side] = static_cast<int>(detail::uniform_index(rng, static_cast<uint64_t>(k + 2)));
      node.op[side] = static_cast<CnnOp>(detail::uniform_index(rng, kOperations));
    }
    cell.push_back(node);
  }
  return cell;
}

class EnasCnnBuilder {
 public:
  explicit EnasCnnBuilder(ModelBuilder& b) : b_(b) {}

  NodeId relu(const std::string& name, NodeId x) { return b_.unary(name, "relu", x); }
  NodeId bn(const std::string& name, NodeId x) { return b_.batch_norm(name, x); }

  NodeId conv1x1_bn(const std::string& name, NodeId x, int64_t width) {
    return bn(name + ".bn", b_.conv2d(name + ".conv", relu(name + ".relu", x), width, 1));
  }

  // micro_child.py's _factorized_reduction: half the size, `width` channels.
  NodeId factorized_reduce(const std::string& name, NodeId x, int64_t width) {
    const auto pool = [&](const std::string& n, NodeId in) {
      return b_.layer(n, "avg_pool", {{"kernel", int64_t{1}}, {"stride", int64_t{2}}}, {in});
    };
    x = relu(name + ".relu", x);
    const NodeId path1 = b_.conv2d(name + ".conv_1", pool(name + ".pool_1", x), width / 2, 1);
    NodeId shifted = b_.layer(name + ".shift", "pad2d",
                              {{"top", int64_t{-1}},
                               {"bottom", int64_t{1}},
                               {"left", int64_t{-1}},
                               {"right", int64_t{1}}},
                              {x});
    const NodeId path2 =
        b_.conv2d(name + ".conv_2", pool(name + ".pool_2", shifted), width - width / 2, 1);
    return bn(name + ".bn", b_.layer(name + ".concat", "concat", {}, {path1, path2}));
  }

  NodeId calibrate(const std::string& name, NodeId x, int64_t width, int64_t size) {
    if (b_.shape(x).at(2) != size) return factorized_reduce(name, x, width);
    if (b_.channels(x) != width) return conv1x1_bn(name, x, width);
    return x;
  }

  NodeId separable(const std::string& name, NodeId x, int64_t kernel) {
    const int64_t width = b_.channels(x);
    for (int stack = 1; stack <= 2; ++stack) {
      const std::string n = name + indexed(".", stack);
      x = relu(n + ".relu", x);
      x = b_.conv2d(n + ".depthwise", x, width, kernel, 1, kernel / 2, width);
      x = bn(n + ".bn", b_.conv2d(n + ".pointwise", x, width, 1));
    }
    return x;
  }

  NodeId op(const std::string& name, CnnOp kind, NodeId x) {
    const Attributes pool = {
        {"kernel", int64_t{3}}, {"stride", int64_t{1}}, {"padding", int64_t{1}}};
    switch (kind) {
      case CnnOp::identity:
        return x;
      case CnnOp::sep_conv_3:
        return separable(name + ".sep_conv_3x3", x, 3);
      case CnnOp::sep_conv_5:
        return separable(name + ".sep_conv_5x5", x, 5);
      case CnnOp::avg_pool:
        return b_.layer(name + ".avg_pool_3x3", "avg_pool", pool, {x});
      case CnnOp::max_pool:
        return b_.layer(name + ".max_pool_3x3", "max_pool", pool, {x});
    }
    throw_invalid("enas-cnn: unknown operation");
  }

  // One cell on inputs already calibrated to the cell's width and size.
  NodeId cell(const std::string& name, const Cell& arch, NodeId h0, NodeId h1) {
    const int64_t width = b_.channels(h1);
    std::vector<NodeId> states = {h0, h1};
    std::vector<bool> used(arch.size() + 2, false);
    for (size_t k = 0; k < arch.size(); ++k) {
      const std::string n = name + indexed(".node", static_cast<int64_t>(k));
      NodeId out[2];
      for (int side = 0; side < 2; ++side) {
        const auto input = static_cast<size_t>(arch[k].input[side]);
        used[input] = true;
        out[side] = op(n + (side == 0 ? ".x" : ".y"), arch[k].op[side], states[input]);
      }
      // Both sides the identity of one state: x + x, written as 2x (no node reads one
      // tensor twice).
      states.push_back(out[0] == out[1] ? b_.layer(n + ".add", "affine",
                                                   {{"scale", 2.0}, {"shift", 0.0}}, {out[0]})
                                        : b_.layer(n + ".add", "add", {}, {out[0], out[1]}));
    }
    std::vector<NodeId> loose;
    for (size_t k = 2; k < states.size(); ++k) {
      if (!used[k]) loose.push_back(states[k]);
    }
    const NodeId joined =
        loose.size() == 1 ? loose[0] : b_.layer(name + ".concat", "concat", {}, loose);
    return conv1x1_bn(name + ".out", joined, width);
  }

 private:
  ModelBuilder& b_;
};

}  // namespace

Graph build_enas_cnn(std::string_view name, const ModelOptions& options, uint64_t seed) {
  check_options(name, options);
  const int64_t size = or_default(options.image_size, 32);
  const int64_t cells = or_default(options.layers, 2);
  if (size < 4) {
    throw_invalid("model " + std::string(name) + ": image_size must be >= 4 (two reductions), " +
                  "got " + std::to_string(size));
  }
  if (options.sequence_length > 0 || options.dim > 0 || options.heads > 0 ||
      options.vocab_size > 0 || options.max_positions > 0) {
    throw_invalid("model " + std::string(name) +
                  ": an image model takes no sequence_length, dim, heads, vocab_size or "
                  "max_positions");
  }
  const int64_t layers = scaled_depth(cells, options);
  const int64_t width = std::max<int64_t>(2, scaled_width(20, options));
  kernels::Rng rng(seed);
  const Cell normal = draw_cell(rng);
  const Cell reduction = draw_cell(rng);

  ModelBuilder b(std::string(name), options.batch_size);
  EnasCnnBuilder e(b);
  NodeId x = b.input("input", {or_default(options.in_channels, 3), size, size});
  x = e.bn("stem.bn", b.conv2d("stem.conv", x, width, 3, 1, 1));
  NodeId prev = x, curr = x;
  int index = 0;
  int64_t cell_width = width;
  for (int stage = 0; stage < 3; ++stage) {
    if (stage > 0) {
      cell_width *= 2;
      const std::string n = indexed("cell", index++) + "_reduce";
      const NodeId h0 = e.factorized_reduce(n + ".in0", prev, cell_width);
      const NodeId h1 = e.factorized_reduce(n + ".in1", curr, cell_width);
      prev = curr;
      curr = e.cell(n, reduction, h0, h1);
    }
    for (int64_t i = 0; i < layers; ++i) {
      const std::string n = indexed("cell", index++) + "_normal";
      const int64_t cell_size = b.shape(curr).at(2);
      const NodeId h0 = e.calibrate(n + ".in0", prev, cell_width, cell_size);
      const NodeId h1 = e.calibrate(n + ".in1", curr, cell_width, cell_size);
      prev = curr;
      curr = e.cell(n, normal, h0, h1);
    }
  }
  x = b.unary("pool", "global_avg_pool", e.relu("relu", curr));
  b.layer("fc", "linear",
          {{"in_features", b.channels(x)}, {"out_features", or_default(options.classes, 10)}}, {x});
  return b.take();
}

}  // namespace interplace::placement::zoo
