// Matrix products (cuBLAS) and the layers built on them: Linear, CausalSelfAttention.
#include <gtest/gtest.h>

#include "cuda_compare.hpp"
#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/cuda.hpp"
#include "interplace/kernels/layers/attention.hpp"
#include "interplace/kernels/layers/linear.hpp"

namespace interplace::kernels {
namespace {

using testing::close_to;
using testing::CompareOptions;
using testing::CudaTest;
using testing::maker;
using testing::matches_cpu;
using testing::random_tensor;

struct MatmulCase {
  const char* name;
  bool transpose_a, transpose_b;
  float alpha, beta;
};

class CudaMatmul : public CudaTest, public ::testing::WithParamInterface<MatmulCase> {};

// Odd extents, so that a swapped m/n or a wrong leading dimension cannot go unnoticed.
TEST_P(CudaMatmul, MatchesTheCpu) {
  const MatmulCase& c = GetParam();
  const MatmulGeometry g{3, 5, 7, 11, c.transpose_a, c.transpose_b, c.alpha, c.beta};
  const Tensor a = random_tensor(c.transpose_a ? Shape{3, 11, 5} : Shape{3, 5, 11}, 1);
  const Tensor b = random_tensor(c.transpose_b ? Shape{3, 7, 11} : Shape{3, 11, 7}, 2);
  const Tensor c0 = random_tensor({3, 5, 7}, 3);
  Tensor expected = c0.clone();
  backend_for(Device::cpu).matmul(g, a, b, expected);
  Tensor actual = c0.to(Device::cuda);
  backend_for(Device::cuda).matmul(g, a.to(Device::cuda), b.to(Device::cuda), actual);
  EXPECT_TRUE(close_to(actual, expected, 1e-6, c.name));
}

INSTANTIATE_TEST_SUITE_P(Transposes, CudaMatmul,
                         ::testing::Values(MatmulCase{"NN", false, false, 1.0f, 0.0f},
                                           MatmulCase{"NT", false, true, 1.0f, 0.0f},
                                           MatmulCase{"TN", true, false, 1.0f, 0.0f},
                                           MatmulCase{"TT", true, true, 1.0f, 0.0f},
                                           MatmulCase{"NT_scaled", false, true, 0.25f, 0.0f},
                                           MatmulCase{"TN_accumulate", true, false, 1.0f, 1.0f},
                                           MatmulCase{"NN_scaled_accumulate", false, false, -0.5f,
                                                      1.0f}),
                         [](const ::testing::TestParamInfo<MatmulCase>& param_info) {
                           return std::string(param_info.param.name);
                         });

using CudaLinear = CudaTest;

TEST_F(CudaLinear, WithBiasOnSequences) {
  EXPECT_TRUE(matches_cpu(maker<Linear>(24, 10), {random_tensor({3, 5, 24}, 4)}));
}

TEST_F(CudaLinear, WithoutBias) {
  EXPECT_TRUE(matches_cpu(maker<Linear>(33, 17, false), {random_tensor({9, 33}, 5)}));
}

// Many rows: the bias gradient's column sum runs over several chunks.
TEST_F(CudaLinear, ManyRows) {
  EXPECT_TRUE(matches_cpu(maker<Linear>(16, 300), {random_tensor({4, 100, 16}, 6)}));
}

TEST_F(CudaLinear, BadBetaIsAnInputError) {
  const MatmulGeometry g{1, 2, 2, 2, false, false, 1.0f, 0.5f};
  const Tensor a({1, 2, 2}, Device::cuda);
  Tensor c({1, 2, 2}, Device::cuda);
  testing::expect_invalid([&] { backend_for(Device::cuda).matmul(g, a, a, c); },
                          "beta must be 0 or 1");
}

using CudaAttention = CudaTest;

TEST_F(CudaAttention, CausalSelfAttention) {
  CompareOptions options;
  options.tolerance = 1e-4;
  EXPECT_TRUE(
      matches_cpu(maker<CausalSelfAttention>(32, 4), {random_tensor({2, 7, 32}, 7)}, options));
}

TEST_F(CudaAttention, LongerSequenceMoreHeads) {
  CompareOptions options;
  options.tolerance = 1e-4;
  EXPECT_TRUE(
      matches_cpu(maker<CausalSelfAttention>(96, 6), {random_tensor({3, 40, 96}, 8)}, options));
}

}  // namespace
}  // namespace interplace::kernels
