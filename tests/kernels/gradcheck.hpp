// Test helpers: gradient checks by central finite differences, tensor comparisons.
//
// The check uses the scalar loss L = sum_i y_i * r_i with a fixed random r, so dL/dy = r.
// Analytic gradients come from layer.backward(r); numerical ones from
// (L(v + h) - L(v - h)) / 2h per element, with L accumulated in double precision.
// Agreement is measured norm-wise: ||numeric - analytic|| / max(||numeric||, ||analytic||).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels::testing {

struct GradCheckOptions {
  double step = 1e-2;                // h
  double tolerance = 5e-3;           // on the norm-wise relative error
  int max_elements = 256;            // per tensor; larger tensors are sampled (seeded)
  std::vector<bool> differentiable;  // per input; empty = all inputs are checked
  uint64_t seed = 7;
  // Called before every forward of the check, e.g. to pin a dropout layer's mask.
  std::function<void()> before_forward;
};

// Also checks that backward with Gradients::inputs_only gives the same input gradients and
// leaves every parameter gradient untouched, and that Gradients::inputs_deferring_parameters
// followed by Layer::backward_parameters gives the full backward's input and parameter
// gradients (each pass touching only its own) and refuses a second parameter pass.
::testing::AssertionResult check_gradients(Layer& layer, std::vector<Tensor> inputs,
                                           const GradCheckOptions& options = {});

// Runs forward once and backward twice with the same gradient and checks every parameter
// gradient doubled (gradients accumulate across backward calls until zero_grad).
::testing::AssertionResult backward_accumulates(Layer& layer, const Tensor& x, uint64_t seed);

// A CPU tensor of `shape` filled with N(0, stddev) values (seeded).
Tensor random_tensor(const Shape& shape, uint64_t seed, float stddev = 1.0f);

// Elementwise |actual - expected| <= atol + rtol * |expected|, reporting the worst index.
::testing::AssertionResult all_close(const Tensor& actual, const std::vector<double>& expected,
                                     double rtol = 1e-4, double atol = 1e-5);

}  // namespace interplace::kernels::testing
