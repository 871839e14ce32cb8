// Inception-v3 as torchvision builds it without the auxiliary classifier (Szegedy et al.
// 2016): every convolution is torchvision's BasicConv2d (bias-free conv -> BN with
// epsilon 0.001 -> ReLU, nodes "<name>.conv", ".bn", ".relu"); a stem of five convs and
// two 3x3/2 max pools; Mixed_5b-5d (InceptionA), Mixed_6a (B, reduction), Mixed_6b-6e
// (C, factorised 1x7/7x1), Mixed_7a (D, reduction), Mixed_7b-7c (E, split 1x3/3x1);
// global average pooling, Dropout(0.5) and a linear classifier. The branch average pools
// count padding in their divisor, as F.avg_pool2d does by default.
// depth_multiplier scales the number of A, C and E modules (3, 4, 2; lettered on); the
// C modules' 7x7 widths are 128 for the first, 192 for the last and 160 in
// between, as torchvision's 128, 160, 160, 192. Defaults: 3x299x299, 1000 classes; the
// smallest image that fits is 75x75.
#include "model_builder.hpp"
#include "models.hpp"

namespace interplace::placement::zoo {

namespace {

constexpr double kBatchNormEpsilon = 0.001;

class InceptionBuilder {
 public:
  InceptionBuilder(ModelBuilder& b, const ModelOptions& options) : b_(b), options_(options) {}

  int64_t width(int64_t channels) const { return scaled_width(channels, options_); }

  // BasicConv2d with a square kernel, or {kh, kw} with padding {ph, pw}.
  NodeId conv(const std::string& name, NodeId x, int64_t out, int64_t kernel, int64_t stride = 1,
              int64_t padding = 0) {
    return bn_relu(name, b_.conv2d(name + ".conv", x, width(out), kernel, stride, padding));
  }
  NodeId conv(const std::string& name, NodeId x, int64_t out, kernels::Extent2d kernel,
              kernels::Extent2d padding) {
    return bn_relu(name, b_.conv2d(name + ".conv", x, width(out), kernel, padding));
  }
  NodeId max_pool(const std::string& name, NodeId x) {
    return b_.layer(name, "max_pool", {{"kernel", int64_t{3}}, {"stride", int64_t{2}}}, {x});
  }
  // F.avg_pool2d(x, kernel_size=3, stride=1, padding=1), count_include_pad=True.
  NodeId avg_pool(const std::string& name, NodeId x) {
    return b_.layer(name, "avg_pool",
                    {{"kernel", int64_t{3}},
                     {"stride", int64_t{1}},
                     {"padding", int64_t{1}},
                     {"count_include_pad", int64_t{1}}},
                    {x});
  }
  NodeId concat(const std::string& name, std::vector<NodeId> inputs) {
    return b_.layer(name, "concat", {}, std::move(inputs));
  }

  NodeId inception_a(const std::string& m, NodeId x, int64_t pool_features) {
    const NodeId b1 = conv(m + ".branch1x1", x, 64, 1);
    NodeId b5 = conv(m + ".branch5x5_1", x, 48, 1);
    b5 = conv(m + ".branch5x5_2", b5, 64, 5, 1, 2);
    NodeId b3 = conv(m + ".branch3x3dbl_1", x, 64, 1);
    b3 = conv(m + ".branch3x3dbl_2", b3, 96, 3, 1, 1);
    b3 = conv(m + ".branch3x3dbl_3", b3, 96, 3, 1, 1);
    const NodeId pool = conv(m + ".branch_pool", avg_pool(m + ".avg_pool", x), pool_features, 1);
    return concat(m + ".concat", {b1, b5, b3, pool});
  }

  NodeId inception_b(const std::string& m, NodeId x) {
    const NodeId b3 = conv(m + ".branch3x3", x, 384, 3, 2);
    NodeId d = conv(m + ".branch3x3dbl_1", x, 64, 1);
    d = conv(m + ".branch3x3dbl_2", d, 96, 3, 1, 1);
    d = conv(m + ".branch3x3dbl_3", d, 96, 3, 2);
    return concat(m + ".concat", {b3, d, max_pool(m + ".max_pool", x)});
  }

  NodeId inception_c(const std::string& m, NodeId x, int64_t c7) {
    const kernels::Extent2d k1x7{1, 7}, p1x7{0, 3}, k7x1{7, 1}, p7x1{3, 0};
    const NodeId b1 = conv(m + ".branch1x1", x, 192, 1);
    NodeId b7 = conv(m + ".branch7x7_1", x, c7, 1);
    b7 = conv(m + ".branch7x7_2", b7, c7, k1x7, p1x7);
    b7 = conv(m + ".branch7x7_3", b7, 192, k7x1, p7x1);
    NodeId d = conv(m + ".branch7x7dbl_1", x, c7, 1);
    d = conv(m + ".branch7x7dbl_2", d, c7, k7x1, p7x1);
    d = conv(m + ".branch7x7dbl_3", d, c7, k1x7, p1x7);
    d = conv(m + ".branch7x7dbl_4", d, c7, k7x1, p7x1);
    d = conv(m + ".branch7x7dbl_5", d, 192, k1x7, p1x7);
    const NodeId pool = conv(m + ".branch_pool", avg_pool(m + ".avg_pool", x), 192, 1);
    return concat(m + ".concat", {b1, b7, d, pool});
  }

