#include <gtest/gtest.h>

#include <cmath>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/layers/attend.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::check_gradients;
using testing::random_tensor;
using testing::throws_invalid;

// softmax(q m^T / sqrt(D)) m, in double precision.
std::vector<double> reference(const Tensor& q, const Tensor& m) {
  const int64_t batch = q.dim(0), tq = q.dim(1), s = m.dim(1), d = q.dim(2);
  std::vector<double> y;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < tq; ++i) {
      std::vector<double> w(static_cast<size_t>(s));
      double total = 0.0;
      for (int64_t j = 0; j < s; ++j) {
        double dot = 0.0;
        for (int64_t k = 0; k < d; ++k) {
          dot += double(q.data()[(b * tq + i) * d + k]) * m.data()[(b * s + j) * d + k];
        }
        w[static_cast<size_t>(j)] = std::exp(dot / std::sqrt(double(d)));
        total += w[static_cast<size_t>(j)];
      }
      for (int64_t k = 0; k < d; ++k) {
        double v = 0.0;
        for (int64_t j = 0; j < s; ++j) {
          v += w[static_cast<size_t>(j)] / total * m.data()[(b * s + j) * d + k];
        }
        y.push_back(v);
      }
    }
  }
  return y;
}

TEST(Attend, ForwardMatchesReference) {
  Attend layer;
  const Tensor q = random_tensor({2, 3, 4}, 1);
  const Tensor m = random_tensor({2, 5, 4}, 2);
  Context ctx;
  EXPECT_TRUE(
      all_close(layer.forward(std::vector<Tensor>{q, m}, ctx), reference(q, m), 1e-4, 1e-5));
}

TEST(Attend, GradientsMatchFiniteDifferences) {
  Attend layer;
  EXPECT_TRUE(check_gradients(layer, {random_tensor({2, 1, 6}, 3), random_tensor({2, 5, 6}, 4)}));
  EXPECT_TRUE(check_gradients(layer, {random_tensor({1, 4, 3}, 5), random_tensor({1, 2, 3}, 6)}));
}

TEST(Attend, FlopsAndShapeErrors) {
  Attend layer;
  const std::vector<Shape> shapes = {Shape{2, 1, 8}, Shape{2, 5, 8}};
  EXPECT_EQ(layer.output_shape(shapes), (Shape{2, 1, 8}));
  EXPECT_EQ(layer.flops(shapes).forward_flops, 4 * 10 * 8 + 5 * 10);
  EXPECT_EQ(layer.flops(shapes).backward_flops, 8 * 10 * 8 + 4 * 10);
  EXPECT_EQ(layer.parameter_count(), 0);
  const std::vector<Shape> bad = {Shape{2, 1, 8}, Shape{2, 5, 7}};
  EXPECT_TRUE(throws_invalid([&] { layer.output_shape(bad); }, {"Attend", "same B and D"}));
}

}  // namespace
}  // namespace interplace::kernels
