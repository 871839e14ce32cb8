// The op-level layers of the recurrent families (Multiply, Affine, Slice, Attend) on CUDA against
// the CPU backend.
#include <gtest/gtest.h>

#include "cuda_compare.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/layers/attend.hpp"
#include "interplace/kernels/layers/elementwise.hpp"

namespace interplace::kernels {
namespace {

using testing::CudaTest;
using testing::maker;
using testing::matches_cpu;
using testing::random_tensor;

using CudaElementwise = CudaTest;

TEST_F(CudaElementwise, Multiply) {
  EXPECT_TRUE(
      matches_cpu(maker<Multiply>(), {random_tensor({2, 3, 4}, 1), random_tensor({2, 3, 4}, 2)}));
}

TEST_F(CudaElementwise, AffineOneMinusXAndScaled) {
  EXPECT_TRUE(matches_cpu(maker<Affine>(-1.0f, 1.0f), {random_tensor({3, 5, 7}, 3)}));
  EXPECT_TRUE(matches_cpu(maker<Affine>(0.25f, -2.0f), {random_tensor({3, 5, 7}, 4)}));
}

TEST_F(CudaElementwise, SliceOfTimeAndOfChannels) {
  EXPECT_TRUE(matches_cpu(maker<Slice>(2, 1), {random_tensor({4, 5, 8}, 5)}));
  EXPECT_TRUE(matches_cpu(maker<Slice>(0, 3), {random_tensor({2, 6, 4, 4}, 6)}));
}

TEST_F(CudaElementwise, AttendOverAMemory) {
  EXPECT_TRUE(
      matches_cpu(maker<Attend>(), {random_tensor({3, 1, 16}, 7), random_tensor({3, 9, 16}, 8)}));
}

}  // namespace
}  // namespace interplace::kernels