  NodeId inception_d(const std::string& m, NodeId x) {
    NodeId b3 = conv(m + ".branch3x3_1", x, 192, 1);
    b3 = conv(m + ".branch3x3_2", b3, 320, 3, 2);
    NodeId b7 = conv(m + ".branch7x7x3_1", x, 192, 1);
    b7 = conv(m + ".branch7x7x3_2", b7, 192, {1, 7}, {0, 3});
    b7 = conv(m + ".branch7x7x3_3", b7, 192, {7, 1}, {3, 0});
    b7 = conv(m + ".branch7x7x3_4", b7, 192, 3, 2);
    return concat(m + ".concat", {b3, b7, max_pool(m + ".max_pool", x)});
  }

  NodeId inception_e(const std::string& m, NodeId x) {
    const NodeId b1 = conv(m + ".branch1x1", x, 320, 1);
    const NodeId b3 = conv(m + ".branch3x3_1", x, 384, 1);
    const NodeId b3_split =
        concat(m + ".branch3x3_concat", {conv(m + ".branch3x3_2a", b3, 384, {1, 3}, {0, 1}),
                                         conv(m + ".branch3x3_2b", b3, 384, {3, 1}, {1, 0})});
    NodeId d = conv(m + ".branch3x3dbl_1", x, 448, 1);
    d = conv(m + ".branch3x3dbl_2", d, 384, 3, 1, 1);
    const NodeId d_split =
        concat(m + ".branch3x3dbl_concat", {conv(m + ".branch3x3dbl_3a", d, 384, {1, 3}, {0, 1}),
                                            conv(m + ".branch3x3dbl_3b", d, 384, {3, 1}, {1, 0})});
    const NodeId pool = conv(m + ".branch_pool", avg_pool(m + ".avg_pool", x), 192, 1);
    return concat(m + ".concat", {b1, b3_split, d_split, pool});
  }

 private:
  NodeId bn_relu(const std::string& name, NodeId conv_node) {
    return b_.unary(name + ".relu", "relu",
                    b_.batch_norm(name + ".bn", conv_node, kBatchNormEpsilon));
  }

  ModelBuilder& b_;
  const ModelOptions& options_;
};

// torchvision's module names: "Mixed_6a" is module 0 of stage 6. Numbered once the
// letters run out (depth_multiplier adding modules).
std::string mixed(int stage, int64_t index) {
  const std::string prefix = "Mixed_" + std::to_string(stage);
  if (index < 26) return prefix + static_cast<char>('a' + index);
  return prefix + "_" + std::to_string(index);
}

}  // namespace

Graph build_inception_v3(std::string_view name, const ModelOptions& options) {
  check_options(name, options);
  const int64_t size = or_default(options.image_size, 299);
  ModelBuilder b(std::string(name), options.batch_size);
  InceptionBuilder m(b, options);
  NodeId x = b.input("input", {or_default(options.in_channels, 3), size, size});
  x = m.conv("Conv2d_1a_3x3", x, 32, 3, 2);
  x = m.conv("Conv2d_2a_3x3", x, 32, 3);
  x = m.conv("Conv2d_2b_3x3", x, 64, 3, 1, 1);
  x = m.max_pool("maxpool1", x);
  x = m.conv("Conv2d_3b_1x1", x, 80, 1);
  x = m.conv("Conv2d_4a_3x3", x, 192, 3);
  x = m.max_pool("maxpool2", x);

  const int64_t a_modules = scaled_depth(3, options);
  for (int64_t i = 0; i < a_modules; ++i) {
    x = m.inception_a(mixed(5, i + 1), x, i == 0 ? 32 : 64);  // from Mixed_5b
  }
  x = m.inception_b(mixed(6, 0), x);
  const int64_t c_modules = scaled_depth(4, options);
  for (int64_t i = 0; i < c_modules; ++i) {
    const int64_t c7 = i == 0 ? 128 : (i == c_modules - 1 ? 192 : 160);
    x = m.inception_c(mixed(6, i + 1), x, c7);
  }
  x = m.inception_d(mixed(7, 0), x);
  const int64_t e_modules = scaled_depth(2, options);
  for (int64_t i = 0; i < e_modules; ++i) x = m.inception_e(mixed(7, i + 1), x);

  x = b.unary("avgpool", "global_avg_pool", x);
  x = b.layer("dropout", "dropout", {{"p", 0.5}, {"seed", int64_t{0}}}, {x});
  b.layer("fc", "linear",
          {{"in_features", b.channels(x)}, {"out_features", or_default(options.classes, 1000)}},
          {x});
  return b.take();
}

}  // namespace interplace::placement::zoo
