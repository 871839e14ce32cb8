// NASNet-A Mobile as Keras builds it (keras.applications.NASNetMobile; Zoph et al. 2018):
// a 3x3/2 "valid" stem conv of 32 filters + BN; two stem reduction cells with filters
// 44/4 and 44/2 (penultimate_filters 1056 / 24 = 44, filter multiplier 2); then three
// blocks of N = 4 normal cells with 44, 88 and 176 filters, separated by reduction cells
// with 88 and 176; ReLU, global average pooling and a linear classifier.
// Every cell takes the previous two cells' outputs (ip, p). The "adjust" path makes p fit:
// when its size differs, a factorized reduction (ReLU; two paths of 1x1/2 average pool
// + 1x1 conv to filters/2, the second shifted by one pixel by zero padding the bottom/
// right and cropping the top/left; concat; BN); when only its width differs, ReLU + 1x1
// conv + BN. Separable blocks are ReLU -> separable conv (depthwise + pointwise) -> BN,
// twice; with stride 2 the input is first zero padded as Keras' correct_pad does and the
// first separable conv is "valid". "same" average pools exclude padding from their divisor.
// Keras' BatchNormalization(momentum=0.9997, epsilon=1e-3) is momentum 0.0003 in our
// (PyTorch's) convention. Node names are "<cell>.<Keras layer name without block id>",
// with cells named by Keras' block ids: stem_1, stem_2, normal_0..3, reduce_4,
// normal_5..8, reduce_8, normal_9..12.
// width_multiplier scales the stem and the cell filters (kept a multiple of 4, as Keras
// requires); depth_multiplier scales N. Defaults: 3x224x224, 1000 classes.
#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "model_builder.hpp"
#include "models.hpp"

namespace interplace::placement::zoo {

namespace {

// Keras' BatchNormalization(momentum=0.9997, epsilon=1e-3), momentum in PyTorch's sense.
constexpr double kBatchNormEpsilon = 1e-3;
constexpr double kBatchNormMomentum = 1.0 - 0.9997;

class NasnetBuilder {
 public:
  explicit NasnetBuilder(ModelBuilder& b) : b_(b) {}

  NodeId bn(const std::string& name, NodeId x) {
    return b_.batch_norm(name, x, kBatchNormEpsilon, kBatchNormMomentum);
  }
  NodeId relu(const std::string& name, NodeId x) { return b_.unary(name, "relu", x); }
  NodeId pad(const std::string& name, NodeId x, int64_t top, int64_t bottom, int64_t left,
             int64_t right) {
    return b_.layer(name, "pad2d",
                    {{"top", top}, {"bottom", bottom}, {"left", left}, {"right", right}}, {x});
  }
  NodeId avg_pool(const std::string& name, NodeId x, int64_t kernel, int64_t stride,
                  int64_t padding) {
    return b_.layer(name, "avg_pool",
                    {{"kernel", kernel}, {"stride", stride}, {"padding", padding}}, {x});
  }
  NodeId max_pool(const std::string& name, NodeId x) {
    return b_.layer(name, "max_pool", {{"kernel", int64_t{3}}, {"stride", int64_t{2}}}, {x});
  }
  NodeId add(const std::string& name, NodeId a, NodeId c) {
    return b_.layer(name, "add", {}, {a, c});
  }
  NodeId concat(const std::string& name, std::vector<NodeId> inputs) {
    return b_.layer(name, "concat", {}, std::move(inputs));
  }

  // Keras' imagenet_utils.correct_pad: the zero padding that makes a k x k stride-2
  // "valid" conv (or pool) behave like TensorFlow's "same" on this input.
  NodeId correct_pad(const std::string& name, NodeId x, int64_t kernel) {
    const int64_t h = b_.shape(x).at(2), w = b_.shape(x).at(3), half = kernel / 2;
    return pad(name, x, half - (1 - h % 2), half, half - (1 - w % 2), half);
  }

  // SeparableConv2D without bias: depthwise k x k, then pointwise 1x1 to `filters`.
  NodeId separable_conv(const std::string& name, NodeId x, int64_t filters, int64_t kernel,
                        int64_t stride) {
    const int64_t padding = stride == 1 ? kernel / 2 : 0;  // "same", or "valid" after padding
    x = b_.conv2d(name + ".depthwise", x, b_.channels(x), kernel, stride, padding, b_.channels(x));
    return b_.conv2d(name + ".pointwise", x, filters, 1);
  }

  // _separable_conv_block.
  NodeId separable_block(const std::string& name, NodeId x, int64_t filters, int64_t kernel,
                         int64_t stride = 1) {
    x = relu(name + ".relu_1", x);
    if (stride == 2) x = correct_pad(name + ".separable_conv_1_pad", x, kernel);
    x = separable_conv(name + ".separable_conv_1", x, filters, kernel, stride);
    x = relu(name + ".relu_2", bn(name + ".separable_conv_1_bn", x));
    x = separable_conv(name + ".separable_conv_2", x, filters, kernel, 1);
    return bn(name + ".separable_conv_2_bn", x);
  }

  // _adjust_block: p made to match ip's size and `filters` channels.
  NodeId adjust(const std::string& cell, NodeId p, NodeId ip, int64_t filters) {
    const std::string a = cell + ".adjust.";
    if (b_.shape(p).at(3) != b_.shape(ip).at(3)) {
      p = relu(a + "relu", p);
      NodeId p1 = avg_pool(a + "avg_pool_1", p, 1, 2, 0);
      p1 = b_.conv2d(a + "conv_1", p1, filters / 2, 1);
      NodeId p2 = pad(a + "pad", p, 0, 1, 0, 1);
      p2 = pad(a + "crop", p2, -1, 0, -1, 0);
      p2 = avg_pool(a + "avg_pool_2", p2, 1, 2, 0);
      p2 = b_.conv2d(a + "conv_2", p2, filters / 2, 1);
      return bn(a + "bn", concat(a + "concat", {p1, p2}));
    }
    if (b_.channels(p) != filters) {
      p = b_.conv2d(a + "conv_projection", relu(a + "relu", p), filters, 1);
      return bn(a + "bn", p);
    }
    return p;
  }

