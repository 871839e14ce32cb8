// CIFAR ResNets (He et al. 2016, section 4.2): a 3x3 stem, three stages of 16/32/64
// channels with n basic blocks each (depth 6n + 2), 1x1 conv + BN projection shortcuts
// where the shape changes, global average pooling and a linear classifier.
// Defaults: 1x28x28 input (Fashion-MNIST), 10 classes.
#include "model_builder.hpp"
#include "models.hpp"

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

}  // namespace

Graph build_cifar_resnet(std::string_view name, int64_t blocks_per_stage,
                         const ModelOptions& options) {
  check_options(name, options);
  const int64_t size = or_default(options.image_size, 28);
  ModelBuilder b(std::string(name), options.batch_size);
  NodeId x = b.input("input", {or_default(options.in_channels, 1), size, size});
  x = conv_bn(b, "", "1", x, scaled_width(16, options), 3, 1);
  x = b.layer("relu1", "relu", {}, {x});
  const int64_t blocks = scaled_depth(blocks_per_stage, options);
  int stage = 1;
  for (int64_t width : {16, 32, 64}) {
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

}  // namespace interplace::placement::zoo
