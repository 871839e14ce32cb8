#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/conv2d.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::check_gradients;
using testing::random_tensor;

struct ConvCase {
  const char* name;
  int64_t batch, in_channels, height, width, out_channels, kernel_h, kernel_w, stride, padding_h,
      padding_w, groups;
  bool bias;
};

// Direct loops in double: y[n,o,i,j] = b[o] + sum_{c in group, u, v}
// x[n,c,i*s+u-ph,j*s+v-pw] w[o,c',u,v].
std::vector<double> reference_conv(const ConvCase& c, const Tensor& x, const Tensor& w,
                                   const Tensor& b) {
  const int64_t ho = (c.height + 2 * c.padding_h - c.kernel_h) / c.stride + 1;
  const int64_t wo = (c.width + 2 * c.padding_w - c.kernel_w) / c.stride + 1;
  const int64_t cin_g = c.in_channels / c.groups, cout_g = c.out_channels / c.groups;
  std::vector<double> y;
  for (int64_t n = 0; n < c.batch; ++n) {
    for (int64_t o = 0; o < c.out_channels; ++o) {
      const int64_t group = o / cout_g;
      for (int64_t i = 0; i < ho; ++i) {
        for (int64_t j = 0; j < wo; ++j) {
          double sum = c.bias ? b.data()[o] : 0.0;
          for (int64_t ci = 0; ci < cin_g; ++ci) {
            const int64_t channel = group * cin_g + ci;
            for (int64_t u = 0; u < c.kernel_h; ++u) {
              for (int64_t v = 0; v < c.kernel_w; ++v) {
                const int64_t r = i * c.stride + u - c.padding_h;
                const int64_t s = j * c.stride + v - c.padding_w;
                if (r < 0 || r >= c.height || s < 0 || s >= c.width) continue;
                sum +=
                    double(x.data()[((n * c.in_channels + channel) * c.height + r) * c.width + s]) *
                    w.data()[((o * cin_g + ci) * c.kernel_h + u) * c.kernel_w + v];
              }
            }
          }
          y.push_back(sum);
        }
      }
    }
  }
  return y;
}

Conv2d make_layer(const ConvCase& c, uint64_t seed) {
  Conv2d layer(c.in_channels, c.out_channels, Extent2d{c.kernel_h, c.kernel_w}, c.stride,
               Extent2d{c.padding_h, c.padding_w}, c.groups, c.bias);
  Rng rng(seed);
  layer.init_parameters(rng);
  return layer;
}

// Covers both the blocked-layout path (3x3, several channels, groups) and the plain path
// (1x1 ungrouped, single input channel), channel counts that are and are not multiples
// of the 8-channel blocks, odd and non-square sizes, and rectangular kernels with
// per-axis padding (Inception-v3's 1x7/7x1 and 1x3/3x1).
const ConvCase kCases[] = {
    {"3x3_pad1", 2, 8, 6, 6, 16, 3, 3, 1, 1, 1, 1, true},
    {"3x3_stride2_odd", 3, 5, 9, 7, 6, 3, 3, 2, 1, 1, 1, true},
    {"groups2", 2, 4, 7, 5, 6, 3, 3, 1, 1, 1, 2, true},
    {"depthwise", 2, 8, 6, 6, 8, 3, 3, 1, 1, 1, 8, false},
    {"depthwise_stride2", 1, 3, 7, 7, 3, 3, 3, 2, 1, 1, 3, true},
    {"1x1", 2, 6, 5, 5, 4, 1, 1, 1, 0, 0, 1, true},
    {"1x1_stride2", 2, 16, 7, 7, 8, 1, 1, 2, 0, 0, 1, false},
    {"single_input_channel", 4, 1, 8, 8, 16, 3, 3, 1, 1, 1, 1, false},
    {"5x5_no_padding", 2, 3, 9, 8, 4, 5, 5, 1, 0, 0, 1, true},
    {"kernel_equals_padded_input", 1, 2, 2, 2, 3, 4, 4, 1, 1, 1, 1, true},
    {"1x7_pad0x3", 2, 6, 5, 9, 4, 1, 7, 1, 0, 3, 1, false},
    {"7x1_pad3x0", 2, 6, 9, 5, 4, 7, 1, 1, 3, 0, 1, true},
    {"1x3_pad0x1_stride2", 1, 4, 6, 7, 8, 1, 3, 2, 0, 1, 1, true},
    {"3x1_single_input_channel", 2, 1, 7, 4, 3, 3, 1, 1, 1, 0, 1, false},
    {"depthwise_3x5_pad1x2", 2, 4, 6, 8, 4, 3, 5, 1, 1, 2, 4, false},
};

