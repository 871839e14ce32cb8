#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/pooling.hpp"
#include "interplace/kernels/random.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::check_gradients;
using testing::random_tensor;

// Max or average over each window, in double; the average divides by the in-bounds count
// or, with include_pad, by k * k.
std::vector<double> reference_pool(const Tensor& x, bool max, int64_t k, int64_t s, int64_t p,
                                   bool include_pad = false) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t ho = (h + 2 * p - k) / s + 1, wo = (w + 2 * p - k) / s + 1;
  std::vector<double> y;
  for (int64_t plane = 0; plane < n * c; ++plane) {
    for (int64_t i = 0; i < ho; ++i) {
      for (int64_t j = 0; j < wo; ++j) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0.0;
        int count = 0;
        for (int64_t r = i * s - p; r < i * s - p + k; ++r) {
          for (int64_t q = j * s - p; q < j * s - p + k; ++q) {
            if (r < 0 || r >= h || q < 0 || q >= w) continue;
            const double v = x.data()[(plane * h + r) * w + q];
            best = std::max(best, v);
            sum += v;
            ++count;
          }
        }
        y.push_back(max ? best : sum / static_cast<double>(include_pad ? k * k : count));
      }
    }
  }
  return y;
}

// Distinct values 0.1 apart in shuffled order: a finite-difference step of 1e-2 never
// changes which element wins a max window.
Tensor well_separated(const Shape& shape, uint64_t seed) {
  Tensor t(shape);
  std::vector<float> values(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.1f * static_cast<float>(i) - 1.0f;
  Rng rng(seed);
  for (size_t i = values.size(); i > 1; --i) std::swap(values[i - 1], values[rng.next_u64() % i]);
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

struct PoolCase {
  const char* name;
  Shape input;
  int64_t kernel, stride, padding;
};

const PoolCase kCases[] = {
    {"2x2_stride2", {2, 3, 6, 6}, 2, 2, 0},
    {"3x3_stride2_pad1_odd", {2, 2, 7, 5}, 3, 2, 1},
    {"3x3_stride1_pad1", {1, 3, 5, 5}, 3, 1, 1},
    {"overlapping_stride2", {3, 1, 9, 9}, 3, 2, 0},
};

class PoolCases : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolCases, MaxForwardMatchesReference) {
  const PoolCase& c = GetParam();
  MaxPool2d layer(c.kernel, c.stride, c.padding);
  const Tensor x = random_tensor(c.input, 1);
  Context ctx;
  EXPECT_TRUE(all_close(layer.forward(x, ctx),
                        reference_pool(x, true, c.kernel, c.stride, c.padding), 0, 0));
}

TEST_P(PoolCases, AverageForwardExcludesPadding) {
  const PoolCase& c = GetParam();
  AvgPool2d layer(c.kernel, c.stride, c.padding);
  const Tensor x = random_tensor(c.input, 2);
  Context ctx;
  EXPECT_TRUE(
      all_close(layer.forward(x, ctx), reference_pool(x, false, c.kernel, c.stride, c.padding)));
}

TEST_P(PoolCases, MaxGradientsMatchFiniteDifferences) {
  const PoolCase& c = GetParam();
  MaxPool2d layer(c.kernel, c.stride, c.padding);
  EXPECT_TRUE(check_gradients(layer, {well_separated(c.input, 3)}));
}

TEST_P(PoolCases, AverageGradientsMatchFiniteDifferences) {
  const PoolCase& c = GetParam();
  AvgPool2d layer(c.kernel, c.stride, c.padding);
  EXPECT_TRUE(check_gradients(layer, {random_tensor(c.input, 4)}));
}

TEST_P(PoolCases, AverageForwardCanCountPadding) {
  const PoolCase& c = GetParam();
  AvgPool2d layer(c.kernel, c.stride, c.padding, true);
  const Tensor x = random_tensor(c.input, 5);
  Context ctx;
  EXPECT_TRUE(all_close(layer.forward(x, ctx),
                        reference_pool(x, false, c.kernel, c.stride, c.padding, true)));
}

TEST_P(PoolCases, AverageCountingPaddingGradientsMatchFiniteDifferences) {
  const PoolCase& c = GetParam();
  AvgPool2d layer(c.kernel, c.stride, c.padding, true);
  EXPECT_TRUE(check_gradients(layer, {random_tensor(c.input, 6)}));
}

INSTANTIATE_TEST_SUITE_P(Shapes, PoolCases, ::testing::ValuesIn(kCases),
                         [](const auto& test) { return std::string(test.param.name); });

TEST(MaxPool2d, BackwardRoutesGradientToTheMaximum) {
  MaxPool2d layer(2, 2);
  // One 2x4 plane: windows {1, 5, 2, 0} and {3, -1, 4, 7}.
  const Tensor x = Tensor::from_vector({1, 1, 2, 4}, std::vector<float>{1, 5, 3, -1, 2, 0, 4, 7});
  Context ctx;
  EXPECT_TRUE(all_close(layer.forward(x, ctx), {5, 7}, 0, 0));
  const auto grads =
      layer.backward(Tensor::from_vector({1, 1, 1, 2}, std::vector<float>{10, 20}), ctx);
  EXPECT_TRUE(all_close(grads[0], {0, 10, 0, 0, 0, 0, 0, 20}, 0, 0));
}

TEST(AvgPool2d, CountIncludePadDividesBorderWindowsByTheFullKernel) {
  // Ones, 3x3 window, padding 1: a corner window holds 4 ones, an edge window 6.
  const Tensor x = Tensor::full({1, 1, 3, 3}, 1.0f);
  Context ctx;
  AvgPool2d including(3, 1, 1, true);
  EXPECT_TRUE(including.count_include_pad());
  EXPECT_TRUE(all_close(including.forward(x, ctx), {4 / 9.0, 6 / 9.0, 4 / 9.0, 6 / 9.0, 1, 6 / 9.0,
                                                    4 / 9.0, 6 / 9.0, 4 / 9.0}));
  AvgPool2d excluding(3, 1, 1);
  EXPECT_FALSE(excluding.count_include_pad());
  EXPECT_TRUE(all_close(excluding.forward(x, ctx), std::vector<double>(9, 1.0)));
  // Backward spreads each output gradient over all 9 window positions: the corner input
  // lies in 4 windows, each passing 1/9 of its gradient.
  including.forward(x, ctx);
  const auto grads = including.backward(Tensor::full({1, 1, 3, 3}, 1.0f), ctx);
  EXPECT_TRUE(all_close(
      grads[0], {4 / 9.0, 6 / 9.0, 4 / 9.0, 6 / 9.0, 1, 6 / 9.0, 4 / 9.0, 6 / 9.0, 4 / 9.0}));
}

TEST(MaxPool2d, ContextsInFlightKeepTheirOwnArgMax) {
  MaxPool2d layer(2, 2);
  const Tensor a = Tensor::from_vector({1, 1, 2, 2}, std::vector<float>{9, 0, 0, 0});
  const Tensor b = Tensor::from_vector({1, 1, 2, 2}, std::vector<float>{0, 0, 0, 9});
  Context ca, cb;
  layer.forward(a, ca);
  layer.forward(b, cb);
  const Tensor dy = Tensor::full({1, 1, 1, 1}, 1.0f);
  EXPECT_TRUE(all_close(layer.backward(dy, ca)[0], {1, 0, 0, 0}, 0, 0));
  EXPECT_TRUE(all_close(layer.backward(dy, cb)[0], {0, 0, 0, 1}, 0, 0));
}

TEST(GlobalAvgPool, AveragesEachChannel) {
  GlobalAvgPool layer;
  const Tensor x = random_tensor({3, 4, 5, 2}, 5);
  Context ctx;
  const Tensor y = layer.forward(x, ctx);
  ASSERT_EQ(y.shape(), (Shape{3, 4}));
  std::vector<double> expected;
  for (int64_t plane = 0; plane < 12; ++plane) {
    double sum = 0.0;
    for (int64_t i = 0; i < 10; ++i) sum += x.data()[plane * 10 + i];
    expected.push_back(sum / 10.0);
  }
  EXPECT_TRUE(all_close(y, expected));
  EXPECT_TRUE(check_gradients(layer, {random_tensor({2, 3, 3, 4}, 6)}));
}

TEST(Pooling, CountsFlopsAndHasNoParameters) {
  MaxPool2d max(3, 2, 1);
  AvgPool2d avg(2, 2);
  GlobalAvgPool global;
  EXPECT_EQ(max.parameter_count() + avg.parameter_count() + global.parameter_count(), 0);
  const int64_t outputs = 8 * 16 * 4 * 4;  // 8x8 input, kernel 3, stride 2, padding 1
  EXPECT_EQ(max.flops(Shape{8, 16, 8, 8}).forward_flops, outputs * 9);
  EXPECT_EQ(max.flops(Shape{8, 16, 8, 8}).backward_flops, outputs);
  EXPECT_EQ(avg.flops(Shape{8, 16, 8, 8}).backward_flops, outputs * 4);
  EXPECT_EQ(global.flops(Shape{8, 16, 8, 8}).forward_flops, 8 * 16 * 64);
  EXPECT_EQ(global.output_shape(Shape{8, 16, 8, 8}), (Shape{8, 16}));
}

using testing::expect_invalid;

TEST(Pooling, RejectsBadShapesAndArguments) {
  expect_invalid([] { MaxPool2d(0, 1); }, "kernel must be >= 1, got 0");
  expect_invalid([] { AvgPool2d(2, 0); }, "stride must be >= 1, got 0");
  expect_invalid([] { MaxPool2d(3, 1, 2); }, "padding must be in [0, kernel/2] = [0, 1], got 2");
  MaxPool2d layer(3, 2);
  Context ctx;
  expect_invalid([&] { layer.forward(Tensor::zeros({2, 4, 4}), ctx); }, "must be [N, C, H, W]");
  expect_invalid(
      [&] {
        layer.forward(Tensor::zeros({1, 1, 2, 5}), ctx);
      },
      "kernel 3 is larger than the padded input 2x5");
  GlobalAvgPool global;
  expect_invalid([&] { global.forward(Tensor::zeros({2, 4}), ctx); }, "must be [N, C, H, W]");
}

}  // namespace
}  // namespace interplace::kernels
