// ImageNet ResNet-50 as torchvision builds it (He et al. 2016 with the "v1.5" stride on
// the 3x3 convolution of each bottleneck): a 7x7/2 stem and 3x3/2 max pool, four stages
// of 3, 4, 6, 3 bottlenecks (1x1 -> 3x3 -> 1x1 with 4x expansion, widths 64..512),
// 1x1 conv + BN projection shortcuts where the shape changes, global average pooling
// and a linear classifier. Node names follow torchvision's module paths
// (layer2.1.conv1, layer3.0.downsample.0); ReLUs are numbered since torchvision reuses
// one module. Defaults: 3x224x224, 1000 classes.
#include "model_builder.hpp"
#include "models.hpp"

namespace interplace::placement::zoo {

namespace {

constexpr int64_t kExpansion = 4;

NodeId bottleneck(ModelBuilder& b, const std::string& prefix, NodeId x, int64_t width,
                  int64_t stride) {
  NodeId h = b.conv2d(prefix + "conv1", x, width, 1);
  h = b.unary(prefix + "relu1", "relu", b.batch_norm(prefix + "bn1", h));
  h = b.conv2d(prefix + "conv2", h, width, 3, stride, 1);
  h = b.unary(prefix + "relu2", "relu", b.batch_norm(prefix + "bn2", h));
  h = b.batch_norm(prefix + "bn3", b.conv2d(prefix + "conv3", h, width * kExpansion, 1));
  NodeId shortcut = x;
  if (stride != 1 || b.channels(x) != width * kExpansion) {
    shortcut = b.conv2d(prefix + "downsample.0", x, width * kExpansion, 1, stride);
    shortcut = b.batch_norm(prefix + "downsample.1", shortcut);
  }
  return b.unary(prefix + "relu3", "relu", b.layer(prefix + "add", "add", {}, {h, shortcut}));
}

}  // namespace

Graph build_resnet50(std::string_view name, const ModelOptions& options) {
  check_options(name, options);
  const int64_t size = or_default(options.image_size, 224);
  ModelBuilder b(std::string(name), options.batch_size);
  NodeId x = b.input("input", {or_default(options.in_channels, 3), size, size});
  x = b.conv2d("conv1", x, scaled_width(64, options), 7, 2, 3);
  x = b.unary("relu", "relu", b.batch_norm("bn1", x));
  x = b.layer("maxpool", "max_pool",
              {{"kernel", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}}, {x});
  const int64_t blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t width = scaled_width(int64_t{64} << stage, options);
    for (int64_t i = 0; i < scaled_depth(blocks[stage], options); ++i) {
      const int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
      x = bottleneck(b, "layer" + std::to_string(stage + 1) + "." + std::to_string(i) + ".", x,
                     width, stride);
    }
  }
  x = b.unary("avgpool", "global_avg_pool", x);
  b.layer("fc", "linear",
          {{"in_features", b.channels(x)}, {"out_features", or_default(options.classes, 1000)}},
          {x});
  return b.take();
}

}  // namespace interplace::placement::zoo
