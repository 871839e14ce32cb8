// Helpers of the CUDA tests: a fixture that skips without a GPU, and comparisons of a layer
// run on the CUDA backend against the same layer run on the CPU backend (the reference).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels::testing {

// Every CUDA test derives from this: without a usable GPU (CI) it reports as skipped,
// with the reason.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override;
};

// Norm-wise agreement ||actual - expected|| <= tolerance * ||expected|| (with a floor for
// all-zero tensors), reporting the worst element. tolerance 0 asks for equal bits of
// value. Either tensor may be on any device.
::testing::AssertionResult close_to(const Tensor& actual, const Tensor& expected, double tolerance,
                                    const std::string& what);

struct CompareOptions {
  double tolerance = 1e-5;
  bool training = true;
  uint64_t seed = 3;
  bool second_backward = true;  // backward again: accumulated parameter gradients agree
  // Called on the CPU layer after init_parameters, before its state is copied to the GPU
  // (e.g. to move norm scales away from 1).
  std::function<void(Layer&)> prepare;
};

// Makes the layer twice, runs one copy on the CPU and one on CUDA with the same parameters
// and buffers, inputs and output gradient (random, seeded), and compares the outputs,
// input gradients, parameter gradients (after one and after two backward calls, and after
// a backward split into its input pass and deferred parameter pass) and buffers
// afterwards.
::testing::AssertionResult matches_cpu(const std::function<std::unique_ptr<Layer>()>& make,
                                       const std::vector<Tensor>& inputs,
                                       const CompareOptions& options = {});

template <class L, class... Args>
std::function<std::unique_ptr<Layer>()> maker(Args... args) {
  return [=] { return std::make_unique<L>(args...); };
}

// A CPU tensor of whole numbers in [0, bound) stored as floats (ids, labels).
Tensor random_integers(const Shape& shape, int64_t bound, uint64_t seed);

}  // namespace interplace::kernels::testing
