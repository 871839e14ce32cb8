#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layers/layer_norm.hpp"
#include "scoped_threads.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::check_gradients;
using testing::random_tensor;
using testing::throws_invalid;

void randomize(LayerNorm& layer, uint64_t seed) {
  layer.weight().value.copy_from(random_tensor(layer.weight().value.shape(), seed));
  layer.bias().value.copy_from(random_tensor(layer.bias().value.shape(), seed + 1));
}

TEST(LayerNorm, ForwardMatchesNaiveReference) {
  const int64_t features = 7;
  LayerNorm layer(features, 1e-3f);
  randomize(layer, 1);
  Tensor x = random_tensor({2, 3, features}, 2, 3.0f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] += 10.0f;  // rows with a large mean
  Context ctx;
  const Tensor y = layer.forward(x, ctx);
  ASSERT_EQ(y.shape(), x.shape());
  std::vector<double> expected;
  for (int64_t r = 0; r < 6; ++r) {
    const float* xr = x.data() + r * features;
    double mean = 0, var = 0;
    for (int64_t c = 0; c < features; ++c) mean += xr[c];
    mean /= features;
    for (int64_t c = 0; c < features; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    var /= features;
    for (int64_t c = 0; c < features; ++c) {
      expected.push_back((xr[c] - mean) / std::sqrt(var + 1e-3) * layer.weight().value.data()[c] +
                         layer.bias().value.data()[c]);
    }
  }
  EXPECT_TRUE(all_close(y, expected));
}

TEST(LayerNorm, GradientsMatchFiniteDifferences) {
  LayerNorm layer(5);
  randomize(layer, 3);
  EXPECT_TRUE(check_gradients(layer, {random_tensor({2, 3, 5}, 4)}));
}

TEST(LayerNorm, SecondBackwardAccumulatesParameterGradients) {
  LayerNorm layer(4);
  randomize(layer, 5);
  EXPECT_TRUE(testing::backward_accumulates(layer, random_tensor({3, 4}, 6), 7));
}

// The kernels reduce in a fixed order, so the thread count does not change any bit.
TEST(LayerNorm, ResultsDoNotDependOnTheThreadCount) {
  const int64_t rows = 300, features = 130;  // above the kernels' parallel threshold
  LayerNorm layer(features);
  randomize(layer, 8);
  const Tensor x = random_tensor({rows, features}, 9);
  const Tensor dy = random_tensor({rows, features}, 10);
  std::vector<std::vector<float>> results[2];
  for (int run = 0; run < 2; ++run) {
    const testing::ScopedThreads threads(run + 1);
    Context ctx;
    const Tensor y = layer.forward(x, ctx);
    layer.zero_grad();
    const Tensor dx = layer.backward(dy, ctx)[0];
    results[run] = {y.to_vector(), dx.to_vector(), layer.weight().grad.to_vector(),
                    layer.bias().grad.to_vector()};
  }
  for (size_t i = 0; i < results[0].size(); ++i) EXPECT_EQ(results[0][i], results[1][i]) << i;
}

TEST(LayerNorm, CountsParametersAndFlops) {
  LayerNorm layer(64);
  EXPECT_EQ(layer.parameter_count(), 128);
  for (Parameter* p : layer.parameters()) EXPECT_FALSE(p->weight_decay) << p->name;
  EXPECT_EQ(layer.weight().name, "weight");
  EXPECT_EQ(layer.bias().name, "bias");
  const FlopCount f = layer.flops(Shape{2, 3, 64});
  EXPECT_EQ(f.forward_flops, 8 * 384);
  EXPECT_EQ(f.backward_flops, 13 * 384);
}

TEST(LayerNorm, RejectsBadShapesAndArguments) {
  EXPECT_TRUE(throws_invalid([] { LayerNorm(0); }, {"features must be positive", "0"}));
  EXPECT_TRUE(throws_invalid([] { LayerNorm(4, 0.0f); }, {"epsilon"}));
  EXPECT_TRUE(
      throws_invalid([] { LayerNorm(4, std::numeric_limits<float>::quiet_NaN()); }, {"epsilon"}));
  LayerNorm layer(5);
  Context ctx;
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(Tensor::zeros({2, 4}), ctx);
      },
      {"[2, 4]", "must end in 5 features"}));
}

}  // namespace
}  // namespace interplace::kernels
