#include <gtest/gtest.h>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/layers/combine.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::check_gradients;
using testing::random_tensor;
using testing::throws_invalid;

TEST(Add, ForwardSumsAllInputs) {
  Add layer;
  const std::vector<Tensor> inputs = {random_tensor({2, 3}, 1), random_tensor({2, 3}, 2),
                                      random_tensor({2, 3}, 3)};
  Context ctx;
  const Tensor y = layer.forward(inputs, ctx);
  std::vector<double> expected;
  for (int64_t i = 0; i < 6; ++i) {
    expected.push_back(double(inputs[0].data()[i]) + inputs[1].data()[i] + inputs[2].data()[i]);
  }
  EXPECT_TRUE(all_close(y, expected));
}

TEST(Add, GradientsMatchFiniteDifferencesAndDoNotShareStorage) {
  Add layer;
  EXPECT_TRUE(check_gradients(
      layer, {random_tensor({2, 4}, 1), random_tensor({2, 4}, 2), random_tensor({2, 4}, 3)}));
  Context ctx;
  layer.forward(std::vector<Tensor>{random_tensor({3}, 4), random_tensor({3}, 5)}, ctx);
  const std::vector<Tensor> grads = layer.backward(random_tensor({3}, 6), ctx);
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_NE(grads[0].data(), grads[1].data());
  EXPECT_EQ(grads[0].to_vector(), grads[1].to_vector());
}

TEST(Add, CountsFlops) {
  Add layer;
  const std::vector<Shape> shapes = {{4, 5}, {4, 5}, {4, 5}};
  EXPECT_EQ(layer.flops(shapes).forward_flops, 40);
  EXPECT_EQ(layer.flops(shapes).backward_flops, 0);
}

TEST(Add, RejectsOneInputAndMismatchedShapes) {
  Add layer;
  Context ctx;
  EXPECT_TRUE(throws_invalid([&] { layer.forward(Tensor::zeros({2}), ctx); },
                             {"two or more inputs, got 1"}));
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(std::vector<Tensor>{Tensor::zeros({2, 3}), Tensor::zeros({3, 2})}, ctx);
      },
      {"input 1 has shape [3, 2]", "input 0 has [2, 3]"}));
}

TEST(Concat, ForwardJoinsAlongAxisOne) {
  Concat layer;
  const std::vector<Tensor> inputs = {random_tensor({2, 3, 4}, 1), random_tensor({2, 1, 4}, 2),
                                      random_tensor({2, 2, 4}, 3)};
  Context ctx;
  const Tensor y = layer.forward(inputs, ctx);
  ASSERT_EQ(y.shape(), (Shape{2, 6, 4}));
  std::vector<double> expected;
  for (int64_t n = 0; n < 2; ++n) {
    for (const Tensor& x : inputs) {
      const int64_t block = x.dim(1) * 4;
      for (int64_t i = 0; i < block; ++i) expected.push_back(x.data()[n * block + i]);
    }
  }
  EXPECT_TRUE(all_close(y, expected));
}

TEST(Concat, GradientsMatchFiniteDifferences) {
  Concat layer;
  EXPECT_TRUE(check_gradients(layer, {random_tensor({2, 3, 2}, 1), random_tensor({2, 2, 2}, 2)}));
  EXPECT_TRUE(check_gradients(
      layer, {random_tensor({3, 2}, 3), random_tensor({3, 5}, 4), random_tensor({3, 1}, 5)}));
  EXPECT_EQ(layer.flops(std::vector<Shape>{{3, 2}, {3, 5}}).forward_flops, 0);
}

TEST(Concat, RejectsMismatchedShapes) {
  Concat layer;
  Context ctx;
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(std::vector<Tensor>{Tensor::zeros({2, 3, 4}), Tensor::zeros({2, 3, 5})}, ctx);
      },
      {"input 1 has shape [2, 3, 5]", "except axis 1"}));
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(std::vector<Tensor>{Tensor::zeros({2, 3}), Tensor::zeros({2, 3, 1})}, ctx);
      },
      {"input 1 has shape [2, 3, 1]"}));
  EXPECT_TRUE(throws_invalid([&] { layer.forward(Tensor::zeros({4}), ctx); }, {"axis 1", "[4]"}));
}

}  // namespace
}  // namespace interplace::kernels
