// Layer normalisation over the last axis as OpenMP loops rather than oneDNN's
// layer_normalization primitive: the op is memory-bound, so a row loop with SIMD reductions
// already runs at bandwidth, and our own loop keeps the statistics in double and reduces
// dgamma/dbeta in a fixed order, which makes results independent of the thread count (the
// CPU reference a GPU kernel is checked against should be).
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu_backend.hpp"
#include "interplace/kernels/error.hpp"
#include "shape_checks.hpp"

namespace interplace::kernels::cpu {

namespace {

using detail::check_layer_norm;
using detail::RowsOf;

constexpr int64_t kParallelElements = 32768;
constexpr int64_t kColumnBlock = 64;  // columns per task of the dgamma/dbeta reduction

// Forward and backward derive 1/sqrt(var + eps) identically from the stored variance.
float inverse_std(float variance, float epsilon) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(variance) + epsilon));
}

}  // namespace

void CpuBackend::layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                    float epsilon, Tensor& y, Tensor& mean, Tensor& variance) {
  const RowsOf dims = check_layer_norm("layer_norm_forward", x, gamma, y, mean, variance);
  const int64_t rows = dims.rows, features = dims.features;
  if (beta.numel() != features) {
    throw_invalid("layer_norm_forward: beta has " + std::to_string(beta.numel()) +
                  " elements for " + std::to_string(features) + " features");
  }
  const float* px = x.data();
  const float* pg = gamma.data();
  const float* pb = beta.data();
  float* py = y.data();
  float* pm = mean.data();
  float* pv = variance.data();
#pragma omp parallel for if (x.numel() > kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = px + r * features;
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < features; ++c) sum += xr[c];
    const double mu = sum / static_cast<double>(features);
    double squares = 0.0;  // two passes: no cancellation for rows with a large mean
#pragma omp simd reduction(+ : squares)
    for (int64_t c = 0; c < features; ++c) {
      const double d = xr[c] - mu;
      squares += d * d;
    }
    pm[r] = static_cast<float>(mu);
    pv[r] = static_cast<float>(squares / static_cast<double>(features));
    const float m = pm[r];
    const float rstd = inverse_std(pv[r], epsilon);
    float* yr = py + r * features;
#pragma omp simd
    for (int64_t c = 0; c < features; ++c) yr[c] = (xr[c] - m) * rstd * pg[c] + pb[c];
  }
}

void CpuBackend::layer_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                     const Tensor& mean, const Tensor& variance, float epsilon,
                                     Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const RowsOf dims = check_layer_norm("layer_norm_backward", x, gamma, dx, mean, variance);
  const int64_t rows = dims.rows, features = dims.features;
  if (dy.numel() != x.numel() || dgamma.numel() != features || dbeta.numel() != features) {
    throw_invalid("layer_norm_backward: dy " + to_string(dy.shape()) + ", dgamma " +
                  to_string(dgamma.shape()) + ", dbeta " + to_string(dbeta.shape()) +
                  " do not match input " + to_string(x.shape()));
  }
  const float* px = x.data();
  const float* pdy = dy.data();
  const float* pg = gamma.data();
  const float* pm = mean.data();
  float* pdx = dx.data();
  std::vector<float> rstd(static_cast<size_t>(rows));
  const double inv_features = 1.0 / static_cast<double>(features);

  // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma.
#pragma omp parallel for if (x.numel() > kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const float m = pm[r];
    const float s = inverse_std(variance.data()[r], epsilon);
    rstd[static_cast<size_t>(r)] = s;
    const float* xr = px + r * features;
    const float* dyr = pdy + r * features;
    double sum_g = 0.0, sum_gx = 0.0;
#pragma omp simd reduction(+ : sum_g, sum_gx)
    for (int64_t c = 0; c < features; ++c) {
      const float g = dyr[c] * pg[c];
      sum_g += g;
      sum_gx += g * ((xr[c] - m) * s);
    }
    const auto mean_g = static_cast<float>(sum_g * inv_features);
    const auto mean_gx = static_cast<float>(sum_gx * inv_features);
    float* dxr = pdx + r * features;
#pragma omp simd
    for (int64_t c = 0; c < features; ++c) {
      dxr[c] = s * (dyr[c] * pg[c] - mean_g - (xr[c] - m) * s * mean_gx);
    }
  }

  // dgamma = sum over rows of dy * xhat, dbeta = sum of dy: each task owns a block of
  // columns and walks the rows in order, so the sums do not depend on the thread count.
  float* pdg = dgamma.data();
  float* pdb = dbeta.data();
  const int64_t blocks = (features + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for if (x.numel() > kParallelElements)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c0 = b * kColumnBlock;
    const int64_t width = std::min(kColumnBlock, features - c0);
    double acc_g[kColumnBlock] = {}, acc_b[kColumnBlock] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = px + r * features + c0;
      const float* dyr = pdy + r * features + c0;
      const float m = pm[r];
      const float s = rstd[static_cast<size_t>(r)];
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) {
        acc_g[c] += dyr[c] * ((xr[c] - m) * s);
        acc_b[c] += dyr[c];
      }
    }
    for (int64_t c = 0; c < width; ++c) {
      pdg[c0 + c] = static_cast<float>(acc_g[c]);
      pdb[c0 + c] = static_cast<float>(acc_b[c]);
    }
  }
}

}  // namespace interplace::kernels::cpu
