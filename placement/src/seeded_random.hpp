// Platform-independent seeded choices built on the kernel library's splitmix64 Rng
// (std:: distributions give different numbers on different standard libraries).
#pragma once

#include <cstdint>

#include "interplace/kernels/random.hpp"

namespace interplace::placement::detail {

// Uniform integer in [0, bound), bound > 0, without modulo bias.
inline uint64_t uniform_index(kernels::Rng& rng, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
  for (;;) {
    const uint64_t x = rng.next_u64();
    if (x >= threshold) return x % bound;
  }
}

}  // namespace interplace::placement::detail
