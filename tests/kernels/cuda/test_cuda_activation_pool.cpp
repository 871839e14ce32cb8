// Activations and pooling (own kernels) on CUDA against the CPU backend.
#include <gtest/gtest.h>

#include "cuda_compare.hpp"
#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layers/activation.hpp"
#include "interplace/kernels/layers/pooling.hpp"

namespace interplace::kernels {
namespace {

using testing::CompareOptions;
using testing::CudaTest;
using testing::maker;
using testing::matches_cpu;
using testing::random_tensor;

using CudaActivation = CudaTest;
using CudaPool = CudaTest;

// Values over [-12, 12] with exact kinks (0 and 6) sprinkled in, where the gradient is 0.
Tensor activation_input() {
  Tensor x = random_tensor({4, 3, 17, 5}, 11, 4.0f);
  for (int64_t i = 0; i < x.numel(); i += 7) x.data()[i] = (i / 7) % 2 == 0 ? 0.0f : 6.0f;
  return x;
}

TEST_F(CudaActivation, ReLU) {
  EXPECT_TRUE(matches_cpu(maker<ReLU>(), {activation_input()}));
}

TEST_F(CudaActivation, ReLU6) {
  EXPECT_TRUE(matches_cpu(maker<ReLU6>(), {activation_input()}));
}

TEST_F(CudaActivation, GeluTanh) {
  EXPECT_TRUE(matches_cpu(maker<GELU>(), {activation_input()}));
}

TEST_F(CudaActivation, Sigmoid) {
  EXPECT_TRUE(matches_cpu(maker<Sigmoid>(), {activation_input()}));
}

TEST_F(CudaActivation, KinksHaveZeroGradient) {
  Backend& cuda = backend_for(Device::cuda);
  const float values[] = {0.0f, 6.0f, -1.0f, 3.0f, 7.0f};
  const Tensor x = Tensor::from_vector({5}, values).to(Device::cuda);
  const Tensor dy = Tensor::full({5}, 1.0f, Device::cuda);
  Tensor dx({5}, Device::cuda);
  cuda.activation_backward(Activation::relu, x, dy, dx);
  EXPECT_EQ(dx.to_vector(), (std::vector<float>{0, 1, 0, 1, 1}));
  cuda.activation_backward(Activation::relu6, x, dy, dx);
  EXPECT_EQ(dx.to_vector(), (std::vector<float>{0, 0, 0, 1, 0}));
}

struct PoolCase {
  const char* name;
  bool max;
  int64_t kernel, stride, padding;
  Shape input;
};

class CudaPoolCases : public CudaTest, public ::testing::WithParamInterface<PoolCase> {};

TEST_P(CudaPoolCases, ForwardAndBackwardMatchTheCpu) {
  const PoolCase& c = GetParam();
  const auto make = c.max ? maker<MaxPool2d>(c.kernel, c.stride, c.padding)
                          : maker<AvgPool2d>(c.kernel, c.stride, c.padding);
  EXPECT_TRUE(matches_cpu(make, {random_tensor(c.input, 12)}));
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, CudaPoolCases,
    ::testing::Values(PoolCase{"max_2x2", true, 2, 2, 0, {2, 4, 8, 8}},
                      PoolCase{"max_3x3_s2_pad1", true, 3, 2, 1, {2, 3, 9, 9}},
                      PoolCase{"max_3x3_s1_overlapping", true, 3, 1, 1, {2, 3, 7, 6}},
                      PoolCase{"max_ragged_edge", true, 3, 2, 0, {1, 2, 10, 11}},
                      PoolCase{"avg_2x2", false, 2, 2, 0, {2, 4, 8, 8}},
                      PoolCase{"avg_3x3_s2_pad1", false, 3, 2, 1, {2, 3, 9, 9}},
                      PoolCase{"avg_3x3_s1_overlapping", false, 3, 1, 1, {2, 3, 7, 6}},
                      PoolCase{"avg_ragged_edge", false, 3, 2, 0, {1, 2, 10, 11}}),
    [](const ::testing::TestParamInfo<PoolCase>& param_info) {
      return std::string(param_info.param.name);
    });

TEST_F(CudaPool, GlobalAveragePool) {
  EXPECT_TRUE(matches_cpu(maker<GlobalAvgPool>(), {random_tensor({4, 8, 5, 5}, 13)}));
}

// The max is exact: the same input gives the same output bits on both devices.
TEST_F(CudaPool, MaxPoolForwardIsExact) {
  const Tensor x = random_tensor({2, 3, 9, 9}, 14);
  MaxPool2d pool(3, 2, 1);
  Context cpu_ctx, gpu_ctx;
  const Tensor y = pool.forward(x, cpu_ctx);
  const Tensor y_gpu = pool.forward(x.to(Device::cuda), gpu_ctx);
  EXPECT_TRUE(testing::close_to(y_gpu, y, 0.0, "max pool output"));
}

TEST_F(CudaPool, BackwardWithoutForwardWorkspaceIsAnInputError) {
  Backend& cuda = backend_for(Device::cuda);
  const Pool2dGeometry g{.kind = PoolKind::max,
                         .batch = 1,
                         .channels = 1,
                         .in_height = 4,
                         .in_width = 4,
                         .kernel = 2,
                         .stride = 2,
                         .padding = 0};
  const Tensor dy({1, 1, 2, 2}, Device::cuda);
  Tensor dx({1, 1, 4, 4}, Device::cuda);
  testing::expect_invalid([&] { cuda.pool2d_backward(g, dy, Tensor(), dx); },
                          "workspace from the matching forward call");
}

}  // namespace
}  // namespace interplace::kernels
