// Batch normalisation on plain NCHW tensors: per-channel statistics over N, H, W.
//
// Not oneDNN: its only implementation for plain NCHW in 2.6 (ncsp_bnorm, compiled for
// baseline x86-64 in Debian's build) is slower than the loops below, and its fast jit
// kernels need nChw8c, whose reorders to and from NCHW cost more than they save (the
// timings: docs/kernels.md). Each (n, c) plane is contiguous, so every pass below is a
// unit-stride loop the compiler vectorises.
#include <algorithm>
#include <cmath>
#include <string>

#include "cpu_backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels::cpu {

namespace {

// Work below this many elements runs on one thread (thread start-up would dominate).
constexpr int64_t kParallelThreshold = 32768;

struct Layout {
  int64_t batch, channels, spatial;
  const float* plane(const float* base, int64_t n, int64_t c) const {
    return base + (n * channels + c) * spatial;
  }
  float* plane(float* base, int64_t n, int64_t c) const {
    return base + (n * channels + c) * spatial;
  }
  int64_t count() const { return batch * spatial; }  // values per channel
};

Layout layout_of(const Tensor& x) {
  if (x.rank() < 2 || x.numel() == 0) {
    throw_invalid("batch_norm: input must be [N, C, ...] and non-empty, got " +
                  to_string(x.shape()));
  }
  return {x.dim(0), x.dim(1), x.numel() / (x.dim(0) * x.dim(1))};
}

void check_size(const Tensor& t, int64_t expected, const char* what, const Tensor& x) {
  if (!t.defined() || t.numel() != expected) {
    throw_invalid(std::string("batch_norm on ") + to_string(x.shape()) + ": " + what + " " +
                  (t.defined() ? to_string(t.shape()) : std::string("(undefined)")) +
                  " must have " + std::to_string(expected) + " elements");
  }
}

void check_channels(std::initializer_list<const Tensor*> tensors, const Layout& l,
                    const Tensor& x) {
  for (const Tensor* t : tensors) check_size(*t, l.channels, "per-channel tensor", x);
}

// Sums of a(k) and b(k) for k in [0, n): float partial sums over short runs
// (vectorised), combined in double, so that long planes keep their precision.
struct Sums {
  double a = 0.0, b = 0.0;
};
template <class TermA, class TermB>
Sums sums_of(int64_t n, TermA term_a, TermB term_b) {
  constexpr int64_t kRun = 512;
  Sums total;
  for (int64_t start = 0; start < n; start += kRun) {
    const int64_t end = std::min(n, start + kRun);
    float part_a = 0.0f, part_b = 0.0f;
#pragma omp simd reduction(+ : part_a, part_b)
    for (int64_t k = start; k < end; ++k) {
      part_a += term_a(k);
      part_b += term_b(k);
    }
    total.a += part_a;
    total.b += part_b;
  }
  return total;
}
template <class Term>
double sum_of(int64_t n, Term term) {
  return sums_of(n, term, [](int64_t) { return 0.0f; }).a;
}

// y = x * scale[c] + shift[c], scale = gamma / sqrt(var + eps), shift = beta - mean * scale.
void normalize(const Layout& l, const float* x, const float* gamma, const float* beta,
               const float* mean, const float* variance, float epsilon, float* y) {
  const int64_t planes = l.batch * l.channels;
#pragma omp parallel for if (planes * l.spatial > kParallelThreshold)
  for (int64_t plane = 0; plane < planes; ++plane) {
    const int64_t c = plane % l.channels;
    const float scale = gamma[c] / std::sqrt(variance[c] + epsilon);
    const float shift = beta[c] - mean[c] * scale;
    const float* in = x + plane * l.spatial;
    float* out = y + plane * l.spatial;
#pragma omp simd
    for (int64_t k = 0; k < l.spatial; ++k) out[k] = in[k] * scale + shift;
  }
}

}  // namespace

