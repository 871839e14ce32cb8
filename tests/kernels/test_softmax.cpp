// Backend ops behind attention: softmax with the causal mask, and the head axis swap.
#include <gtest/gtest.h>

#include <cmath>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/backend.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::random_tensor;
using testing::throws_invalid;

Backend& cpu() {
  return backend_for(Device::cpu);
}

// Softmax in double over the first `valid` columns of each row, zero after.
std::vector<double> reference_softmax(const Tensor& x, bool causal) {
  const int64_t cols = x.dim(-1), rows = x.numel() / cols;
  std::vector<double> y;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t valid = causal ? r % cols + 1 : cols;
    const float* xr = x.data() + r * cols;
    double max = xr[0], sum = 0;
    for (int64_t c = 0; c < valid; ++c) max = std::max(max, double(xr[c]));
    for (int64_t c = 0; c < valid; ++c) sum += std::exp(xr[c] - max);
    for (int64_t c = 0; c < cols; ++c) y.push_back(c < valid ? std::exp(xr[c] - max) / sum : 0.0);
  }
  return y;
}

TEST(Softmax, MatchesReferenceOverAWideRange) {
  const Tensor x = random_tensor({5, 37}, 1, 20.0f);  // 37: not a multiple of the SIMD width
  Tensor y(x.shape());
  cpu().softmax_forward(x, false, y);
  EXPECT_TRUE(all_close(y, reference_softmax(x, false), 1e-5, 1e-12));
}

TEST(Softmax, CausalMaskZeroesFutureColumnsOfEachBlock) {
  Tensor x = random_tensor({2, 3, 4, 4}, 2, 3.0f);
  for (int64_t i = 0; i < x.numel(); i += 5) x.data()[i] = 1e30f;  // ignored where masked
  x.data()[1] = 1e30f;                                             // row 0, column 1: masked
  Tensor y(x.shape());
  cpu().softmax_forward(x, true, y);
  EXPECT_TRUE(all_close(y, reference_softmax(x, true), 1e-5, 1e-12));
  for (int64_t r = 0; r < 24; ++r) {
    for (int64_t c = r % 4 + 1; c < 4; ++c) EXPECT_EQ(y.data()[r * 4 + c], 0.0f) << r << "," << c;
  }
}

TEST(Softmax, BackwardMatchesReference) {
  Tensor y(Shape{3, 6});
  cpu().softmax_forward(random_tensor({3, 6}, 3), false, y);
  const Tensor dy = random_tensor({3, 6}, 4);
  Tensor dx(y.shape());
  cpu().softmax_backward(y, dy, dx);
  std::vector<double> expected;
  for (int64_t r = 0; r < 3; ++r) {
    double dot = 0;
    for (int64_t c = 0; c < 6; ++c) dot += double(y.data()[r * 6 + c]) * dy.data()[r * 6 + c];
    for (int64_t c = 0; c < 6; ++c)
      expected.push_back(y.data()[r * 6 + c] * (dy.data()[r * 6 + c] - dot));
  }
  EXPECT_TRUE(all_close(dx, expected));
}

TEST(Softmax, RejectsBadShapes) {
  Tensor x({2, 3, 4}), y({2, 3, 4}), small({5});
  EXPECT_TRUE(throws_invalid([&] { cpu().softmax_forward(x, true, y); },
                             {"causal", "[..., T, T]", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_invalid([&] { cpu().softmax_forward(x, false, small); }, {"[5]"}));
}

TEST(SwapAxes12, SwapsTheMiddleAxes) {
  const int64_t a = 2, b = 3, c = 4, d = 5;
  const Tensor x = random_tensor({a, b, c, d}, 1);
  Tensor y({a, c, b, d});
  cpu().swap_axes_12(x, y);
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < b; ++j) {
      for (int64_t k = 0; k < c; ++k) {
        for (int64_t l = 0; l < d; ++l) {
          ASSERT_EQ(y.data()[((i * c + k) * b + j) * d + l],
                    x.data()[((i * b + j) * c + k) * d + l]);
        }
      }
    }
  }
  Tensor wrong({a, b, c, d});
  EXPECT_TRUE(throws_invalid([&] { cpu().swap_axes_12(x, wrong); },
                             {"swap_axes_12", "[2, 4, 3, 5]", "[2, 3, 4, 5]"}));
  EXPECT_TRUE(throws_invalid([&] { cpu().swap_axes_12(x.reshaped({6, 20}), y); }, {"[6, 20]"}));
}

}  // namespace
}  // namespace interplace::kernels
