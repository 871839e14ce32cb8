// Structural and composite layers on CUDA: Add, Concat, Flatten, Reshape, Sequential and
// Residual (a ResNet basic block with a projection shortcut).
#include <gtest/gtest.h>

#include "cuda_compare.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/layers/activation.hpp"
#include "interplace/kernels/layers/batch_norm.hpp"
#include "interplace/kernels/layers/combine.hpp"
#include "interplace/kernels/layers/container.hpp"
#include "interplace/kernels/layers/conv2d.hpp"
#include "interplace/kernels/layers/linear.hpp"
#include "interplace/kernels/layers/pooling.hpp"
#include "interplace/kernels/layers/reshape.hpp"

namespace interplace::kernels {
namespace {

using testing::CompareOptions;
using testing::CudaTest;
using testing::maker;
using testing::matches_cpu;
using testing::random_tensor;

using CudaStructure = CudaTest;

TEST_F(CudaStructure, AddOfThree) {
  EXPECT_TRUE(matches_cpu(maker<Add>(), {random_tensor({2, 3, 4}, 1), random_tensor({2, 3, 4}, 2),
                                         random_tensor({2, 3, 4}, 3)}));
}

TEST_F(CudaStructure, ConcatAlongChannels) {
  EXPECT_TRUE(
      matches_cpu(maker<Concat>(), {random_tensor({2, 3, 4, 5}, 4), random_tensor({2, 1, 4, 5}, 5),
                                    random_tensor({2, 6, 4, 5}, 6)}));
}

TEST_F(CudaStructure, FlattenAndReshape) {
  EXPECT_TRUE(matches_cpu(maker<Flatten>(), {random_tensor({3, 2, 4, 5}, 7)}));
  EXPECT_TRUE(matches_cpu(maker<Reshape>(Shape{5, 8}), {random_tensor({3, 2, 4, 5}, 8)}));
}

std::unique_ptr<Layer> basic_block() {
  auto main = std::make_unique<Sequential>();
  main->emplace<Conv2d>(8, 16, 3, 2, 1, 1, false);
  main->emplace<BatchNorm2d>(16);
  main->emplace<ReLU>();
  main->emplace<Conv2d>(16, 16, 3, 1, 1, 1, false);
  main->emplace<BatchNorm2d>(16);
  auto shortcut = std::make_unique<Sequential>();
  shortcut->emplace<Conv2d>(8, 16, 1, 2, 0, 1, false);
  shortcut->emplace<BatchNorm2d>(16);
  auto net = std::make_unique<Sequential>();
  net->emplace<Residual>(std::move(main), std::move(shortcut));
  net->emplace<ReLU>();
  net->emplace<GlobalAvgPool>();
  net->emplace<Linear>(16, 10);
  return net;
}

TEST_F(CudaStructure, ResidualBlockTrainingAndEvaluation) {
  CompareOptions options;
  options.tolerance = 1e-4;  // convolutions (see test_cuda_conv.cpp)
  EXPECT_TRUE(matches_cpu(basic_block, {random_tensor({4, 8, 10, 10}, 9)}, options));
  options.training = false;
  EXPECT_TRUE(matches_cpu(basic_block, {random_tensor({4, 8, 10, 10}, 10)}, options));
}

TEST_F(CudaStructure, IdentityShortcut) {
  const auto make = [] {
    auto main = std::make_unique<Sequential>();
    main->emplace<Linear>(12, 12);
    main->emplace<GELU>();
    return std::unique_ptr<Layer>(std::make_unique<Residual>(std::move(main), nullptr));
  };
  EXPECT_TRUE(matches_cpu(make, {random_tensor({5, 12}, 11)}));
}

}  // namespace
}  // namespace interplace::kernels
