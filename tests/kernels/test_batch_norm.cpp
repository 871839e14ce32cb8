#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/batch_norm.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::check_gradients;
using testing::random_tensor;

// gamma and beta away from their 1/0 initial values so that both show up in the output.
void set_affine(BatchNorm2d& layer, uint64_t seed) {
  const Tensor g = random_tensor(layer.weight().value.shape(), seed, 0.5f);
  for (int64_t c = 0; c < g.numel(); ++c) {
    layer.weight().value.data()[c] = 1.0f + g.data()[c];
    layer.bias().value.data()[c] = 0.3f * g.data()[c] - 0.1f;
  }
}

// y = gamma (x - mean) / sqrt(var + eps) + beta per channel, in double.
std::vector<double> reference(const Tensor& x, BatchNorm2d& layer, const std::vector<double>& mean,
                              const std::vector<double>& var, double eps) {
  const int64_t n = x.dim(0), c = x.dim(1), area = x.dim(2) * x.dim(3);
  std::vector<double> y(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const auto k = static_cast<size_t>(ch);
      for (int64_t s = 0; s < area; ++s) {
        const int64_t at = (i * c + ch) * area + s;
        y[static_cast<size_t>(at)] =
            layer.weight().value.data()[ch] * (x.data()[at] - mean[k]) / std::sqrt(var[k] + eps) +
            layer.bias().value.data()[ch];
      }
    }
  }
  return y;
}

// Per-channel mean and biased variance in double.
void batch_statistics(const Tensor& x, std::vector<double>& mean, std::vector<double>& var) {
  const int64_t n = x.dim(0), c = x.dim(1), area = x.dim(2) * x.dim(3);
  mean.assign(static_cast<size_t>(c), 0.0);
  var.assign(static_cast<size_t>(c), 0.0);
  for (int64_t ch = 0; ch < c; ++ch) {
    const auto k = static_cast<size_t>(ch);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t s = 0; s < area; ++s) mean[k] += x.data()[(i * c + ch) * area + s];
    }
    mean[k] /= double(n * area);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t s = 0; s < area; ++s) {
        const double d = x.data()[(i * c + ch) * area + s] - mean[k];
        var[k] += d * d;
      }
    }
    var[k] /= double(n * area);
  }
}

TEST(BatchNorm2d, TrainingForwardNormalisesWithBatchStatistics) {
  BatchNorm2d layer(3);
  set_affine(layer, 1);
  const Tensor x = random_tensor({4, 3, 5, 3}, 2, 2.0f);
  std::vector<double> mean, var;
  batch_statistics(x, mean, var);
  Context ctx;
  EXPECT_TRUE(all_close(layer.forward(x, ctx), reference(x, layer, mean, var, 1e-5), 1e-4, 1e-4));
}

TEST(BatchNorm2d, EvalForwardUsesRunningStatistics) {
  BatchNorm2d layer(3, 1e-3f);
  set_affine(layer, 3);
  const std::vector<double> mean = {0.5, -1.0, 2.0}, var = {0.25, 4.0, 1.5};
  for (int64_t c = 0; c < 3; ++c) {
    layer.running_mean().data()[c] = static_cast<float>(mean[static_cast<size_t>(c)]);
    layer.running_var().data()[c] = static_cast<float>(var[static_cast<size_t>(c)]);
  }
  layer.set_training(false);
  const Tensor x = random_tensor({2, 3, 4, 4}, 4);
  Context ctx;
  EXPECT_TRUE(all_close(layer.forward(x, ctx), reference(x, layer, mean, var, 1e-3), 1e-4, 1e-4));
  // Eval mode leaves the running statistics alone.
  EXPECT_FLOAT_EQ(layer.running_mean().data()[1], -1.0f);
  EXPECT_FLOAT_EQ(layer.running_var().data()[1], 4.0f);
}

