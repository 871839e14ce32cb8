#include <gtest/gtest.h>

#include "gradcheck.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/container.hpp"
#include "interplace/kernels/layers/linear.hpp"

namespace interplace::kernels {
namespace {

using testing::check_gradients;
using testing::random_tensor;

TEST(Sequential, ChainsShapesParametersAndGradients) {
  Sequential net;
  net.emplace<Linear>(4, 6);
  net.emplace<Linear>(6, 3);
  Rng rng(1);
  net.init_parameters(rng);
  EXPECT_EQ(net.output_shape(Shape{5, 4}), (Shape{5, 3}));
  EXPECT_EQ(net.parameter_count(), 4 * 6 + 6 + 6 * 3 + 3);
  const FlopCount f = net.flops(Shape{5, 4});
  EXPECT_EQ(f.forward_flops, Linear(4, 6).flops(Shape{5, 4}).forward_flops +
                                 Linear(6, 3).flops(Shape{5, 6}).forward_flops);
  EXPECT_TRUE(check_gradients(net, {random_tensor({5, 4}, 2)}));
}

TEST(Sequential, ForwardEqualsLayersAppliedInTurn) {
  Sequential net;
  Linear& first = net.emplace<Linear>(3, 3);
  Linear& second = net.emplace<Linear>(3, 2);
  Rng rng(3);
  net.init_parameters(rng);
  const Tensor x = random_tensor({2, 3}, 4);
  Context a, b, c;
  const Tensor expected = second.forward(first.forward(x, a), b);
  const Tensor y = net.forward(x, c);
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_FLOAT_EQ(y.data()[i], expected.data()[i]);
}

TEST(Residual, IdentityAndProjectionShortcutsHaveCorrectGradients) {
  Residual identity(std::make_unique<Linear>(4, 4), nullptr);
  Rng rng(5);
  identity.init_parameters(rng);
  EXPECT_TRUE(check_gradients(identity, {random_tensor({3, 4}, 6)}));

  Residual projection(std::make_unique<Linear>(4, 2), std::make_unique<Linear>(4, 2, false));
  projection.init_parameters(rng);
  EXPECT_EQ(projection.parameter_count(), 4 * 2 + 2 + 4 * 2);
  EXPECT_TRUE(check_gradients(projection, {random_tensor({3, 4}, 7)}));
}

TEST(Residual, RejectsBranchesOfDifferentShapes) {
  Residual bad(std::make_unique<Linear>(4, 3), nullptr);
  EXPECT_THROW(bad.output_shape(Shape{2, 4}), Error);
  EXPECT_THROW(Residual(nullptr, nullptr), Error);
  Sequential net;
  EXPECT_THROW(net.add(nullptr), Error);
}

}  // namespace
}  // namespace interplace::kernels