class Conv2dCases : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2dCases, ForwardMatchesNaiveReference) {
  const ConvCase& c = GetParam();
  Conv2d layer = make_layer(c, 1);
  const Tensor x = random_tensor({c.batch, c.in_channels, c.height, c.width}, 2);
  Context ctx;
  const Tensor y = layer.forward(x, ctx);
  const Tensor none;
  EXPECT_TRUE(
      all_close(y, reference_conv(c, x, layer.weight().value, c.bias ? layer.bias().value : none),
                1e-4, 1e-4));
  // A second call of the same geometry (cached plan) on other data.
  const Tensor x2 = random_tensor(x.shape(), 3);
  const Tensor y2 = layer.forward(x2, ctx);
  EXPECT_TRUE(
      all_close(y2, reference_conv(c, x2, layer.weight().value, c.bias ? layer.bias().value : none),
                1e-4, 1e-4));
}

TEST_P(Conv2dCases, GradientsMatchFiniteDifferences) {
  const ConvCase& c = GetParam();
  Conv2d layer = make_layer(c, 4);
  testing::GradCheckOptions options;
  options.max_elements = 64;
  EXPECT_TRUE(check_gradients(
      layer, {random_tensor({c.batch, c.in_channels, c.height, c.width}, 5)}, options));
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dCases, ::testing::ValuesIn(kCases),
                         [](const auto& test) { return std::string(test.param.name); });

TEST(Conv2d, SecondBackwardAccumulatesParameterGradients) {
  Conv2d layer = make_layer({"", 2, 4, 5, 5, 8, 3, 3, 1, 1, 1, 1, true}, 6);
  EXPECT_TRUE(testing::backward_accumulates(layer, random_tensor({2, 4, 5, 5}, 7), 8));
}

TEST(Conv2d, InitialisesWithinPyTorchBound) {
  Conv2d layer = make_layer({"", 1, 8, 1, 1, 4, 3, 3, 1, 0, 0, 2, true}, 9);
  const float bound = 1.0f / std::sqrt(4.0f * 9.0f);  // fan_in = 8/2 * 3 * 3
  float largest = 0.0f;
  for (Parameter* p : layer.parameters()) {
    for (float v : p->value.to_vector()) largest = std::max(largest, std::abs(v));
  }
  EXPECT_LE(largest, bound);
  EXPECT_GT(largest, 0.8f * bound);
}

TEST(Conv2d, CountsParametersAndFlops) {
  Conv2d layer(16, 32, 3, 2, 1);
  EXPECT_EQ(layer.parameter_count(), 32 * 16 * 9 + 32);
  EXPECT_EQ(Conv2d(32, 32, 3, 1, 1, 32, false).parameter_count(), 32 * 9);
  const FlopCount f = layer.flops(Shape{128, 16, 28, 28});
  const int64_t outputs = 128 * 32 * 14 * 14;
  EXPECT_EQ(f.forward_flops, 2 * outputs * 16 * 9 + outputs);
  EXPECT_EQ(f.backward_flops, 4 * outputs * 16 * 9 + outputs);
  EXPECT_EQ(f.parameter_grad_flops, 2 * outputs * 16 * 9 + outputs);  // weight and bias
  const FlopCount grouped = Conv2d(8, 8, 3, 1, 1, 4, false).flops(Shape{1, 8, 6, 6});
  EXPECT_EQ(grouped.forward_flops, 2 * 8 * 36 * 2 * 9);
  EXPECT_EQ(layer.output_shape(Shape{1, 16, 7, 8}), (Shape{1, 32, 4, 4}));
}

TEST(Conv2d, RectangularKernelsCountParametersFlopsAndShapes) {
  // Inception-v3's Mixed_6b.branch7x7_2: 1x7 with padding (0, 3) keeps 17x17.
  Conv2d wide(128, 128, Extent2d{1, 7}, 1, Extent2d{0, 3}, 1, false);
  EXPECT_EQ(wide.parameter_count(), 128 * 128 * 7);
  EXPECT_EQ(wide.output_shape(Shape{2, 128, 17, 17}), (Shape{2, 128, 17, 17}));
  const int64_t outputs = 2 * 128 * 17 * 17;
  EXPECT_EQ(wide.flops(Shape{2, 128, 17, 17}).forward_flops, 2 * outputs * 128 * 7);
  EXPECT_EQ(wide.weight().value.shape(), (Shape{128, 128, 1, 7}));
  // Without padding only the width shrinks; stride applies to both axes.
  Conv2d tall(4, 4, Extent2d{3, 1}, 2, Extent2d{0, 0}, 1, false);
  EXPECT_EQ(tall.output_shape(Shape{1, 4, 9, 9}), (Shape{1, 4, 4, 5}));
  EXPECT_EQ(tall.kernel().h, 3);
  EXPECT_EQ(tall.kernel().w, 1);
}

