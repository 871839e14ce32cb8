// VGG-16 as torchvision builds it (configuration "D", no batch norm): five stages of
// 2, 2, 3, 3, 3 3x3 convolutions (64..512 channels, with bias) each followed by ReLU,
// every stage closed by a 2x2/2 max pool, then classifier Linear(512*7*7, 4096) -> ReLU
// -> Dropout(0.5) -> Linear(4096, 4096) -> ReLU -> Dropout(0.5) -> Linear(4096, classes).
// Node names are torchvision's indices (features.0, features.4, classifier.6).
// torchvision's AdaptiveAvgPool2d((7, 7)) is the identity at the default 224x224 and is
// left out: at other sizes the classifier takes the flattened feature map as it is (as
// the original VGG did), so its first layer's width follows the image size.
// Defaults: 3x224x224, 1000 classes.
#include "model_builder.hpp"
#include "models.hpp"

namespace interplace::placement::zoo {

Graph build_vgg16(std::string_view name, const ModelOptions& options) {
  check_options(name, options);
  const int64_t size = or_default(options.image_size, 224);
  ModelBuilder b(std::string(name), options.batch_size);
  NodeId x = b.input("input", {or_default(options.in_channels, 3), size, size});
  const int64_t convs_per_stage[] = {2, 2, 3, 3, 3};
  const int64_t widths[] = {64, 128, 256, 512, 512};
  int index = 0;  // torchvision's position in `features`
  const auto next = [&] { return "features." + std::to_string(index++); };
  for (int stage = 0; stage < 5; ++stage) {
    for (int64_t i = 0; i < scaled_depth(convs_per_stage[stage], options); ++i) {
      x = b.conv2d(next(), x, scaled_width(widths[stage], options), 3, 1, 1, 1, true);
      x = b.unary(next(), "relu", x);
    }
    x = b.layer(next(), "max_pool", {{"kernel", int64_t{2}}, {"stride", int64_t{2}}}, {x});
  }
  x = b.unary("flatten", "flatten", x);
  const int64_t hidden = scaled_width(4096, options);
  const auto linear = [&](const std::string& layer_name, NodeId in, int64_t out) {
    return b.layer(layer_name, "linear",
                   {{"in_features", b.shape(in).at(1)}, {"out_features", out}}, {in});
  };
  const auto dropout = [&](const std::string& layer_name, NodeId in, int64_t seed) {
    return b.layer(layer_name, "dropout", {{"p", 0.5}, {"seed", seed}}, {in});
  };
  x = b.unary("classifier.1", "relu", linear("classifier.0", x, hidden));
  x = dropout("classifier.2", x, 2);
  x = b.unary("classifier.4", "relu", linear("classifier.3", x, hidden));
  x = dropout("classifier.5", x, 5);
  linear("classifier.6", x, or_default(options.classes, 1000));
  return b.take();
}

}  // namespace interplace::placement::zoo
