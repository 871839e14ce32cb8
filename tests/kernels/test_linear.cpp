#include <gtest/gtest.h>

#include "gradcheck.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/linear.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::check_gradients;
using testing::random_tensor;

TEST(Linear, ForwardMatchesNaiveReference) {
  Linear layer(5, 3);
  Rng rng(1);
  layer.init_parameters(rng);
  const Tensor x = random_tensor({2, 4, 5}, 2);
  Context ctx;
  const Tensor y = layer.forward(x, ctx);
  ASSERT_EQ(y.shape(), (Shape{2, 4, 3}));
  std::vector<double> expected;
  const float* w = layer.weight().value.data();
  const float* b = layer.bias().value.data();
  for (int64_t r = 0; r < 8; ++r) {
    for (int64_t o = 0; o < 3; ++o) {
      double sum = b[o];
      for (int64_t i = 0; i < 5; ++i) sum += double(x.data()[r * 5 + i]) * w[o * 5 + i];
      expected.push_back(sum);
    }
  }
  EXPECT_TRUE(all_close(y, expected));
}

TEST(Linear, GradientsMatchFiniteDifferences) {
  Linear layer(6, 4);
  Rng rng(3);
  layer.init_parameters(rng);
  EXPECT_TRUE(check_gradients(layer, {random_tensor({3, 2, 6}, 4)}));
}

TEST(Linear, WithoutBiasGradientsMatchFiniteDifferences) {
  Linear layer(7, 5, /*bias=*/false);
  Rng rng(5);
  layer.init_parameters(rng);
  EXPECT_EQ(layer.parameter_count(), 35);
  EXPECT_TRUE(check_gradients(layer, {random_tensor({4, 7}, 6)}));
}

TEST(Linear, SecondBackwardAccumulatesParameterGradients) {
  Linear layer(3, 2);
  Rng rng(7);
  layer.init_parameters(rng);
  EXPECT_TRUE(testing::backward_accumulates(layer, random_tensor({4, 3}, 8), 9));
}

TEST(Linear, CountsParametersAndFlops) {
  Linear layer(64, 10);
  EXPECT_EQ(layer.parameter_count(), 650);
  const FlopCount f = layer.flops(Shape{128, 64});
  EXPECT_EQ(f.forward_flops, 2 * 128 * 64 * 10 + 128 * 10);
  EXPECT_EQ(f.backward_flops, 4 * 128 * 64 * 10 + 128 * 10);
  EXPECT_EQ(f.parameter_grad_flops, 2 * 128 * 64 * 10 + 128 * 10);  // weight GEMM and bias
}

TEST(Linear, RejectsBadShapesAndArguments) {
  EXPECT_THROW(Linear(0, 3), Error);
  Linear layer(5, 3);
  Context ctx;
  try {
    layer.forward(Tensor::zeros({2, 4}), ctx);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    EXPECT_NE(std::string(e.what()).find("must end in 5 features"), std::string::npos) << e.what();
  }
  Context empty;
  EXPECT_THROW(layer.backward(Tensor::zeros({2, 3}), empty), Error);
}

}  // namespace
}  // namespace interplace::kernels
