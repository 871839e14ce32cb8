#include <gtest/gtest.h>

#include <cmath>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/layers/elementwise.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::check_gradients;
using testing::random_tensor;
using testing::throws_invalid;

TEST(Multiply, ForwardIsTheElementwiseProduct) {
  Multiply layer;
  const std::vector<Tensor> inputs = {random_tensor({2, 3, 4}, 1), random_tensor({2, 3, 4}, 2)};
  Context ctx;
  const Tensor y = layer.forward(inputs, ctx);
  std::vector<double> expected;
  for (int64_t i = 0; i < y.numel(); ++i) {
    expected.push_back(double(inputs[0].data()[i]) * inputs[1].data()[i]);
  }
  EXPECT_TRUE(all_close(y, expected));
}

TEST(Multiply, GradientsMatchFiniteDifferences) {
  Multiply layer;
  EXPECT_TRUE(check_gradients(layer, {random_tensor({3, 5}, 3), random_tensor({3, 5}, 4)}));
}

// The same tensor on both inputs (x * x, a gate times itself) must get both halves.
TEST(Multiply, SquareGetsTwiceTheInput) {
  Multiply layer;
  const Tensor x = random_tensor({7}, 5);
  Context ctx;
  layer.forward(std::vector<Tensor>{x, x}, ctx);
  const std::vector<Tensor> grads = layer.backward(Tensor::full({7}, 1.0f), ctx);
  std::vector<double> expected;
  for (float v : x.to_vector()) expected.push_back(v);
  EXPECT_TRUE(all_close(grads[0], expected));
  EXPECT_TRUE(all_close(grads[1], expected));
}

TEST(Multiply, FlopsAndShapeErrors) {
  Multiply layer;
  const Shape shape{4, 8, 3};
  const std::vector<Shape> shapes = {shape, shape};
  EXPECT_EQ(layer.flops(shapes).forward_flops, 96);
  EXPECT_EQ(layer.flops(shapes).backward_flops, 192);
  EXPECT_EQ(layer.parameter_count(), 0);
  const std::vector<Shape> mismatched = {shape, Shape{4, 8, 2}};
  EXPECT_TRUE(throws_invalid([&] { layer.output_shape(mismatched); },
                             {"Multiply", "[4, 8, 2]", "both must be equal"}));
}

TEST(Affine, OneMinusXAndGradients) {
  Affine one_minus(-1.0f, 1.0f);
  const Tensor x = random_tensor({2, 5}, 6);
  Context ctx;
  std::vector<double> expected;
  for (float v : x.to_vector()) expected.push_back(1.0 - v);
  EXPECT_TRUE(all_close(one_minus.forward(x, ctx), expected));
  Affine scaled(0.25f, -3.0f);
  EXPECT_TRUE(check_gradients(one_minus, {random_tensor({3, 4}, 7)}));
  EXPECT_TRUE(check_gradients(scaled, {random_tensor({3, 4}, 8)}));
  EXPECT_EQ(scaled.flops(Shape{10}).forward_flops, 20);
  EXPECT_EQ(scaled.flops(Shape{10}).backward_flops, 10);
  EXPECT_TRUE(throws_invalid([] { Affine(std::nanf(""), 0.0f); }, {"must be finite"}));
}

TEST(Slice, TakesChannelsOfAxisOne) {
  Slice layer(1, 2);
  const Tensor x = random_tensor({2, 4, 3}, 9);
  Context ctx;
  const Tensor y = layer.forward(x, ctx);
  ASSERT_EQ(y.shape(), (Shape{2, 2, 3}));
  std::vector<double> expected;
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t c = 1; c < 3; ++c) {
      for (int64_t i = 0; i < 3; ++i) expected.push_back(x.data()[(n * 4 + c) * 3 + i]);
    }
  }
  EXPECT_TRUE(all_close(y, expected, 0, 0));
  EXPECT_TRUE(check_gradients(layer, {random_tensor({2, 4, 3}, 10)}));
  EXPECT_EQ(layer.flops(Shape{2, 4, 3}).forward_flops, 0);
}

TEST(Slice, RejectsBadRanges) {
  EXPECT_TRUE(throws_invalid([] { Slice(-1, 2); }, {"offset must be >= 0"}));
  EXPECT_TRUE(throws_invalid([] { Slice(0, 0); }, {"length >= 1"}));
  Slice layer(3, 2);
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.output_shape(Shape{2, 4, 3});
      },
      {"Slice [3, 5)", "[2, 4, 3]", "no such channels"}));
  EXPECT_TRUE(throws_invalid([&] { layer.output_shape(Shape{8}); }, {"no such channels"}));
}

}  // namespace
}  // namespace interplace::kernels