  // ReLU -> 1x1 conv -> BN on the cell input.
  NodeId squeeze(const std::string& cell, NodeId ip, int64_t filters) {
    return bn(cell + ".bn_1", b_.conv2d(cell + ".conv_1", relu(cell + ".relu", ip), filters, 1));
  }

  // _normal_a_cell; returns (output, ip) as Keras does.
  std::pair<NodeId, NodeId> normal_cell(const std::string& cell, NodeId ip, NodeId p,
                                        int64_t filters) {
    p = adjust(cell, p, ip, filters);
    const NodeId h = squeeze(cell, ip, filters);
    const NodeId x1 = add(cell + ".add_1", separable_block(cell + ".left1", h, filters, 5),
                          separable_block(cell + ".right1", p, filters, 3));
    const NodeId x2 = add(cell + ".add_2", separable_block(cell + ".left2", p, filters, 5),
                          separable_block(cell + ".right2", p, filters, 3));
    const NodeId x3 = add(cell + ".add_3", avg_pool(cell + ".left3", h, 3, 1, 1), p);
    const NodeId x4 = add(cell + ".add_4", avg_pool(cell + ".left4", p, 3, 1, 1),
                          avg_pool(cell + ".right4", p, 3, 1, 1));
    const NodeId x5 = add(cell + ".add_5", separable_block(cell + ".left5", h, filters, 3), h);
    return {concat(cell + ".concat", {p, x1, x2, x3, x4, x5}), ip};
  }

  // _reduction_a_cell; `p` < 0 means none (the first stem cell uses ip). Keras names the
  // separable block of block 5 "reduction_left4" (beside the pool of block 4); here it is
  // "left5".
  std::pair<NodeId, NodeId> reduction_cell(const std::string& cell, NodeId ip, NodeId p,
                                           int64_t filters) {
    p = p < 0 ? ip : adjust(cell, p, ip, filters);
    const NodeId h = squeeze(cell, ip, filters);
    const NodeId h3 = correct_pad(cell + ".pad_1", h, 3);
    const NodeId x1 = add(cell + ".add_1", separable_block(cell + ".left1", h, filters, 5, 2),
                          separable_block(cell + ".right1", p, filters, 7, 2));
    const NodeId x2 = add(cell + ".add_2", max_pool(cell + ".left2", h3),
                          separable_block(cell + ".right2", p, filters, 7, 2));
    const NodeId x3 = add(cell + ".add_3", avg_pool(cell + ".left3", h3, 3, 2, 0),
                          separable_block(cell + ".right3", p, filters, 5, 2));
    const NodeId x4 = add(cell + ".add_4", x2, avg_pool(cell + ".left4", x1, 3, 1, 1));
    const NodeId x5 = add(cell + ".add_5", separable_block(cell + ".left5", x1, filters, 3),
                          max_pool(cell + ".right5", h3));
    return {concat(cell + ".concat", {x2, x3, x4, x5}), ip};
  }

 private:
  ModelBuilder& b_;
};

}  // namespace

Graph build_nasnet_a_mobile(std::string_view name, const ModelOptions& options) {
  check_options(name, options);
  const int64_t size = or_default(options.image_size, 224);
  // penultimate_filters / 24, a multiple of 4 so that the stem cells' filters / 4 is exact.
  const int64_t filters =
      std::max<int64_t>(4, 4 * std::llround(1056.0 / 24 * options.width_multiplier / 4));
  const int64_t num_blocks = scaled_depth(4, options);
  ModelBuilder b(std::string(name), options.batch_size);
  NasnetBuilder n(b);
  NodeId x = b.input("input", {or_default(options.in_channels, 3), size, size});
  x = n.bn("stem_bn1", b.conv2d("stem_conv1", x, scaled_width(32, options), 3, 2));

  NodeId p = -1;  // none: the first stem cell uses its input as p
  std::tie(x, p) = n.reduction_cell("stem_1", x, p, filters / 4);
  std::tie(x, p) = n.reduction_cell("stem_2", x, p, filters / 2);
  // Blocks of N normal cells with filters x 1, 2, 4; Keras' block ids run on across them
  // and the reduction cells between (normal_0..N-1, reduce_N, normal_N+1..2N, ...).
  for (int64_t block = 0; block < 3; ++block) {
    const int64_t width = filters << block;
    if (block > 0) {
      // skip_reduction=False: the next cell's p is this reduction cell's input.
      std::tie(x, p) =
          n.reduction_cell("reduce_" + std::to_string(block * num_blocks), x, p, width);
    }
    for (int64_t i = 0; i < num_blocks; ++i) {
      const int64_t id = block * num_blocks + i + (block > 0 ? 1 : 0);
      std::tie(x, p) = n.normal_cell("normal_" + std::to_string(id), x, p, width);
    }
  }
  x = b.unary("avgpool", "global_avg_pool", n.relu("relu", x));
  b.layer("predictions", "linear",
          {{"in_features", b.channels(x)}, {"out_features", or_default(options.classes, 1000)}},
          {x});
  return b.take();
}

}  // namespace interplace::placement::zoo
