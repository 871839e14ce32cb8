#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "gradcheck.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/activation.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::check_gradients;
using testing::random_tensor;

double gelu(double x) {
  const double pi = 3.14159265358979323846;
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
}

// Values in [-3, 9] that stay at least 0.1 away from the kinks at 0 and 6, so that a
// finite-difference step of 1e-2 never crosses one.
Tensor away_from_kinks(const Shape& shape, uint64_t seed) {
  Tensor t = random_tensor(shape, seed, 3.0f);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float& v = t.data()[i];
    v = std::clamp(v + 3.0f, -3.0f, 9.0f);
    for (float kink : {0.0f, 6.0f}) {
      if (std::abs(v - kink) < 0.1f) v = kink + (v < kink ? -0.1f : 0.1f);
    }
  }
  return t;
}

TEST(Activation, ForwardMatchesReference) {
  const Tensor x = away_from_kinks({2, 3, 5, 7}, 1);
  std::vector<double> relu, relu6, gelu_ref, tanh_ref;
  for (float v : x.to_vector()) {
    relu.push_back(std::max(0.0, double(v)));
    relu6.push_back(std::clamp(double(v), 0.0, 6.0));
    gelu_ref.push_back(gelu(v));
    tanh_ref.push_back(std::tanh(double(v)));
  }
  Context ctx;
  EXPECT_TRUE(all_close(ReLU().forward(x, ctx), relu, 0, 0));
  EXPECT_TRUE(all_close(ReLU6().forward(x, ctx), relu6, 0, 0));
  EXPECT_TRUE(all_close(GELU().forward(x, ctx), gelu_ref, 1e-5, 1e-6));
  EXPECT_TRUE(all_close(Tanh().forward(x, ctx), tanh_ref, 1e-5, 1e-6));
  std::vector<double> sigmoid_ref;
  for (float v : x.to_vector()) sigmoid_ref.push_back(1.0 / (1.0 + std::exp(-double(v))));
  EXPECT_TRUE(all_close(Sigmoid().forward(x, ctx), sigmoid_ref, 1e-5, 1e-6));
}

TEST(Activation, SigmoidGradientMatchesTheClosedForm) {
  const Tensor x = random_tensor({3, 7}, 4, 2.0f);
  const Tensor dy = random_tensor({3, 7}, 5);
  Sigmoid layer;
  Context ctx;
  layer.forward(x, ctx);
  std::vector<double> expected;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double s = 1.0 / (1.0 + std::exp(-double(x.data()[i])));
    expected.push_back(dy.data()[i] * s * (1.0 - s));
  }
  EXPECT_TRUE(all_close(layer.backward(dy, ctx)[0], expected, 1e-5, 1e-6));
}

// Tanh saturates for |x| >~ 3; its gradient is checked where it is far from flat too.
TEST(Activation, TanhGradientMatchesTheClosedForm) {
  const Tensor x = random_tensor({3, 7}, 4, 1.5f);
  const Tensor dy = random_tensor({3, 7}, 5);
  Tanh layer;
  Context ctx;
  layer.forward(x, ctx);
  std::vector<double> expected;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double t = std::tanh(double(x.data()[i]));
    expected.push_back(dy.data()[i] * (1.0 - t * t));
  }
  EXPECT_TRUE(all_close(layer.backward(dy, ctx)[0], expected, 1e-5, 1e-6));
}

TEST(Activation, GradientsMatchFiniteDifferences) {
  ReLU relu;
  ReLU6 relu6;
  GELU gelu_layer;
  Tanh tanh_layer;
  Sigmoid sigmoid_layer;
  for (Layer* layer :
       std::initializer_list<Layer*>{&relu, &relu6, &gelu_layer, &tanh_layer, &sigmoid_layer}) {
    EXPECT_TRUE(check_gradients(*layer, {away_from_kinks({3, 4, 9}, 2)})) << layer->type();
  }
}

TEST(Activation, GradientIsZeroAtTheKinksAsInPyTorch) {
  const Tensor x = Tensor::from_vector({4}, std::vector<float>{0.0f, 6.0f, 3.0f, -1.0f});
  const Tensor dy = Tensor::full({4}, 1.0f);
  ReLU relu;
  ReLU6 relu6;
  Context ctx;
  relu.forward(x, ctx);
  EXPECT_TRUE(all_close(relu.backward(dy, ctx)[0], {0, 1, 1, 0}, 0, 0));
  relu6.forward(x, ctx);
  EXPECT_TRUE(all_close(relu6.backward(dy, ctx)[0], {0, 0, 1, 0}, 0, 0));
}

TEST(Activation, NamesFlopsAndNoParameters) {
  ReLU relu;
  ReLU6 relu6;
  GELU gelu_layer;
  EXPECT_EQ(relu.type(), "ReLU");
  EXPECT_EQ(relu6.type(), "ReLU6");
  EXPECT_EQ(gelu_layer.type(), "GELU");
  EXPECT_EQ(Tanh().type(), "Tanh");
  EXPECT_EQ(relu.parameter_count(), 0);
  const Shape shape{4, 8, 3};
  EXPECT_EQ(relu.output_shape(shape), shape);
  EXPECT_EQ(relu.flops(shape).forward_flops, 96);
  EXPECT_EQ(relu6.flops(shape).backward_flops, 2 * 96);
  EXPECT_EQ(gelu_layer.flops(shape).forward_flops, 9 * 96);
  EXPECT_EQ(gelu_layer.flops(shape).backward_flops, 18 * 96);
  EXPECT_EQ(Tanh().flops(shape).forward_flops, 96);
  EXPECT_EQ(Tanh().flops(shape).backward_flops, 4 * 96);
  EXPECT_EQ(Sigmoid().type(), "Sigmoid");
  EXPECT_EQ(Sigmoid().flops(shape).forward_flops, 4 * 96);
  EXPECT_EQ(Sigmoid().flops(shape).backward_flops, 4 * 96);
}

TEST(Activation, BackendRejectsMismatchedSizes) {
  Backend& backend = backend_for(Device::cpu);
  Tensor y({5});
  try {
    backend.activation_forward(Activation::gelu, Tensor::zeros({2, 3}), y);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    EXPECT_NE(std::string(e.what()).find("output [5] must match the non-empty input [2, 3]"),
              std::string::npos)
        << e.what();
  }
  Tensor dx({4});
  try {
    backend.activation_backward(Activation::tanh, Tensor::zeros({3}), Tensor::zeros({3}), dx);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    EXPECT_NE(std::string(e.what()).find("activation tanh: input gradient [4]"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace interplace::kernels
