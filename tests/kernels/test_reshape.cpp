#include <gtest/gtest.h>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/layers/reshape.hpp"

namespace interplace::kernels {
namespace {

using testing::check_gradients;
using testing::random_tensor;
using testing::throws_invalid;

TEST(Flatten, KeepsTheBatchAxisAndTheData) {
  Flatten layer;
  const Tensor x = random_tensor({2, 3, 4, 5}, 1);
  Context ctx;
  const Tensor y = layer.forward(x, ctx);
  EXPECT_EQ(y.shape(), (Shape{2, 60}));
  EXPECT_EQ(y.to_vector(), x.to_vector());
  const Tensor dx = layer.backward(random_tensor({2, 60}, 2), ctx)[0];
  EXPECT_EQ(dx.shape(), x.shape());
  EXPECT_EQ(layer.flops(x.shape()).forward_flops, 0);
}

TEST(Flatten, GradientsMatchFiniteDifferences) {
  Flatten layer;
  EXPECT_TRUE(check_gradients(layer, {random_tensor({2, 3, 2}, 1)}));
}

TEST(Flatten, RejectsInputsWithoutFeatureAxes) {
  Flatten layer;
  Context ctx;
  EXPECT_TRUE(
      throws_invalid([&] { layer.forward(Tensor::zeros({5}), ctx); }, {"[5]", "rank >= 2"}));
}

TEST(Reshape, ReshapesEachSample) {
  Reshape layer({3, 20});
  const Tensor x = random_tensor({2, 60}, 1);
  Context ctx;
  const Tensor y = layer.forward(x, ctx);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 20}));
  EXPECT_EQ(y.to_vector(), x.to_vector());
  EXPECT_EQ(layer.backward(random_tensor({2, 3, 20}, 2), ctx)[0].shape(), x.shape());
}

TEST(Reshape, GradientsMatchFiniteDifferences) {
  Reshape layer({2, 3});
  EXPECT_TRUE(check_gradients(layer, {random_tensor({2, 3, 2}, 1)}));
}

TEST(Reshape, RejectsBadShapes) {
  EXPECT_TRUE(throws_invalid([] { Reshape({3, 0}); }, {"[3, 0]", "positive extents"}));
  EXPECT_TRUE(throws_invalid([] { Reshape(Shape{}); }, {"must not be empty"}));
  Reshape layer({4, 4});
  Context ctx;
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(Tensor::zeros({2, 15}), ctx);
      },
      {"[2, 15]", "15 elements per sample, expected 16"}));
}

}  // namespace
}  // namespace interplace::kernels
