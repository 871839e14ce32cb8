// exp for arguments <= 0 (softmax and log-sum-exp after subtracting the row maximum) that
// the compiler vectorises: glibc's expf is only vectorised under -ffast-math. Cephes'
// range reduction and polynomial; relative error below 1e-7 down to -87.3, results below
// FLT_MIN (x < -87.3) flush to 0. Written with integer masks instead of float branches,
// because GCC will not if-convert a float comparison while math may trap.
#pragma once

#include <bit>
#include <cstdint>

namespace interplace::kernels::cpu {

inline float exp_nonpositive(float x) {
  const float shifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float t = x * 1.44269504088896341f + shifter;
  const float n = t - shifter;  // round(x / ln 2)
  const auto ni =
      static_cast<int32_t>(std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(shifter));
  float r = x - n * 0.693359375f;  // x - n ln 2 in two steps (Cody-Waite)
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const float two_to_n = std::bit_cast<float>(static_cast<uint32_t>(ni + 127) << 23);
  const uint32_t keep = 0u - static_cast<uint32_t>(ni >= -126);  // all ones, or 0 below FLT_MIN
  return std::bit_cast<float>(std::bit_cast<uint32_t>(p * two_to_n) & keep);
}

}  // namespace interplace::kernels::cpu
