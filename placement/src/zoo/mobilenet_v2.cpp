// MobileNetV2 as torchvision builds it (Sandler et al. 2018): a 3x3/2 stem of 32 channels,
// 17 inverted residual blocks (1x1 expansion by t -> 3x3 depthwise -> linear 1x1
// projection; residual add when stride 1 and the width is kept), a 1x1 conv to 1280,
// global average pooling, Dropout(0.2) and a linear classifier; BN + ReLU6 after every
// conv but the projections. Widths times width_multiplier are rounded to multiples of 8
// as torchvision's _make_divisible does; the last conv is never narrowed below 1280.
// Node names follow torchvision's module paths (features.2.conv.1.0 is block 2's
// depthwise conv). Defaults: 3x224x224, 1000 classes.
#include <algorithm>

#include "model_builder.hpp"
#include "models.hpp"

namespace interplace::placement::zoo {

namespace {

// torchvision's _make_divisible: the nearest multiple of 8, at least 8, and never more
// than 10% below the value.
int64_t make_divisible(double value) {
  constexpr int64_t kDivisor = 8;
  int64_t rounded = std::max<int64_t>(
      kDivisor, static_cast<int64_t>(value + kDivisor / 2.0) / kDivisor * kDivisor);
  if (static_cast<double>(rounded) < 0.9 * value) rounded += kDivisor;
  return rounded;
}

// Conv2dNormActivation: conv -> BN -> ReLU6 as "<prefix>0", "<prefix>1", "<prefix>2".
NodeId conv_bn_relu6(ModelBuilder& b, const std::string& prefix, NodeId x, int64_t out,
                     int64_t kernel, int64_t stride, int64_t groups) {
  x = b.conv2d(prefix + "0", x, out, kernel, stride, kernel / 2, groups);
  return b.unary(prefix + "2", "relu6", b.batch_norm(prefix + "1", x));
}

NodeId inverted_residual(ModelBuilder& b, const std::string& prefix, NodeId x, int64_t out,
                         int64_t stride, int64_t expand_ratio) {
  const int64_t in = b.channels(x), hidden = in * expand_ratio;
  NodeId h = x;
  int layer = 0;  // position in torchvision's `conv` Sequential
  const auto next = [&] { return prefix + "conv." + std::to_string(layer++) + "."; };
  if (expand_ratio != 1) h = conv_bn_relu6(b, next(), h, hidden, 1, 1, 1);
  h = conv_bn_relu6(b, next(), h, hidden, 3, stride, hidden);
  // The linear projection: conv.<layer> and its BN conv.<layer + 1>.
  h = b.conv2d(prefix + "conv." + std::to_string(layer), h, out, 1);
  h = b.batch_norm(prefix + "conv." + std::to_string(layer + 1), h);
  if (stride == 1 && in == out) h = b.layer(prefix + "add", "add", {}, {x, h});
  return h;
}

}  // namespace

Graph build_mobilenet_v2(std::string_view name, const ModelOptions& options) {
  check_options(name, options);
  const int64_t size = or_default(options.image_size, 224);
  const double width = options.width_multiplier;
  ModelBuilder b(std::string(name), options.batch_size);
  NodeId x = b.input("input", {or_default(options.in_channels, 3), size, size});
  x = conv_bn_relu6(b, "features.0.", x, make_divisible(32 * width), 3, 2, 1);
  struct Stage {
    int64_t expand_ratio, channels, repeats, stride;
  };
  const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int index = 1;  // position in `features`
  for (const Stage& s : stages) {
    const int64_t out = make_divisible(static_cast<double>(s.channels) * width);
    for (int64_t i = 0; i < scaled_depth(s.repeats, options); ++i) {
      x = inverted_residual(b, "features." + std::to_string(index++) + ".", x, out,
                            i == 0 ? s.stride : 1, s.expand_ratio);
    }
  }
  const int64_t last = make_divisible(1280 * std::max(1.0, width));
  x = conv_bn_relu6(b, "features." + std::to_string(index) + ".", x, last, 1, 1, 1);
  x = b.unary("avgpool", "global_avg_pool", x);
  x = b.layer("classifier.0", "dropout", {{"p", 0.2}, {"seed", int64_t{0}}}, {x});
  b.layer("classifier.1", "linear",
          {{"in_features", b.channels(x)}, {"out_features", or_default(options.classes, 1000)}},
          {x});
  return b.take();
}

}  // namespace interplace::placement::zoo
