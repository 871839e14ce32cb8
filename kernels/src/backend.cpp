#include "interplace/kernels/backend.hpp"

#include <cstdio>

#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

namespace {
Backend* backends[2] = {nullptr, nullptr};
}  // namespace

// Defined by the CPU backend (cpu/cpu_backend.cpp).
Backend& cpu_backend_instance();

std::string Conv2dGeometry::key() const {
  return "conv:" + std::to_string(batch) + "," + std::to_string(in_channels) + "," +
         std::to_string(in_height) + "," + std::to_string(in_width) + "," +
         std::to_string(out_channels) + "," + std::to_string(kernel_h) + "," +
         std::to_string(kernel_w) + "," + std::to_string(stride) + "," + std::to_string(padding_h) +
         "," + std::to_string(padding_w) + "," + std::to_string(groups);
}

std::string Pool2dGeometry::key() const {
  return std::string(kind == PoolKind::max ? "maxpool:" : "avgpool:") + std::to_string(batch) +
         "," + std::to_string(channels) + "," + std::to_string(in_height) + "," +
         std::to_string(in_width) + "," + std::to_string(kernel) + "," + std::to_string(stride) +
         "," + std::to_string(padding) + (count_include_pad ? ",incl" : "");
}

std::string Pad2dGeometry::key() const {
  return "pad:" + std::to_string(batch) + "," + std::to_string(channels) + "," +
         std::to_string(in_height) + "," + std::to_string(in_width) + "," + std::to_string(top) +
         "," + std::to_string(bottom) + "," + std::to_string(left) + "," + std::to_string(right);
}

std::string MatmulGeometry::key() const {
  // Scales in hex-float form: exact, so plans for nearby alphas never collide.
  char scales[64];
  std::snprintf(scales, sizeof scales, "%a,%a", static_cast<double>(alpha),
                static_cast<double>(beta));
  return "matmul:" + std::to_string(batch) + "," + std::to_string(m) + "," + std::to_string(n) +
         "," + std::to_string(k) + "," + (transpose_a ? "T" : "N") + (transpose_b ? "T" : "N") +
         "," + scales;
}

void register_backend(Device device, Backend* backend) {
  backends[static_cast<int>(device)] = backend;
}

Backend& backend_for(Device device) {
  if (device == Device::cpu) return cpu_backend_instance();
  Backend* backend = backends[static_cast<int>(device)];
  if (backend == nullptr) {
    throw_runtime("no " + to_string(device) +
                  " backend: interplace was built without it or no device is present");
  }
  return *backend;
}

}  // namespace interplace::kernels
