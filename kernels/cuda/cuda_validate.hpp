// Argument checks of the CUDA backend. Beyond the CPU backend's size checks, every tensor
// must live on the GPU: a host pointer handed to a kernel would fault asynchronously,
// far from the call that caused it.
#pragma once

#include <initializer_list>
#include <string>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/tensor.hpp"

namespace interplace::kernels::cuda {

inline void require_cuda(std::initializer_list<const Tensor*> tensors, const std::string& op) {
  for (const Tensor* t : tensors) {
    if (!t->defined()) throw_invalid(op + ": a tensor argument is undefined");
    if (t->device() != Device::cuda) {
      throw_invalid(op + ": tensor " + to_string(t->shape()) + " is on " + to_string(t->device()) +
                    ", expected cuda (move layers with Layer::to and inputs with Tensor::to)");
    }
  }
}

inline void require_numel(const Tensor& t, int64_t expected, const std::string& op,
                          const char* what) {
  if (t.numel() != expected) {
    throw_invalid(op + ": " + what + " " + to_string(t.shape()) + " has " +
                  std::to_string(t.numel()) + " elements, expected " + std::to_string(expected));
  }
}

}  // namespace interplace::kernels::cuda