TEST(BatchNorm2d, UpdatesRunningStatisticsLikePyTorch) {
  BatchNorm2d layer(2, 1e-5f, 0.25f);
  ASSERT_EQ(layer.buffers().size(), 2u);
  // Channel 0 holds 1, 2, 3, 6 (mean 3, sum of squared deviations 14, unbiased var 14/3);
  // channel 1 holds -1, -1, 1, 1 (mean 0, unbiased var 4/3).
  const Tensor x = Tensor::from_vector({2, 2, 1, 2}, std::vector<float>{1, 2, -1, -1, 3, 6, 1, 1});
  Context ctx;
  layer.forward(x, ctx);
  EXPECT_NEAR(layer.running_mean().data()[0], 0.75 * 0.0 + 0.25 * 3.0, 1e-6);
  EXPECT_NEAR(layer.running_mean().data()[1], 0.0, 1e-6);
  EXPECT_NEAR(layer.running_var().data()[0], 0.75 * 1.0 + 0.25 * 14.0 / 3.0, 1e-5);
  EXPECT_NEAR(layer.running_var().data()[1], 0.75 * 1.0 + 0.25 * 4.0 / 3.0, 1e-5);
  // A second step compounds the momentum.
  layer.forward(x, ctx);
  EXPECT_NEAR(layer.running_mean().data()[0], 0.75 * 0.75 + 0.25 * 3.0, 1e-6);
  EXPECT_NEAR(layer.running_var().data()[0], 0.75 * (0.75 + 0.25 * 14.0 / 3.0) + 0.25 * 14.0 / 3.0,
              1e-5);
}

TEST(BatchNorm2d, TrainingGradientsMatchFiniteDifferences) {
  BatchNorm2d layer(3);
  set_affine(layer, 5);
  testing::GradCheckOptions options;
  options.max_elements = 96;
  EXPECT_TRUE(check_gradients(layer, {random_tensor({3, 3, 4, 5}, 6, 1.5f)}, options));
}

TEST(BatchNorm2d, EvalGradientsMatchFiniteDifferences) {
  BatchNorm2d layer(4, 1e-2f);
  set_affine(layer, 7);
  const Tensor mean = random_tensor({4}, 8);
  for (int64_t c = 0; c < 4; ++c) {
    layer.running_mean().data()[c] = mean.data()[c];
    layer.running_var().data()[c] = 0.5f + static_cast<float>(c);
  }
  layer.set_training(false);
  EXPECT_TRUE(check_gradients(layer, {random_tensor({2, 4, 3, 3}, 9)}));
}

TEST(BatchNorm2d, SecondBackwardAccumulatesParameterGradients) {
  BatchNorm2d layer(2);
  set_affine(layer, 10);
  EXPECT_TRUE(testing::backward_accumulates(layer, random_tensor({2, 2, 3, 3}, 11), 12));
}

TEST(BatchNorm2d, CountsParametersAndFlops) {
  BatchNorm2d layer(16);
  EXPECT_EQ(layer.parameter_count(), 32);
  for (Parameter* p : layer.parameters()) EXPECT_FALSE(p->weight_decay) << p->name;
  const int64_t n = 8 * 16 * 5 * 5;
  EXPECT_EQ(layer.flops(Shape{8, 16, 5, 5}).forward_flops, 6 * n);
  EXPECT_EQ(layer.flops(Shape{8, 16, 5, 5}).backward_flops, 9 * n);
  layer.set_training(false);
  EXPECT_EQ(layer.flops(Shape{8, 16, 5, 5}).forward_flops, 2 * n);
}

using testing::expect_invalid;

TEST(BatchNorm2d, RejectsBadShapesAndArguments) {
  expect_invalid([] { BatchNorm2d(0); }, "channels must be >= 1, got 0");
  expect_invalid([] { BatchNorm2d(4, 0.0f); }, "epsilon must be > 0");
  expect_invalid([] { BatchNorm2d(4, 1e-5f, 1.5f); }, "momentum must be in [0, 1], got 1.5");
  BatchNorm2d layer(4);
  Context ctx;
  expect_invalid([&] { layer.forward(Tensor::zeros({2, 4, 3}), ctx); }, "must be [N, C, H, W]");
  expect_invalid(
      [&] {
        layer.forward(Tensor::zeros({2, 3, 2, 2}), ctx);
      },
      "has 3 channels, expected 4");
  expect_invalid(
      [&] {
        layer.forward(Tensor::zeros({1, 4, 1, 1}), ctx);
      },
      "more than one value per channel");
}

}  // namespace
}  // namespace interplace::kernels