void CpuBackend::batch_norm_forward_training(const Tensor& x, const Tensor& gamma,
                                             const Tensor& beta, float epsilon, Tensor& y,
                                             Tensor& batch_mean, Tensor& batch_variance) {
  const Layout l = layout_of(x);
  check_size(y, x.numel(), "output", x);
  check_channels({&gamma, &beta, &batch_mean, &batch_variance}, l, x);
  const float* px = x.data();
  float* mean = batch_mean.data();
  float* variance = batch_variance.data();
  // Two passes (mean, then centred squares): no cancellation for large means.
#pragma omp parallel for if (x.numel() > kParallelThreshold)
  for (int64_t c = 0; c < l.channels; ++c) {
    double sum = 0.0;
    for (int64_t n = 0; n < l.batch; ++n) {
      const float* p = l.plane(px, n, c);
      sum += sum_of(l.spatial, [p](int64_t k) { return p[k]; });
    }
    const double mu = sum / static_cast<double>(l.count());
    const auto m = static_cast<float>(mu);
    double squares = 0.0;
    for (int64_t n = 0; n < l.batch; ++n) {
      const float* p = l.plane(px, n, c);
      squares += sum_of(l.spatial, [p, m](int64_t k) { return (p[k] - m) * (p[k] - m); });
    }
    mean[c] = m;
    variance[c] = static_cast<float>(squares / static_cast<double>(l.count()));
  }
  normalize(l, px, gamma.data(), beta.data(), mean, variance, epsilon, y.data());
}

void CpuBackend::batch_norm_forward_inference(const Tensor& x, const Tensor& gamma,
                                              const Tensor& beta, const Tensor& mean,
                                              const Tensor& variance, float epsilon, Tensor& y) {
  const Layout l = layout_of(x);
  check_size(y, x.numel(), "output", x);
  check_channels({&gamma, &beta, &mean, &variance}, l, x);
  normalize(l, x.data(), gamma.data(), beta.data(), mean.data(), variance.data(), epsilon,
            y.data());
}

// With xhat = (x - mean) * inv_std and M values per channel:
//   dbeta = sum(dy), dgamma = sum(dy * xhat),
//   dx = gamma * inv_std * (dy - dbeta / M - xhat * dgamma / M).
void CpuBackend::batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                     const Tensor& batch_mean, const Tensor& batch_variance,
                                     float epsilon, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const Layout l = layout_of(x);
  check_size(dy, x.numel(), "output gradient", x);
  check_size(dx, x.numel(), "input gradient", x);
  check_channels({&gamma, &batch_mean, &batch_variance, &dgamma, &dbeta}, l, x);
  const float* px = x.data();
  const float* pdy = dy.data();
  const float* mean = batch_mean.data();
  const float* variance = batch_variance.data();
  float* pdgamma = dgamma.data();
  float* pdbeta = dbeta.data();
#pragma omp parallel for if (x.numel() > kParallelThreshold)
  for (int64_t c = 0; c < l.channels; ++c) {
    const float m = mean[c];
    double sum_dy = 0.0, sum_dy_centred = 0.0;
    for (int64_t n = 0; n < l.batch; ++n) {
      const float* p = l.plane(px, n, c);
      const float* g = l.plane(pdy, n, c);
      const Sums sums = sums_of(
          l.spatial, [g](int64_t k) { return g[k]; },
          [p, g, m](int64_t k) { return g[k] * (p[k] - m); });
      sum_dy += sums.a;
      sum_dy_centred += sums.b;
    }
    pdbeta[c] = static_cast<float>(sum_dy);
    pdgamma[c] = static_cast<float>(sum_dy_centred / std::sqrt(double(variance[c]) + epsilon));
  }
  const float* pgamma = gamma.data();
  float* pdx = dx.data();
  const auto count = static_cast<float>(l.count());
  const int64_t planes = l.batch * l.channels;
#pragma omp parallel for if (x.numel() > kParallelThreshold)
  for (int64_t plane = 0; plane < planes; ++plane) {
    const int64_t c = plane % l.channels;
    const float inv_std = 1.0f / std::sqrt(variance[c] + epsilon);
    const float scale = pgamma[c] * inv_std;
    const float mean_dy = pdbeta[c] / count;
    const float xhat_coefficient = inv_std * pdgamma[c] / count;
    const float m = mean[c];
    const float* p = px + plane * l.spatial;
    const float* g = pdy + plane * l.spatial;
    float* out = pdx + plane * l.spatial;
#pragma omp simd
    for (int64_t k = 0; k < l.spatial; ++k) {
      out[k] = scale * (g[k] - mean_dy - (p[k] - m) * xhat_coefficient);
    }
  }
}

}  // namespace interplace::kernels::cpu