TEST(Conv2d, SquareConstructorEqualsTheExtentOne) {
  Conv2d square(3, 5, 3, 2, 1, 1, true);
  Conv2d extents(3, 5, Extent2d{3, 3}, 2, Extent2d{1, 1}, 1, true);
  Rng a(11), b(11);
  square.init_parameters(a);
  extents.init_parameters(b);
  const Tensor x = random_tensor({2, 3, 7, 6}, 12);
  Context ca, cb;
  const Tensor ys = square.forward(x, ca);
  const std::vector<float> ye = extents.forward(x, cb).to_vector();
  EXPECT_TRUE(all_close(ys, std::vector<double>(ye.begin(), ye.end()), 0, 0));
}

using testing::expect_invalid;

TEST(Conv2d, RejectsBadShapesAndArguments) {
  expect_invalid([] { Conv2d(0, 4, 3); }, "in_channels must be >= 1, got 0");
  expect_invalid([] { Conv2d(4, 4, 0); }, "kernel_size must be >= 1, got 0");
  expect_invalid([] { Conv2d(4, 4, 3, 0); }, "stride must be >= 1, got 0");
  expect_invalid([] { Conv2d(4, 4, 3, 1, -1); }, "padding must be >= 0, got -1");
  expect_invalid([] { Conv2d(6, 4, 3, 1, 0, 4); }, "groups 4 must divide in_channels 6");
  Conv2d layer(3, 4, 3);
  Context ctx;
  expect_invalid([&] { layer.forward(Tensor::zeros({3, 5, 5}), ctx); }, "must be [N, C, H, W]");
  expect_invalid(
      [&] {
        layer.forward(Tensor::zeros({1, 2, 5, 5}), ctx);
      },
      "has 2 channels, expected 3");
  expect_invalid(
      [&] {
        layer.forward(Tensor::zeros({1, 3, 2, 5}), ctx);
      },
      "kernel 3 is larger than the padded input 2x5");
  Context empty;
  EXPECT_THROW(layer.backward(Tensor::zeros({1, 4, 3, 3}), empty), Error);
}

TEST(Conv2d, RejectsBadRectangularKernelsAndPadding) {
  expect_invalid(
      [] {
        Conv2d(4, 4, Extent2d{1, 0}, 1, Extent2d{0, 0});
      },
      "kernel_w must be >= 1, got 0");
  expect_invalid(
      [] {
        Conv2d(4, 4, Extent2d{0, 3}, 1, Extent2d{0, 0});
      },
      "kernel_h must be >= 1, got 0");
  expect_invalid(
      [] {
        Conv2d(4, 4, Extent2d{1, 7}, 1, Extent2d{0, -1});
      },
      "padding must be >= 0, got -1");
  Conv2d layer(2, 2, Extent2d{1, 7}, 1, Extent2d{0, 1});
  Context ctx;
  expect_invalid(
      [&] {
        layer.forward(Tensor::zeros({1, 2, 3, 3}), ctx);
      },
      "kernel 1x7 is larger than the padded input 3x3 (padding 0x1)");
  Backend& backend = backend_for(Device::cpu);
  Tensor y({1, 2, 3, 3});
  expect_invalid(
      [&] {
        backend.conv2d_forward({1, 2, 3, 3, 2, 1, 3, 1, 0, -1, 1}, Tensor::zeros({1, 2, 3, 3}),
                               Tensor::zeros({2, 2, 1, 3}), Tensor(), y);
      },
      "invalid geometry");
}

TEST(Conv2d, BackendRejectsTensorsThatDoNotMatchTheGeometry) {
  Backend& backend = backend_for(Device::cpu);
  const Conv2dGeometry g{1, 2, 5, 5, 4, 3, 3, 1, 1, 1, 1};
  Tensor y({1, 4, 5, 5});
  expect_invalid(
      [&] {
        backend.conv2d_forward(g, Tensor::zeros({1, 3, 5, 5}), Tensor::zeros({4, 2, 3, 3}),
                               Tensor(), y);
      },
      "input [1, 3, 5, 5] has 75 elements, expected 50");
  Tensor dw({4, 2, 3, 3}), wrong_bias({3});
  expect_invalid(
      [&] {
        backend.conv2d_backward_weights(g, Tensor::zeros({1, 2, 5, 5}), y, dw, wrong_bias);
      },
      "bias gradient [3]");
  expect_invalid(
      [&] {
        backend.conv2d_backward_data({1, 2, 5, 5, 4, 3, 3, 1, 1, 1, 3}, y, dw, y);
      },
      "invalid geometry");
}

}  // namespace
}  // namespace interplace::kernels
