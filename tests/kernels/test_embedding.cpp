#include <gtest/gtest.h>

#include <limits>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/layers/embedding.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::check_gradients;
using testing::throws_invalid;

// Ids [2, 4] with a repeated token (3), so the gradient scatter must add, not overwrite.
Tensor sample_ids() {
  return Tensor::from_vector({2, 4}, std::vector<float>{3, 0, 3, 4, 1, 3, 2, 0});
}

TEST(Embedding, ForwardMatchesNaiveReference) {
  Embedding layer(5, 6, 3);
  Rng rng(1);
  layer.init_parameters(rng);
  const Tensor ids = sample_ids();
  Context ctx;
  const Tensor y = layer.forward(ids, ctx);
  ASSERT_EQ(y.shape(), (Shape{2, 4, 3}));
  std::vector<double> expected;
  for (int64_t r = 0; r < 8; ++r) {
    const auto id = static_cast<int64_t>(ids.data()[r]);
    for (int64_t d = 0; d < 3; ++d) {
      expected.push_back(double(layer.token_table().value.data()[id * 3 + d]) +
                         layer.position_table().value.data()[(r % 4) * 3 + d]);
    }
  }
  EXPECT_TRUE(all_close(y, expected));
}

TEST(Embedding, TableGradientsMatchFiniteDifferences) {
  Embedding layer(5, 6, 3);
  Rng rng(2);
  layer.init_parameters(rng);
  testing::GradCheckOptions options;
  options.differentiable = {false};
  EXPECT_TRUE(check_gradients(layer, {sample_ids()}, options));
}

TEST(Embedding, IdsGetNoGradientAndTablesAccumulate) {
  Embedding layer(5, 6, 3);
  const Tensor dy = testing::random_tensor({2, 4, 3}, 3);
  Context ctx;
  layer.forward(sample_ids(), ctx);
  layer.zero_grad();
  const std::vector<Tensor> grads = layer.backward(dy, ctx);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_FALSE(grads[0].defined());
  // Token 3 occurs at rows 0, 2 and 5.
  for (int64_t d = 0; d < 3; ++d) {
    const float expected = dy.data()[0 * 3 + d] + dy.data()[2 * 3 + d] + dy.data()[5 * 3 + d];
    EXPECT_FLOAT_EQ(layer.token_table().grad.data()[3 * 3 + d], expected);
  }
  const Tensor token_once = layer.token_table().grad.clone();
  const Tensor position_once = layer.position_table().grad.clone();
  layer.backward(dy, ctx);
  for (int64_t i = 0; i < token_once.numel(); ++i) {
    EXPECT_FLOAT_EQ(layer.token_table().grad.data()[i], 2 * token_once.data()[i]);
  }
  for (int64_t i = 0; i < position_once.numel(); ++i) {
    EXPECT_FLOAT_EQ(layer.position_table().grad.data()[i], 2 * position_once.data()[i]);
  }
  // Positions 4 and 5 are never used (T = 4): their gradient is zero, not garbage.
  for (int64_t i = 4 * 3; i < 6 * 3; ++i) EXPECT_EQ(layer.position_table().grad.data()[i], 0.0f);
}

TEST(Embedding, CountsParametersAndFlops) {
  Embedding gpt2(50257, 1024, 768);
  EXPECT_EQ(gpt2.parameter_count(), (50257 + 1024) * 768);
  std::vector<std::string> names;
  for (Parameter* p : gpt2.parameters()) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"token_table", "position_table"}));
  const FlopCount f = gpt2.flops(Shape{2, 8});
  EXPECT_EQ(f.forward_flops, 2 * 8 * 768);
  EXPECT_EQ(f.backward_flops, 2 * 2 * 8 * 768);
}

TEST(Embedding, RejectsBadIdsAndShapes) {
  EXPECT_TRUE(throws_invalid([] { Embedding(0, 4, 4); }, {"must be positive"}));
  EXPECT_TRUE(throws_invalid([] { Embedding(int64_t{1} << 25, 4, 4); }, {"33554432"}));
  Embedding layer(5, 4, 2);
  Context ctx;
  const auto forward_ids = [&](std::vector<float> ids) {
    return [&layer, &ctx, ids] { layer.forward(Tensor::from_vector({1, 2}, ids), ctx); };
  };
  EXPECT_TRUE(throws_invalid(forward_ids({1, 5}), {"token id 5 at index 1", "[0, 5)"}));
  EXPECT_TRUE(throws_invalid(forward_ids({-1, 0}), {"token id -1 at index 0"}));
  EXPECT_TRUE(throws_invalid(forward_ids({1.5f, 0}), {"token id 1.5"}));
  EXPECT_TRUE(
      throws_invalid(forward_ids({std::numeric_limits<float>::quiet_NaN(), 0}), {"token id nan"}));
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(Tensor::zeros({1, 5}), ctx);
      },
      {"sequence length 5", "max_positions 4"}));
  EXPECT_TRUE(
      throws_invalid([&] { layer.forward(Tensor::zeros({4}), ctx); }, {"[batch, time]", "[4]"}));
}

}  // namespace
}  // namespace interplace::kernels
