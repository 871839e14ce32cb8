#include "resnet_model.hpp"

#include "interplace/kernels/layers/activation.hpp"
#include "interplace/kernels/layers/batch_norm.hpp"
#include "interplace/kernels/layers/conv2d.hpp"
#include "interplace/kernels/layers/linear.hpp"
#include "interplace/kernels/layers/pooling.hpp"

namespace interplace::bench {

using namespace interplace::kernels;

namespace {

std::unique_ptr<Layer> basic_block(int64_t in, int64_t out, int64_t stride) {
  auto main = std::make_unique<Sequential>();
  main->emplace<Conv2d>(in, out, 3, stride, 1, 1, false);
  main->emplace<BatchNorm2d>(out);
  main->emplace<ReLU>();
  main->emplace<Conv2d>(out, out, 3, 1, 1, 1, false);
  main->emplace<BatchNorm2d>(out);
  std::unique_ptr<Sequential> shortcut;
  if (stride != 1 || in != out) {
    shortcut = std::make_unique<Sequential>();
    shortcut->emplace<Conv2d>(in, out, 1, stride, 0, 1, false);
    shortcut->emplace<BatchNorm2d>(out);
  }
  auto block = std::make_unique<Sequential>();
  block->emplace<Residual>(std::move(main), std::move(shortcut));
  block->emplace<ReLU>();
  return block;
}

}  // namespace

std::unique_ptr<Sequential> make_cifar_resnet(int blocks, int64_t in_channels, int64_t classes) {
  auto net = std::make_unique<Sequential>();
  net->emplace<Conv2d>(in_channels, 16, 3, 1, 1, 1, false);
  net->emplace<BatchNorm2d>(16);
  net->emplace<ReLU>();
  int64_t channels = 16;
  for (int64_t stage_channels : {16, 32, 64}) {
    for (int b = 0; b < blocks; ++b) {
      const int64_t stride = (b == 0 && stage_channels != 16) ? 2 : 1;
      net->add(basic_block(channels, stage_channels, stride));
      channels = stage_channels;
    }
  }
  net->emplace<GlobalAvgPool>();
  net->emplace<Linear>(channels, classes);
  return net;
}

}  // namespace interplace::bench
