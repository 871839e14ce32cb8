#include <gtest/gtest.h>

#include <limits>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layers/dropout.hpp"
#include "scoped_threads.hpp"

namespace interplace::kernels {
namespace {

using testing::check_gradients;
using testing::random_tensor;
using testing::throws_invalid;

std::vector<float> forward_values(Dropout& layer, const Tensor& x) {
  Context ctx;
  return layer.forward(x, ctx).to_vector();
}

TEST(Dropout, DropsAboutPAndScalesTheRestByOneOverOneMinusP) {
  const float p = 0.25f;
  Dropout layer(p, 42);
  const Tensor x = Tensor::full({200, 500}, 1.0f);
  const std::vector<float> y = forward_values(layer, x);
  int64_t dropped = 0;
  for (float v : y) {
    if (v == 0.0f) {
      ++dropped;
    } else {
      ASSERT_FLOAT_EQ(v, 1.0f / (1.0f - p));
    }
  }
  // 100,000 Bernoulli(0.25) draws: the standard deviation of the fraction is 0.0014.
  EXPECT_NEAR(double(dropped) / double(y.size()), p, 0.007);
}

TEST(Dropout, MasksAreReproducibleAndFreshPerCall) {
  const Tensor x = Tensor::full({1000}, 1.0f);
  Dropout a(0.5f, 7), b(0.5f, 7), other_seed(0.5f, 8);
  const std::vector<float> a0 = forward_values(a, x), a1 = forward_values(a, x);
  EXPECT_EQ(a.call_counter(), 2u);
  EXPECT_NE(a0, a1);                    // each call draws a fresh mask
  EXPECT_EQ(forward_values(b, x), a0);  // same seed, same sequence
  EXPECT_EQ(forward_values(b, x), a1);
  EXPECT_NE(forward_values(other_seed, x), a0);
  a.set_call_counter(1);  // replay call 1
  EXPECT_EQ(forward_values(a, x), a1);
}

TEST(Dropout, MaskDoesNotDependOnTheThreadCount) {
  Backend& backend = backend_for(Device::cpu);
  Tensor one_thread({300000}), two_threads({300000});  // above the parallel threshold
  {
    const testing::ScopedThreads threads(1);
    backend.dropout_mask(123, 0.3f, one_thread);
  }
  {
    const testing::ScopedThreads threads(2);
    backend.dropout_mask(123, 0.3f, two_threads);
  }
  EXPECT_EQ(one_thread.to_vector(), two_threads.to_vector());
}

TEST(Dropout, BackwardUsesTheMaskOfItsOwnForward) {
  Dropout layer(0.5f, 3);
  const Tensor x = random_tensor({64}, 1);
  const Tensor dy = random_tensor({64}, 2);
  Context first, second;
  const Tensor y1 = layer.forward(x, first);
  layer.forward(x, second);  // another micro-batch in flight, another mask
  const Tensor dx = layer.backward(dy, first)[0];
  for (int64_t i = 0; i < 64; ++i) {
    // With y = x * m, dx = dy * m = dy * y / x.
    EXPECT_FLOAT_EQ(dx.data()[i], dy.data()[i] * (y1.data()[i] / x.data()[i])) << i;
  }
}

TEST(Dropout, GradientsMatchFiniteDifferencesWithAPinnedMask) {
  Dropout layer(0.3f, 5);
  testing::GradCheckOptions options;
  options.before_forward = [&] { layer.set_call_counter(3); };
  EXPECT_TRUE(check_gradients(layer, {random_tensor({4, 6}, 1)}, options));
  // Without pinning, each forward of the check draws another mask and the check fails.
  EXPECT_FALSE(check_gradients(layer, {random_tensor({4, 6}, 1)}));
}

TEST(Dropout, IsTheIdentityInEvaluationAndForPZero) {
  const Tensor x = random_tensor({3, 4}, 1);
  const Tensor dy = random_tensor({3, 4}, 2);
  Dropout evaluating(0.5f, 1), zero(0.0f, 1);
  evaluating.set_training(false);
  for (Dropout* layer : {&evaluating, &zero}) {
    Context ctx;
    EXPECT_EQ(layer->forward(x, ctx).data(), x.data());
    EXPECT_EQ(layer->backward(dy, ctx)[0].data(), dy.data());
    EXPECT_EQ(layer->flops(x.shape()).forward_flops, 0);
    EXPECT_EQ(layer->call_counter(), 0u);
  }
  Dropout training(0.5f, 1);
  EXPECT_EQ(training.flops(x.shape()).forward_flops, 12);
  EXPECT_EQ(training.flops(x.shape()).backward_flops, 12);
  EXPECT_EQ(training.parameter_count(), 0);
}

TEST(Dropout, RejectsProbabilitiesOutsideZeroToOne) {
  for (float p : {1.0f, -0.1f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
    EXPECT_TRUE(throws_invalid([p] { Dropout(p, 1); }, {"must be in [0, 1)"})) << p;
  }
  Tensor mask({4});
  EXPECT_TRUE(
      throws_invalid([&] { backend_for(Device::cpu).dropout_mask(1, 1.0f, mask); }, {"got 1"}));
}

}  // namespace
}  // namespace interplace::kernels
