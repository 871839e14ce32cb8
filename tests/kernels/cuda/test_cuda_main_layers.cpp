// Layers and backend pieces the model zoo added on CUDA against the CPU backend: Pad2d
// (padding and cropping), tanh, average pooling that counts padding, rectangular
// convolution, bidirectional attention, token-type embeddings and SelectToken.
#include <gtest/gtest.h>

#include "cuda_compare.hpp"
#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layers/activation.hpp"
#include "interplace/kernels/layers/attention.hpp"
#include "interplace/kernels/layers/conv2d.hpp"
#include "interplace/kernels/layers/embedding.hpp"
#include "interplace/kernels/layers/pad.hpp"
#include "interplace/kernels/layers/pooling.hpp"
#include "interplace/kernels/layers/select_token.hpp"

namespace interplace::kernels {
namespace {

using testing::close_to;
using testing::CompareOptions;
using testing::CudaTest;
using testing::maker;
using testing::matches_cpu;
using testing::random_integers;
using testing::random_tensor;

using CudaMainLayers = CudaTest;

TEST_F(CudaMainLayers, Pad2dPads) {
  EXPECT_TRUE(matches_cpu(maker<Pad2d>(1, 2, 0, 3), {random_tensor({2, 3, 5, 4}, 21)}));
}

TEST_F(CudaMainLayers, Pad2dCrops) {
  EXPECT_TRUE(matches_cpu(maker<Pad2d>(-1, 0, -1, 0), {random_tensor({2, 3, 5, 4}, 22)}));
}

TEST_F(CudaMainLayers, Pad2dPadsOneSideAndCropsTheOther) {
  EXPECT_TRUE(matches_cpu(maker<Pad2d>(2, -1, -2, 1), {random_tensor({1, 2, 6, 7}, 23)}));
}

TEST_F(CudaMainLayers, Pad2dBackendRejectsAnEmptyCrop) {
  Backend& cuda = backend_for(Device::cuda);
  const Pad2dGeometry g{.batch = 1,
                        .channels = 1,
                        .in_height = 2,
                        .in_width = 2,
                        .top = -1,
                        .bottom = -1,
                        .left = 0,
                        .right = 0};
  const Tensor x({1, 1, 2, 2}, Device::cuda);
  Tensor y({1, 1, 1, 2}, Device::cuda);
  testing::expect_invalid([&] { cuda.pad2d_forward(g, x, y); }, "non-empty output");
}

TEST_F(CudaMainLayers, Tanh) {
  EXPECT_TRUE(matches_cpu(maker<Tanh>(), {random_tensor({4, 3, 17, 5}, 24, 3.0f)}));
}

TEST_F(CudaMainLayers, AvgPoolCountingPadding) {
  EXPECT_TRUE(matches_cpu(maker<AvgPool2d>(3, 2, 1, true), {random_tensor({2, 3, 9, 9}, 25)}));
  EXPECT_TRUE(matches_cpu(maker<AvgPool2d>(3, 1, 1, true), {random_tensor({2, 3, 7, 6}, 26)}));
}

TEST_F(CudaMainLayers, RectangularConvolution) {
  CompareOptions options;
  options.tolerance = 1e-4;
  EXPECT_TRUE(matches_cpu(maker<Conv2d>(4, 6, Extent2d{1, 7}, 1, Extent2d{0, 3}, 1, true),
                          {random_tensor({2, 4, 9, 9}, 27)}, options));
  EXPECT_TRUE(matches_cpu(maker<Conv2d>(4, 6, Extent2d{7, 1}, 2, Extent2d{3, 0}, 2, false),
                          {random_tensor({2, 4, 9, 8}, 28)}, options));
}

TEST_F(CudaMainLayers, BidirectionalSelfAttention) {
  CompareOptions options;
  options.tolerance = 1e-4;
  EXPECT_TRUE(
      matches_cpu(maker<SelfAttention>(32, 4, false), {random_tensor({2, 7, 32}, 29)}, options));
}

TEST_F(CudaMainLayers, EmbeddingWithTokenTypes) {
  EXPECT_TRUE(matches_cpu(maker<Embedding>(7, 16, 12, 2),
                          {random_integers({4, 10}, 7, 30), random_integers({4, 10}, 2, 31)}));
}

TEST_F(CudaMainLayers, EmbeddingWithTokenTypesDefaultsToTypeZero) {
  EXPECT_TRUE(matches_cpu(maker<Embedding>(7, 16, 12, 3), {random_integers({3, 5}, 7, 32)}));
}

TEST_F(CudaMainLayers, GatherAndScatterRowsAdd) {
  Backend& cpu = backend_for(Device::cpu);
  Backend& cuda = backend_for(Device::cuda);
  const Tensor ids = random_integers({3, 4}, 5, 33);
  const Tensor table = random_tensor({5, 6}, 34);
  Tensor y = random_tensor({3, 4, 6}, 35);
  Tensor gy = y.to(Device::cuda);
  cpu.gather_rows_add(ids, table, y);
  cuda.gather_rows_add(ids.to(Device::cuda), table.to(Device::cuda), gy);
  EXPECT_TRUE(close_to(gy, y, 1e-6, "gather_rows_add"));
  Tensor dtable = random_tensor({5, 6}, 36);
  Tensor gdtable = dtable.to(Device::cuda);
  cpu.scatter_rows_add(ids, y, dtable);
  cuda.scatter_rows_add(ids.to(Device::cuda), gy, gdtable);
  EXPECT_TRUE(close_to(gdtable, dtable, 1e-5, "scatter_rows_add"));
}

TEST_F(CudaMainLayers, SelectToken) {
  EXPECT_TRUE(matches_cpu(maker<SelectToken>(0), {random_tensor({3, 5, 8}, 37)}));
  EXPECT_TRUE(matches_cpu(maker<SelectToken>(4), {random_tensor({3, 5, 8}, 38)}));
}

}  // namespace
}  // namespace interplace::kernels
