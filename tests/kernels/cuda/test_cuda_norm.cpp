// BatchNorm2d (cuDNN) and LayerNorm (own kernels) on CUDA against the CPU backend.
#include <gtest/gtest.h>

#include <cmath>

#include "cuda_compare.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layers/batch_norm.hpp"
#include "interplace/kernels/layers/layer_norm.hpp"

namespace interplace::kernels {
namespace {

using testing::CompareOptions;
using testing::CudaTest;
using testing::maker;
using testing::matches_cpu;
using testing::random_tensor;

using CudaNorm = CudaTest;

// Scales away from 1, shifts away from 0 and non-trivial running statistics, so that every
// term of the formulas shows in the results.
void randomise(Layer& layer) {
  uint64_t seed = 40;
  for (Parameter* p : layer.parameters()) {
    const Tensor noise = random_tensor(p->value.shape(), ++seed, 0.5f);
    for (int64_t i = 0; i < noise.numel(); ++i) {
      p->value.data()[i] = (p->name == "weight" ? 1.0f : 0.0f) + noise.data()[i];
    }
  }
  for (Tensor* buffer : layer.buffers()) {
    const Tensor noise = random_tensor(buffer->shape(), ++seed, 0.5f);
    for (int64_t i = 0; i < noise.numel(); ++i)
      buffer->data()[i] = 1.0f + std::abs(noise.data()[i]);
  }
}

CompareOptions randomised(bool training) {
  CompareOptions options;
  options.training = training;
  options.prepare = randomise;
  return options;
}

// cuDNN sums thousands of values per channel in fp32 where the CPU uses double; a
// statistics convention slip would be off by percents.
CompareOptions batch_norm_options(bool training) {
  CompareOptions options = randomised(training);
  options.tolerance = 1e-4;
  return options;
}

// 8 values per channel: the unbiased running variance differs from the biased batch
// variance by 8/7, so a convention slip between cuDNN and us shows.
TEST_F(CudaNorm, BatchNormTrainingOnFewValuesPerChannel) {
  EXPECT_TRUE(matches_cpu(maker<BatchNorm2d>(3), {random_tensor({2, 3, 2, 2}, 1, 2.0f)},
                          batch_norm_options(true)));
}

TEST_F(CudaNorm, BatchNormTrainingAtResnetScale) {
  EXPECT_TRUE(matches_cpu(maker<BatchNorm2d>(16), {random_tensor({32, 16, 14, 14}, 2)},
                          batch_norm_options(true)));
}

TEST_F(CudaNorm, BatchNormWithOffsetInputOtherEpsilonAndMomentum) {
  Tensor x = random_tensor({4, 5, 6, 6}, 3);
  for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] += 3.0f;
  EXPECT_TRUE(matches_cpu(maker<BatchNorm2d>(5, 1e-3f, 0.3f), {x}, batch_norm_options(true)));
}

TEST_F(CudaNorm, BatchNormEvaluationUsesRunningStatistics) {
  EXPECT_TRUE(matches_cpu(maker<BatchNorm2d>(6), {random_tensor({3, 6, 5, 4}, 4)},
                          batch_norm_options(false)));
}

TEST_F(CudaNorm, BatchNormBackendStatisticsAreBiased) {
  const Tensor x = random_tensor({2, 3, 2, 2}, 5);
  Backend& cpu = backend_for(Device::cpu);
  Backend& cuda = backend_for(Device::cuda);
  const Tensor gamma = Tensor::full({3}, 1.0f), beta = Tensor::zeros({3});
  Tensor y({2, 3, 2, 2}), mean({3}), variance({3});
  cpu.batch_norm_forward_training(x, gamma, beta, 1e-5f, y, mean, variance);
  Tensor gy({2, 3, 2, 2}, Device::cuda), gmean({3}, Device::cuda), gvariance({3}, Device::cuda);
  cuda.batch_norm_forward_training(x.to(Device::cuda), gamma.to(Device::cuda),
                                   beta.to(Device::cuda), 1e-5f, gy, gmean, gvariance);
  EXPECT_TRUE(testing::close_to(gmean, mean, 1e-6, "batch mean"));
  EXPECT_TRUE(testing::close_to(gvariance, variance, 1e-6, "batch variance"));
  EXPECT_TRUE(testing::close_to(gy, y, 1e-5, "normalised output"));
}

TEST_F(CudaNorm, LayerNormOnSequences) {
  EXPECT_TRUE(matches_cpu(maker<LayerNorm>(32), {random_tensor({2, 5, 32}, 6)}, randomised(true)));
}

// More features than threads per block and more rows than one column-sum chunk.
TEST_F(CudaNorm, LayerNormWideAndTall) {
  EXPECT_TRUE(
      matches_cpu(maker<LayerNorm>(768), {random_tensor({2, 70, 768}, 7)}, randomised(true)));
  EXPECT_TRUE(matches_cpu(maker<LayerNorm>(3), {random_tensor({200, 3}, 8)}, randomised(true)));
}

TEST_F(CudaNorm, LayerNormWithLargeMean) {
  Tensor x = random_tensor({16, 64}, 9, 0.01f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] += 100.0f;
  CompareOptions options = randomised(true);
  options.tolerance = 1e-4;  // xhat carries the rounding of x - mean at |x| = 100
  EXPECT_TRUE(matches_cpu(maker<LayerNorm>(64), {x}, options));
}

}  // namespace
}  // namespace interplace::kernels
