#include <gtest/gtest.h>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/layers/select_token.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::random_tensor;
using testing::throws_invalid;

TEST(SelectToken, ForwardPicksThePositionOfEverySample) {
  const Tensor x = random_tensor({3, 4, 5}, 1);
  for (int64_t index : {0, 2, 3}) {
    SelectToken layer(index);
    Context ctx;
    const Tensor y = layer.forward(x, ctx);
    ASSERT_EQ(y.shape(), (Shape{3, 5}));
    std::vector<double> expected;
    for (int64_t b = 0; b < 3; ++b) {
      for (int64_t d = 0; d < 5; ++d) expected.push_back(x.data()[(b * 4 + index) * 5 + d]);
    }
    EXPECT_TRUE(all_close(y, expected, 0, 0)) << "index " << index;
  }
}

TEST(SelectToken, BackwardWritesOnlyTheSelectedPosition) {
  SelectToken layer(1);
  const Tensor x = random_tensor({2, 3, 4}, 2);
  const Tensor dy = random_tensor({2, 4}, 3);
  Context ctx;
  layer.forward(x, ctx);
  const std::vector<Tensor> grads = layer.backward(dy, ctx);
  ASSERT_EQ(grads.size(), 1u);
  std::vector<double> expected(24, 0.0);
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t d = 0; d < 4; ++d) {
      expected[static_cast<size_t>((b * 3 + 1) * 4 + d)] = dy.data()[b * 4 + d];
    }
  }
  EXPECT_TRUE(all_close(grads[0], expected, 0, 0));
  EXPECT_TRUE(testing::check_gradients(layer, {random_tensor({2, 3, 4}, 4)}));
}

TEST(SelectToken, CountsNoFlopsOrParameters) {
  SelectToken layer;
  EXPECT_EQ(layer.index(), 0);
  EXPECT_EQ(layer.type(), "SelectToken");
  EXPECT_EQ(layer.parameter_count(), 0);
  EXPECT_EQ(layer.flops(Shape{8, 128, 768}).forward_flops, 0);
  EXPECT_EQ(layer.output_shape(Shape{8, 128, 768}), (Shape{8, 768}));
}

TEST(SelectToken, RejectsBadIndicesAndShapes) {
  EXPECT_TRUE(throws_invalid([] { SelectToken(-1); }, {"index must be >= 0", "-1"}));
  SelectToken layer(4);
  Context ctx;
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(Tensor::zeros({2, 4, 3}), ctx);
      },
      {"index 4", "4 positions", "[2, 4, 3]"}));
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(Tensor::zeros({2, 12}), ctx);
      },
      {"[batch, time, features]", "[2, 12]"}));
}

}  // namespace
}  // namespace interplace::kernels
