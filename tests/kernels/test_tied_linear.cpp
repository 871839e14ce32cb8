#include <gtest/gtest.h>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/layers/container.hpp"
#include "interplace/kernels/layers/embedding.hpp"
#include "interplace/kernels/layers/linear.hpp"
#include "interplace/kernels/layers/tied_linear.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::random_tensor;
using testing::throws_invalid;

std::vector<double> as_doubles(const Tensor& t) {
  const std::vector<float> v = t.to_vector();
  return {v.begin(), v.end()};
}

// A bound TiedLinear computes what a bias-free Linear with the same weight computes, and
// puts the weight gradient into the owner's parameter.
TEST(TiedLinear, MatchesLinearWithTheSameWeight) {
  Linear reference(6, 4, /*bias=*/false);
  reference.weight().value.copy_from(random_tensor({4, 6}, 1));
  Parameter owned{"token_table", random_tensor({4, 6}, 1), Tensor(), true};
  TiedLinear head(6, 4);
  head.bind(owned);
  const Tensor x = random_tensor({2, 3, 6}, 2);
  const Tensor dy = random_tensor({2, 3, 4}, 3);
  Context ref_ctx, ctx;
  EXPECT_TRUE(all_close(head.forward(x, ctx), as_doubles(reference.forward(x, ref_ctx)), 1e-6, 0));
  reference.zero_grad();
  owned.grad_is_zero = true;
  const Tensor dx_ref = reference.backward(dy, ref_ctx)[0];
  const Tensor dx = head.backward(dy, ctx)[0];
  EXPECT_TRUE(all_close(dx, as_doubles(dx_ref), 1e-6, 0));
  EXPECT_TRUE(all_close(owned.grad, as_doubles(reference.weight().grad), 1e-6, 0));
  EXPECT_FALSE(owned.grad_is_zero);
  // A second backward adds, as for any parameter.
  head.backward(dy, ctx);
  std::vector<double> doubled = as_doubles(reference.weight().grad);
  for (double& v : doubled) v *= 2;
  EXPECT_TRUE(all_close(owned.grad, doubled, 1e-5, 1e-6));
}

// Embedding followed by a head tied to its token table: the table's gradient must be the
// sum of both uses, which finite differences of the composite see.
TEST(TiedLinear, SharedTableGradientSumsBothUses) {
  Sequential model;
  Embedding& embedding = model.emplace<Embedding>(7, 5, 4);
  TiedLinear& head = model.emplace<TiedLinear>(4, 7);
  head.bind(embedding.token_table());
  Rng rng(4);
  model.init_parameters(rng);
  for (Parameter* p : model.parameters()) p->value.copy_from(random_tensor(p->value.shape(), 5));
  EXPECT_EQ(model.parameter_count(), (7 + 5) * 4);  // the head adds none
  const Tensor ids = Tensor::from_vector({2, 3}, std::vector<float>{1, 4, 1, 6, 0, 2});
  testing::GradCheckOptions options;
  options.differentiable = {false};
  EXPECT_TRUE(testing::check_gradients(model, {ids}, options));
}

TEST(TiedLinear, CountsNoParametersAndLinearFlops) {
  TiedLinear head(768, 50257);
  EXPECT_EQ(head.type(), "TiedLinear");
  EXPECT_EQ(head.parameter_count(), 0);
  EXPECT_FALSE(head.bound());
  EXPECT_EQ(head.output_shape(Shape{2, 16, 768}), (Shape{2, 16, 50257}));
  const FlopCount f = head.flops(Shape{2, 16, 768});
  EXPECT_EQ(f.forward_flops, 2LL * 32 * 768 * 50257);
  EXPECT_EQ(f.backward_flops, 4LL * 32 * 768 * 50257);
}

TEST(TiedLinear, RejectsUnboundUseAndWrongWeights) {
  EXPECT_TRUE(throws_invalid([] { TiedLinear(0, 3); }, {"features must be positive"}));
  TiedLinear head(4, 3);
  Context ctx;
  EXPECT_TRUE(throws_invalid(
      [&] {
        head.forward(Tensor::zeros({2, 4}), ctx);
      },
      {"no weight bound", "4 -> 3"}));
  Parameter wrong{"token_table", Tensor::zeros({4, 3}), Tensor(), true};
  EXPECT_TRUE(throws_invalid([&] { head.bind(wrong); }, {"'token_table' [4, 3]", "[3, 4]"}));
  Parameter right{"token_table", Tensor::zeros({3, 4}), Tensor(), true};
  head.bind(right);
  EXPECT_TRUE(throws_invalid(
      [&] {
        head.forward(Tensor::zeros({2, 5}), ctx);
      },
      {"must end in 4 features", "[2, 5]"}));
}

}  // namespace
}  // namespace interplace::kernels
