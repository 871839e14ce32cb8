// CIFAR-style ResNet (He et al. 2016, section 4.2) built from kernel-library layers, for
// the training-step benchmark: 3 stages of 16/32/64 channels with `blocks` basic blocks
// each, 1x1 conv + BN projection shortcuts where the shape changes. blocks = 3 gives
// resnet20 (272,186 parameters at 1x28x28 input and 10 classes).
#pragma once

#include <memory>

#include "interplace/kernels/layers/container.hpp"

namespace interplace::bench {

std::unique_ptr<kernels::Sequential> make_cifar_resnet(int blocks, int64_t in_channels,
                                                       int64_t classes);

}  // namespace interplace::bench
