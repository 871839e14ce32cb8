// The gradient check must be able to fail: a layer with a slightly wrong backward is caught.
#include <gtest/gtest.h>

#include "gradcheck.hpp"

namespace interplace::kernels {
namespace {

using testing::check_gradients;
using testing::random_tensor;

// y = w * x elementwise (x [n], w [n]); backward scaled by the given factors, 1 = exact.
class ScaleLayer final : public Layer {
 public:
  ScaleLayer(int64_t n, float input_grad_factor, float param_grad_factor)
      : input_factor_(input_grad_factor), param_factor_(param_grad_factor) {
    weight_ = {"weight", random_tensor({n}, 11), Tensor(), true};
  }
  std::string type() const override { return "ScaleLayer"; }
  std::vector<Parameter*> parameters() override { return {&weight_}; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override { return inputs[0]; }
  FlopCount count_flops(std::span<const Shape>, const Shape&) const override { return {}; }
  Tensor run_forward(Backend&, std::span<const Tensor> inputs, Context& ctx) override {
    Tensor y(inputs[0].shape());
    for (int64_t i = 0; i < y.numel(); ++i)
      y.data()[i] = weight_.value.data()[i] * inputs[0].data()[i];
    ctx.saved = {inputs[0]};
    return y;
  }
  std::vector<Tensor> run_backward(Backend&, const Tensor& dy, Context& ctx,
                                   Gradients which) override {
    const Tensor& x = ctx.saved[0];
    Tensor dx(x.shape());
    if (which == Gradients::inputs_only && honours_inputs_only_) {
      for (int64_t i = 0; i < x.numel(); ++i) {
        dx.data()[i] = input_factor_ * dy.data()[i] * weight_.value.data()[i];
      }
      return {dx};
    }
    begin_grad(weight_);
    for (int64_t i = 0; i < x.numel(); ++i) {
      dx.data()[i] = input_factor_ * dy.data()[i] * weight_.value.data()[i];
      weight_.grad.data()[i] = param_factor_ * dy.data()[i] * x.data()[i];
    }
    weight_.grad_is_zero = false;
    return {dx};
  }
  // Broken on purpose when claims_deferral_: it claims to defer the parameter gradients
  // but computes them in the input pass (run_backward ignores the mode) and its parameter
  // pass does nothing.
  Deferral deferral() override { return claims_deferral_ ? Deferral::own : Layer::deferral(); }
  void run_backward_parameters(Context& /*ctx*/) override {}

 private:
  float input_factor_, param_factor_;

 public:
  bool honours_inputs_only_ = true;  // false: computes parameter gradients regardless
  bool claims_deferral_ = false;
  Parameter weight_;
};

TEST(GradCheck, PassesForAnExactBackward) {
  ScaleLayer layer(8, 1.0f, 1.0f);
  EXPECT_TRUE(check_gradients(layer, {random_tensor({8}, 1)}));
}

TEST(GradCheck, FailsWhenTheInputGradientIsOffByThreePercent) {
  ScaleLayer layer(8, 1.03f, 1.0f);
  const ::testing::AssertionResult result = check_gradients(layer, {random_tensor({8}, 1)});
  EXPECT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("input 0"), std::string::npos) << result.message();
}

TEST(GradCheck, FailsWhenAParameterGradientIsOffByThreePercent) {
  ScaleLayer layer(8, 1.0f, 0.97f);
  const ::testing::AssertionResult result = check_gradients(layer, {random_tensor({8}, 1)});
  EXPECT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("ScaleLayer.weight"), std::string::npos)
      << result.message();
}

TEST(GradCheck, FailsWhenABackwardForTheInputsOnlyChangesAParameterGradient) {
  ScaleLayer layer(8, 1.0f, 1.0f);
  layer.honours_inputs_only_ = false;
  const ::testing::AssertionResult result = check_gradients(layer, {random_tensor({8}, 1)});
  EXPECT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("for the inputs only changed it"), std::string::npos)
      << result.message();
}

TEST(GradCheck, FailsWhenADeferringInputPassComputesTheParameterGradients) {
  ScaleLayer layer(8, 1.0f, 1.0f);
  layer.claims_deferral_ = true;
  const ::testing::AssertionResult result = check_gradients(layer, {random_tensor({8}, 1)});
  EXPECT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("the deferring input pass changed it"),
            std::string::npos)
      << result.message();
}

TEST(GradCheck, CallsBeforeForwardBeforeEveryForward) {
  ScaleLayer layer(3, 1.0f, 1.0f);
  testing::GradCheckOptions options;
  int calls = 0;
  options.before_forward = [&] { ++calls; };
  ASSERT_TRUE(check_gradients(layer, {random_tensor({3}, 2)}, options));
  // One analytic forward, one for the inputs-only backward, one for the deferring one, then
  // two per checked element: 3 inputs + 3 weights.
  EXPECT_EQ(calls, 3 + 2 * (3 + 3));
}

}  // namespace
}  // namespace interplace::kernels
