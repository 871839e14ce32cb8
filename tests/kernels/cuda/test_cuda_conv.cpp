// Conv2d on CUDA (cuDNN) against the CPU backend (oneDNN), over the geometries the model
// zoo uses: plain, strided, 1x1 projections, grouped, depthwise, with and without bias.
#include <gtest/gtest.h>

#include "cuda_compare.hpp"
#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/cuda.hpp"
#include "interplace/kernels/layers/conv2d.hpp"

namespace interplace::kernels {
namespace {

using testing::CompareOptions;
using testing::maker;
using testing::matches_cpu;
using testing::random_tensor;

struct ConvCase {
  const char* name;
  int64_t in, out, kernel, stride, padding, groups;
  bool bias;
  Shape input;
};

class CudaConv : public testing::CudaTest, public ::testing::WithParamInterface<ConvCase> {};

// Sums of up to Cin/groups * k * k products: cuDNN's algorithms (FFT, Winograd, implicit
// GEMM) round differently from oneDNN's, within a few fp32 ulps of the norm.
constexpr double kConvTolerance = 1e-4;

TEST_P(CudaConv, ForwardAndBackwardMatchTheCpu) {
  const ConvCase& c = GetParam();
  CompareOptions options;
  options.tolerance = kConvTolerance;
  EXPECT_TRUE(
      matches_cpu(maker<Conv2d>(c.in, c.out, c.kernel, c.stride, c.padding, c.groups, c.bias),
                  {random_tensor(c.input, 5)}, options));
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, CudaConv,
    ::testing::Values(ConvCase{"3x3", 4, 8, 3, 1, 1, 1, false, {2, 4, 9, 9}},
                      ConvCase{"3x3_bias", 3, 5, 3, 1, 1, 1, true, {3, 3, 8, 7}},
                      ConvCase{"3x3_stride2", 8, 16, 3, 2, 1, 1, false, {2, 8, 10, 10}},
                      ConvCase{"1x1_stride2", 8, 16, 1, 2, 0, 1, false, {2, 8, 10, 10}},
                      ConvCase{"5x5_no_padding", 2, 3, 5, 1, 0, 1, true, {2, 2, 11, 9}},
                      ConvCase{"grouped", 8, 12, 3, 1, 1, 4, true, {2, 8, 6, 6}},
                      ConvCase{"depthwise", 16, 16, 3, 1, 1, 16, false, {2, 16, 7, 7}},
                      ConvCase{"depthwise_stride2", 6, 6, 3, 2, 1, 6, true, {3, 6, 9, 9}},
                      ConvCase{"one_input_channel", 1, 16, 3, 1, 1, 1, false, {4, 1, 28, 28}},
                      ConvCase{"resnet20_stage", 16, 16, 3, 1, 1, 1, false, {16, 16, 28, 28}}),
    [](const ::testing::TestParamInfo<ConvCase>& param_info) {
      return std::string(param_info.param.name);
    });

using CudaConvMisc = testing::CudaTest;

TEST_F(CudaConvMisc, InvalidGeometryIsAnInputError) {
  Backend& cuda = backend_for(Device::cuda);
  // groups do not divide Cin
  const Conv2dGeometry bad{.batch = 2,
                           .in_channels = 6,
                           .in_height = 8,
                           .in_width = 8,
                           .out_channels = 4,
                           .kernel_h = 3,
                           .kernel_w = 3,
                           .stride = 1,
                           .padding_h = 1,
                           .padding_w = 1,
                           .groups = 4};
  const Tensor x({2, 6, 8, 8}, Device::cuda), w({4, 1, 3, 3}, Device::cuda);
  Tensor y({2, 4, 8, 8}, Device::cuda);
  testing::expect_invalid([&] { cuda.conv2d_forward(bad, x, w, Tensor(), y); },
                          "groups must divide both channel counts");
  const Conv2dGeometry good{.batch = 2,
                            .in_channels = 4,
                            .in_height = 8,
                            .in_width = 8,
                            .out_channels = 4,
                            .kernel_h = 3,
                            .kernel_w = 3,
                            .stride = 1,
                            .padding_h = 1,
                            .padding_w = 1,
                            .groups = 1};
  const Tensor x4({2, 4, 8, 8}, Device::cuda), small_w({4, 4, 3, 2}, Device::cuda);
  testing::expect_invalid([&] { cuda.conv2d_forward(good, x4, small_w, Tensor(), y); }, "weight");
}

// TF32 rounds inputs to 10 mantissa bits: about 1e-3 relative, and a separate plan.
TEST_F(CudaConvMisc, WithTf32StaysCloseToTheCpu) {
  set_tf32(true);
  CompareOptions options;
  options.tolerance = 1e-2;
  const ::testing::AssertionResult close = matches_cpu(
      maker<Conv2d>(16, 32, 3, 1, 1, 1, false), {random_tensor({8, 16, 14, 14}, 6)}, options);
  set_tf32(false);
  EXPECT_TRUE(close);
}

}  // namespace
}  // namespace interplace::kernels
