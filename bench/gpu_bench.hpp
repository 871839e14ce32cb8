// Start-up shared by the GPU benchmarks: the CUDA backend on device 0 (or the one
// CUDA_VISIBLE_DEVICES leaves), its description in the JSON context, TF32 off.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>

#include "interplace/kernels/cuda.hpp"

namespace interplace::bench {

// False (after saying why on stderr) when there is no usable GPU.
inline bool start_gpu() {
  if (!kernels::init_cuda_backend()) {
    std::fprintf(stderr, "no CUDA device: %s\n", kernels::cuda_unavailable_reason().c_str());
    return false;
  }
  benchmark::AddCustomContext("device", kernels::to_string(kernels::cuda_device_info()));
  benchmark::AddCustomContext("tf32", kernels::tf32_enabled() ? "on" : "off");
  return true;
}

}  // namespace interplace::bench
