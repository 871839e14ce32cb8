#include <gtest/gtest.h>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/pad.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::check_gradients;
using testing::expect_invalid;
using testing::random_tensor;

struct PadCase {
  const char* name;
  Shape input;
  int64_t top, bottom, left, right;
};

// y[n, c, i, j] = x[n, c, i - top, j - left], or 0 outside x; in double.
std::vector<double> reference_pad(const Tensor& x, const PadCase& c) {
  const int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t ho = h + c.top + c.bottom, wo = w + c.left + c.right;
  std::vector<double> y;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t i = 0; i < ho; ++i) {
      for (int64_t j = 0; j < wo; ++j) {
        const int64_t r = i - c.top, s = j - c.left;
        y.push_back(r < 0 || r >= h || s < 0 || s >= w ? 0.0 : x.data()[(p * h + r) * w + s]);
      }
    }
  }
  return y;
}

// NASNet's uses (Keras ZeroPadding2D / Cropping2D) and general mixes of both.
const PadCase kCases[] = {
    {"pad_bottom_right", {2, 3, 4, 5}, 0, 1, 0, 1},
    {"crop_top_left", {2, 3, 5, 6}, -1, 0, -1, 0},
    {"pad_and_crop_in_one", {1, 2, 4, 4}, -1, 1, -1, 1},
    {"correct_pad_5x5_even", {2, 2, 6, 6}, 1, 2, 1, 2},
    {"asymmetric_mixed", {3, 1, 7, 5}, 2, -3, -2, 3},
    {"crop_to_one_row", {1, 2, 3, 4}, -1, -1, 0, 0},
    {"shift_past_the_input", {1, 1, 2, 2}, 3, -1, 0, 0},
};

class PadCases : public ::testing::TestWithParam<PadCase> {};

TEST_P(PadCases, ForwardMatchesReference) {
  const PadCase& c = GetParam();
  Pad2d layer(c.top, c.bottom, c.left, c.right);
  const Tensor x = random_tensor(c.input, 1);
  Context ctx;
  const Tensor y = layer.forward(x, ctx);
  EXPECT_EQ(y.shape(), (Shape{c.input[0], c.input[1], c.input[2] + c.top + c.bottom,
                              c.input[3] + c.left + c.right}));
  EXPECT_TRUE(all_close(y, reference_pad(x, c), 0, 0));
}

TEST_P(PadCases, GradientsMatchFiniteDifferences) {
  const PadCase& c = GetParam();
  Pad2d layer(c.top, c.bottom, c.left, c.right);
  EXPECT_TRUE(check_gradients(layer, {random_tensor(c.input, 2)}));
}

INSTANTIATE_TEST_SUITE_P(Shapes, PadCases, ::testing::ValuesIn(kCases),
                         [](const auto& test) { return std::string(test.param.name); });

TEST(Pad2d, BackwardDropsTheGradientOfCroppedElements) {
  // 2x2 input, crop the top row and pad one column on the right: y = [[x10, x11, 0]].
  Pad2d layer(-1, 0, 0, 1);
  const Tensor x = Tensor::from_vector({1, 1, 2, 2}, std::vector<float>{1, 2, 3, 4});
  Context ctx;
  EXPECT_TRUE(all_close(layer.forward(x, ctx), {3, 4, 0}, 0, 0));
  const auto grads =
      layer.backward(Tensor::from_vector({1, 1, 1, 3}, std::vector<float>{10, 20, 30}), ctx);
  EXPECT_TRUE(all_close(grads[0], {0, 0, 10, 20}, 0, 0));
}

TEST(Pad2d, HasNoParametersAndNoFlops) {
  Pad2d layer(0, 1, 0, 1);
  EXPECT_EQ(layer.parameter_count(), 0);
  const FlopCount f = layer.flops(Shape{2, 8, 5, 5});
  EXPECT_EQ(f.forward_flops, 0);
  EXPECT_EQ(f.backward_flops, 0);
  EXPECT_EQ(layer.output_shape(Shape{2, 8, 5, 5}), (Shape{2, 8, 6, 6}));
}

TEST(Pad2d, RejectsBadShapesAndEmptyOutputs) {
  Pad2d layer(-1, -1, 0, 0);
  Context ctx;
  expect_invalid([&] { layer.forward(Tensor::zeros({2, 4, 4}), ctx); }, "must be [N, C, H, W]");
  expect_invalid(
      [&] {
        layer.forward(Tensor::zeros({1, 1, 2, 4}), ctx);
      },
      "leaves an empty 0x4 output");
  Backend& backend = backend_for(Device::cpu);
  const Pad2dGeometry g{1, 2, 3, 3, 0, 1, 0, 1};
  Tensor y({1, 2, 4, 4});
  expect_invalid([&] { backend.pad2d_forward(g, Tensor::zeros({1, 2, 3, 4}), y); }, "pad2d input");
  Tensor dx({1, 2, 3, 3});
  expect_invalid(
      [&] {
        backend.pad2d_backward(g, Tensor::zeros({1, 2, 3, 3}), dx);
      },
      "pad2d output gradient");
  expect_invalid(
      [&] {
        backend.pad2d_forward({1, 2, 3, 3, -2, -1, 0, 0}, dx, y);
      },
      "invalid geometry");
}

}  // namespace
}  // namespace interplace::kernels
