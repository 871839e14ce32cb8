// ResNets of basic blocks at CIFAR resolution: a 3x3 stride-1 stem (conv, BN, ReLU; no
// max-pool), stages of basic blocks (the first block of every stage after the first
// halves the resolution), 1x1 conv + BN projection shortcuts where the shape changes,
// global average pooling and a linear classifier.
//   - He et al. 2016, section 4.2: three stages of 16/32/64 channels with n blocks each
//     (depth 6n + 2);
//   - the interlocking-backpropagation study's ResNet (Gomez et al. 2022, public code
//     oscarkey/interlocking-backprop, resnet_builder.py for CIFAR): a 64-channel stem and
//     stages of 64/128/256/512 channels with 3/4/6/3 blocks (ResNet-34's layout).
// Defaults: 1x28x28 input (Fashion-MNIST), 10 classes.
#include "model_builder.hpp"
#include "models.hpp"

#include <utility>
#include <vector>

namespace interplace::placement::zoo {

namespace {

NodeId conv_bn(ModelBuilder& b, const std::string& prefix, const std::string& suffix, NodeId x,
               int64_t out, int64_t kernel, int64_t stride) {
  const NodeId conv = b.layer(prefix + "conv" + suffix, "conv2d",
                              {{"in_channels", b.channels(x)},
                               {"out_channels", out},
                               {"kernel", kernel},
                               {"stride", stride},
                               {"padding", kernel / 2}},
                              {x});
  return b.layer(prefix + "bn" + suffix, "batch_norm", {{"channels", out}}, {conv});
}

NodeId basic_block(ModelBuilder& b, const std::string& prefix, NodeId x, int64_t out,
                   int64_t stride) {
  NodeId h = conv_bn(b, prefix, "1", x, out, 3, stride);
  h = b.layer(prefix + "relu1", "relu", {}, {h});
  h = conv_bn(b, prefix, "2", h, out, 3, 1);
  NodeId shortcut = x;
  if (stride != 1 || b.channels(x) != out) {
    shortcut = conv_bn(b, prefix + "shortcut.", "", x, out, 1, stride);
  }
  const NodeId sum = b.layer(prefix + "add", "add", {}, {h, shortcut});
  return b.layer(prefix + "relu2", "relu", {}, {sum});
}

// The stages as (channels, blocks); the depth multiplier scales every stage's blocks.
Graph build_basic_resnet(std::string_view name, int64_t stem_channels,
                         const std::vector<std::pair<int64_t, int64_t>>& stages,
                         const ModelOptions& options) {
  check_options(name, options);
  const int64_t size = or_default(options.image_size, 28);
  ModelBuilder b(std::string(name), options.batch_size);
  NodeId x = b.input("input", {or_default(options.in_channels, 1), size, size});
  x = conv_bn(b, "", "1", x, scaled_width(stem_channels, options), 3, 1);
  x = b.layer("relu1", "relu", {}, {x});
  int stage = 1;
  for (const auto& [width, blocks_per_stage] : stages) {
    const int64_t blocks = scaled_depth(blocks_per_stage, options);
    for (int64_t i = 0; i < blocks; ++i) {
      const int64_t stride = (i == 0 && stage > 1) ? 2 : 1;
      x = basic_block(b, "layer" + std::to_string(stage) + "." + std::to_string(i) + ".", x,
                      scaled_width(width, options), stride);
    }
    ++stage;
  }
  x = b.layer("avgpool", "global_avg_pool", {}, {x});
  b.layer("fc", "linear",
          {{"in_features", b.channels(x)}, {"out_features", or_default(options.classes, 10)}}, {x});
  return b.take();
}

}  // namespace

Graph build_cifar_resnet(std::string_view name, int64_t blocks_per_stage,
                         const ModelOptions& options) {
  return build_basic_resnet(
      name, 16, {{16, blocks_per_stage}, {32, blocks_per_stage}, {64, blocks_per_stage}}, options);
}

Graph build_study_resnet(std::string_view name, const ModelOptions& options) {
  return build_basic_resnet(name, 64, {{64, 3}, {128, 4}, {256, 6}, {512, 3}}, options);
}

}  // namespace interplace::placement::zoo
