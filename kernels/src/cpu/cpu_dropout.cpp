// Counter-based dropout masks: element i depends only on (seed, i), so a mask is the same
// for any thread count and can be regenerated instead of stored.
#include <cmath>
#include <sstream>

#include "cpu_backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels::cpu {

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// splitmix64's output function.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

void CpuBackend::dropout_mask(uint64_t seed, float p, Tensor& mask) {
  if (!(p >= 0.0f && p < 1.0f)) {
    std::ostringstream message;
    message << "dropout: probability p must be in [0, 1), got " << p;
    throw_invalid(message.str());
  }
  // Element i takes the i-th output of a splitmix64 stream seeded with mix64(seed).
  const uint64_t key = mix64(seed);
  const float keep = 1.0f / (1.0f - p);
  float* pm = mask.data();
  const int64_t n = mask.numel();
#pragma omp parallel for if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = mix64(key + (static_cast<uint64_t>(i) + 1) * kGolden);
    const float u = static_cast<float>(bits >> 40) * 0x1.0p-24f;  // [0, 1), as Rng::uniform
    pm[i] = u >= p ? keep : 0.0f;
  }
}

}  // namespace interplace::kernels::cpu
