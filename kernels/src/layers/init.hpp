// Random parameter initialisation on any device. Values are drawn on the host in element
// order and copied once, so a seed gives the same parameters on every device.
#pragma once

#include "interplace/kernels/random.hpp"
#include "interplace/kernels/tensor.hpp"

namespace interplace::kernels {

template <class Draw>
void fill_random(Tensor& t, Draw draw) {
  Tensor host = t.device() == Device::cpu ? t : Tensor(t.shape());
  float* p = host.data();
  for (int64_t i = 0; i < host.numel(); ++i) p[i] = draw();
  if (t.device() != Device::cpu) t.copy_from(host);
}

inline void fill_uniform(Tensor& t, Rng& rng, float lo, float hi) {
  fill_random(t, [&] { return rng.uniform(lo, hi); });
}

inline void fill_normal(Tensor& t, Rng& rng, float mean, float stddev) {
  fill_random(t, [&] { return rng.normal(mean, stddev); });
}

}  // namespace interplace::kernels
