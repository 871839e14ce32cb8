#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/layers/loss.hpp"

namespace interplace::kernels {
namespace {

using testing::check_gradients;
using testing::random_tensor;
using testing::throws_invalid;

double reference_loss(const Tensor& logits, const Tensor& labels) {
  const int64_t classes = logits.dim(-1), rows = logits.numel() / classes;
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = logits.data() + r * classes;
    double max = z[0];
    for (int64_t c = 0; c < classes; ++c) max = std::max(max, double(z[c]));
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(z[c] - max);
    total += std::log(sum) + max - z[static_cast<int64_t>(labels.data()[r])];
  }
  return total / double(rows);
}

float forward_loss(SoftmaxCrossEntropy& layer, const Tensor& logits, const Tensor& labels,
                   Context& ctx) {
  const Tensor loss = layer.forward(std::vector<Tensor>{logits, labels}, ctx);
  EXPECT_EQ(loss.shape(), Shape{1});
  return loss.data()[0];
}

TEST(SoftmaxCrossEntropy, ForwardMatchesNaiveReference) {
  SoftmaxCrossEntropy layer;
  Context ctx;
  const Tensor logits = random_tensor({6, 5}, 1, 2.0f);
  const Tensor labels = Tensor::from_vector({6}, std::vector<float>{0, 4, 2, 2, 1, 3});
  EXPECT_NEAR(forward_loss(layer, logits, labels, ctx), reference_loss(logits, labels), 1e-5);
  // Sequence layout: logits [B, T, C] with labels [B, T] or flat [B * T].
  const Tensor logits_3d = logits.reshaped({2, 3, 5});
  EXPECT_NEAR(forward_loss(layer, logits_3d, labels.reshaped({2, 3}), ctx),
              reference_loss(logits, labels), 1e-5);
  EXPECT_NEAR(forward_loss(layer, logits_3d, labels, ctx), reference_loss(logits, labels), 1e-5);
}

TEST(SoftmaxCrossEntropy, StaysFiniteForExtremeLogits) {
  SoftmaxCrossEntropy layer;
  Context ctx;
  const Tensor logits = Tensor::from_vector({2, 3}, std::vector<float>{0, 1e4f, -1e4f, 50, 50, 50});
  const Tensor labels = Tensor::from_vector({2}, std::vector<float>{0, 1});
  // Row 0: the label's probability underflows, its loss is 1e4; row 1: log 3.
  EXPECT_NEAR(forward_loss(layer, logits, labels, ctx), (1e4 + std::log(3.0)) / 2, 1e-2);
}

TEST(SoftmaxCrossEntropy, CountsCorrectArgMaxPredictions) {
  SoftmaxCrossEntropy layer;
  Context ctx;
  // Arg-maxes per row: 2, 0, 1, 0 (the first of a tie).
  const Tensor logits =
      Tensor::from_vector({4, 3}, std::vector<float>{0, 1, 5, 3, 2, 1, -1, 0, -2, 7, 7, 1});
  const Tensor labels = Tensor::from_vector({4}, std::vector<float>{2, 1, 1, 0});
  forward_loss(layer, logits, labels, ctx);
  EXPECT_EQ(SoftmaxCrossEntropy::correct_count(ctx), 3);
  const Tensor wrong = Tensor::from_vector({4}, std::vector<float>{0, 1, 2, 1});
  forward_loss(layer, logits, wrong, ctx);
  EXPECT_EQ(SoftmaxCrossEntropy::correct_count(ctx), 0);
  Context empty;
  EXPECT_TRUE(
      throws_invalid([&] { SoftmaxCrossEntropy::correct_count(empty); }, {"no forward call"}));
}

TEST(SoftmaxCrossEntropy, LogitGradientsMatchFiniteDifferences) {
  SoftmaxCrossEntropy layer;
  testing::GradCheckOptions options;
  options.differentiable = {true, false};
  const Tensor labels = Tensor::from_vector({2, 2}, std::vector<float>{1, 0, 3, 3});
  EXPECT_TRUE(check_gradients(layer, {random_tensor({2, 2, 4}, 2, 2.0f), labels}, options));
}

TEST(SoftmaxCrossEntropy, BackwardIsScaledSoftmaxMinusOneHot) {
  SoftmaxCrossEntropy layer;
  Context ctx;
  const Tensor logits = random_tensor({3, 4}, 3);
  const Tensor labels = Tensor::from_vector({3}, std::vector<float>{3, 0, 1});
  forward_loss(layer, logits, labels, ctx);
  const std::vector<Tensor> grads = layer.backward(Tensor::full({1}, 2.5f), ctx);
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_FALSE(grads[1].defined());
  ASSERT_EQ(grads[0].shape(), logits.shape());
  std::vector<double> expected;
  for (int64_t r = 0; r < 3; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < 4; ++c) sum += std::exp(double(logits.data()[r * 4 + c]));
    for (int64_t c = 0; c < 4; ++c) {
      const double p = std::exp(double(logits.data()[r * 4 + c])) / sum;
      expected.push_back((p - (c == static_cast<int64_t>(labels.data()[r]) ? 1.0 : 0.0)) * 2.5 / 3);
    }
  }
  EXPECT_TRUE(testing::all_close(grads[0], expected));
}

TEST(SoftmaxCrossEntropy, CountsFlops) {
  SoftmaxCrossEntropy layer;
  const std::vector<Shape> shapes = {{2, 3, 10}, {2, 3}};
  const FlopCount f = layer.flops(shapes);
  EXPECT_EQ(f.forward_flops, 5 * 60 + 2 * 6);
  EXPECT_EQ(f.backward_flops, 60 + 6);
  EXPECT_EQ(layer.parameter_count(), 0);
}

TEST(SoftmaxCrossEntropy, RejectsBadLabelsAndShapes) {
  SoftmaxCrossEntropy layer;
  Context ctx;
  const Tensor logits = Tensor::zeros({2, 10});
  const auto with_labels = [&](std::vector<float> labels) {
    return [&layer, &ctx, &logits, labels] {
      layer.forward(std::vector<Tensor>{logits, Tensor::from_vector({2}, labels)}, ctx);
    };
  };
  EXPECT_TRUE(throws_invalid(with_labels({1, 10}), {"label 10 at index 1", "[0, 10)"}));
  EXPECT_TRUE(throws_invalid(with_labels({-1, 0}), {"label -1 at index 0"}));
  EXPECT_TRUE(throws_invalid(with_labels({0, 2.5f}), {"label 2.5"}));
  EXPECT_TRUE(
      throws_invalid(with_labels({std::numeric_limits<float>::quiet_NaN(), 0}), {"label nan"}));
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(std::vector<Tensor>{logits, Tensor::zeros({3})}, ctx);
      },
      {"labels [3]", "expected [2]"}));
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(std::vector<Tensor>{Tensor::zeros({4}), Tensor::zeros({4})}, ctx);
      },
      {"[rows, classes]", "[4]"}));
  EXPECT_TRUE(throws_invalid([&] { layer.forward(logits, ctx); }, {"takes 2 input(s), got 1"}));
}

}  // namespace
}  // namespace interplace::kernels
