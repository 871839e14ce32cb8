#include <gtest/gtest.h>

#include <cmath>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/optimizer.hpp"

namespace interplace::kernels {
namespace {

Parameter make_parameter(std::vector<float> value, std::vector<float> grad, bool decay = true) {
  const Shape shape{static_cast<int64_t>(value.size())};
  Parameter p{"p", Tensor::from_vector(shape, value), Tensor::from_vector(shape, grad), decay};
  p.grad_is_zero = false;
  return p;
}

TEST(Sgd, MomentumAndWeightDecayMatchHandComputedSteps) {
  Parameter p = make_parameter({1.0f, -2.0f}, {0.5f, 0.25f});
  Sgd sgd({&p}, {.learning_rate = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f});
  sgd.step();
  // d = g + 0.01 p = (0.51, 0.23); v = d; p -= 0.1 v
  EXPECT_FLOAT_EQ(p.value.data()[0], 1.0f - 0.1f * 0.51f);
  EXPECT_FLOAT_EQ(p.value.data()[1], -2.0f - 0.1f * 0.23f);
  sgd.step();
  // second step: d = g + 0.01 p1; v = 0.9 * v1 + d
  const float p1 = 1.0f - 0.051f;
  const float v2 = 0.9f * 0.51f + (0.5f + 0.01f * p1);
  EXPECT_NEAR(p.value.data()[0], p1 - 0.1f * v2, 1e-6);
}

TEST(Sgd, NesterovAndNoDecayParameters) {
  Parameter p = make_parameter({1.0f}, {1.0f}, /*decay=*/false);
  Sgd sgd({&p}, {.learning_rate = 0.5f, .momentum = 0.5f, .weight_decay = 0.1f, .nesterov = true});
  sgd.step();
  // no decay: d = 1, v = 1, update = d + 0.5 v = 1.5
  EXPECT_FLOAT_EQ(p.value.data()[0], 1.0f - 0.5f * 1.5f);
}

TEST(Sgd, SkipsParametersWithoutGradient) {
  Parameter p = make_parameter({3.0f}, {1.0f});
  Sgd sgd({&p}, {.learning_rate = 1.0f});
  sgd.zero_grad();
  sgd.step();
  EXPECT_FLOAT_EQ(p.value.data()[0], 3.0f);
}

TEST(AdamW, MatchesHandComputedSteps) {
  Parameter p = make_parameter({1.0f}, {0.5f});
  AdamW adam({&p}, {.learning_rate = 0.01f, .weight_decay = 0.1f});
  adam.step();
  // step 1: p *= 1 - 0.001; m = 0.05, v = 0.00025; m_hat = 0.5, v_hat = 0.25
  // p -= 0.01 * 0.5 / (0.5 + 1e-8)
  const double p1 = 1.0 * (1 - 0.001) - 0.01 * 0.5 / (0.5 + 1e-8);
  EXPECT_NEAR(p.value.data()[0], p1, 1e-6);
  p.grad.data()[0] = -1.0f;
  adam.step();
  const double m = 0.9 * 0.05 + 0.1 * -1.0;
  const double v = 0.999 * 0.00025 + 0.001 * 1.0;
  const double m_hat = m / (1 - 0.81);
  const double v_hat = v / (1 - 0.999 * 0.999);
  const double p2 = p1 * (1 - 0.001) - 0.01 * m_hat / (std::sqrt(v_hat) + 1e-8);
  EXPECT_NEAR(p.value.data()[0], p2, 1e-6);
}

TEST(Optimizers, RejectBadOptions) {
  Parameter p = make_parameter({1.0f}, {1.0f});
  EXPECT_THROW(Sgd({&p}, {.learning_rate = -1.0f}), Error);
  EXPECT_THROW(Sgd({&p}, {.learning_rate = 0.1f, .nesterov = true}), Error);
  EXPECT_THROW(AdamW({&p}, {.beta1 = 1.0f}), Error);
  EXPECT_THROW(Sgd({nullptr}, {}), Error);
}

}  // namespace
}  // namespace interplace::kernels
