// The per-layer benchmark cases, shared by the CPU and GPU layer benchmarks: shapes taken
// from the model zoo (resnet20 on Fashion-MNIST, resnet50/mobilenet_v2 on ImageNet,
// gpt2-small). Inputs are made on the host; the GPU benchmark moves them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "interplace/kernels/layer.hpp"

namespace interplace::bench {

struct LayerCase {
  std::string name;
  std::function<std::unique_ptr<kernels::Layer>()> make;
  std::function<std::vector<kernels::Tensor>(kernels::Rng&)> inputs;
};

std::vector<LayerCase> layer_cases();

// A host tensor of N(0, 1) values.
kernels::Tensor normal_tensor(const kernels::Shape& shape, kernels::Rng& rng);

}  // namespace interplace::bench
