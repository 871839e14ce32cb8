// Seeded randomness: the same seed gives the same numbers on every platform
// (we avoid std:: distributions, whose output is implementation-defined).
#pragma once

#include <cstdint>

namespace interplace::kernels {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next_u64();  // splitmix64
  float uniform();      // [0, 1)
  float uniform(float lo, float hi);
  float normal(float mean, float stddev);  // Box-Muller

 private:
  uint64_t state_;
};

}  // namespace interplace::kernels
