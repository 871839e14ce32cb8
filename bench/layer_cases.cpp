#include "layer_cases.hpp"

#include "interplace/kernels/layers/activation.hpp"
#include "interplace/kernels/layers/attention.hpp"
#include "interplace/kernels/layers/batch_norm.hpp"
#include "interplace/kernels/layers/conv2d.hpp"
#include "interplace/kernels/layers/embedding.hpp"
#include "interplace/kernels/layers/layer_norm.hpp"
#include "interplace/kernels/layers/linear.hpp"
#include "interplace/kernels/layers/loss.hpp"
#include "interplace/kernels/layers/pooling.hpp"

namespace interplace::bench {

using namespace interplace::kernels;

namespace {

Tensor integers(const Shape& shape, int64_t bound, Rng& rng) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data()[i] = static_cast<float>(rng.next_u64() % static_cast<uint64_t>(bound));
  }
  return t;
}

std::function<std::vector<Tensor>(Rng&)> one_input(Shape shape) {
  return [shape](Rng& rng) { return std::vector<Tensor>{normal_tensor(shape, rng)}; };
}

template <class L, class... Args>
std::function<std::unique_ptr<Layer>()> maker(Args... args) {
  return [=] { return std::make_unique<L>(args...); };
}

}  // namespace

Tensor normal_tensor(const Shape& shape, Rng& rng) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = rng.normal(0.0f, 1.0f);
  return t;
}

std::vector<LayerCase> layer_cases() {
  return {
      {"conv3x3_16_28x28_b128", maker<Conv2d>(16, 16, 3, 1, 1, 1, false),
       one_input({128, 16, 28, 28})},
      {"conv3x3_32_14x14_b128", maker<Conv2d>(32, 32, 3, 1, 1, 1, false),
       one_input({128, 32, 14, 14})},
      {"conv3x3_64_7x7_b128", maker<Conv2d>(64, 64, 3, 1, 1, 1, false), one_input({128, 64, 7, 7})},
      {"conv3x3_s2_16to32_b128", maker<Conv2d>(16, 32, 3, 2, 1, 1, false),
       one_input({128, 16, 28, 28})},
      {"conv1x1_s2_16to32_b128", maker<Conv2d>(16, 32, 1, 2, 0, 1, false),
       one_input({128, 16, 28, 28})},
      {"conv3x3_64_56x56_b16", maker<Conv2d>(64, 64, 3, 1, 1, 1, false),
       one_input({16, 64, 56, 56})},
      {"dwconv3x3_144_56x56_b16", maker<Conv2d>(144, 144, 3, 1, 1, 144, false),
       one_input({16, 144, 56, 56})},
      {"batchnorm_16_28x28_b128", maker<BatchNorm2d>(16), one_input({128, 16, 28, 28})},
      // resnet20's three stages at batch 512, where its training step is GPU-bound.
      {"conv3x3_16_28x28_b512", maker<Conv2d>(16, 16, 3, 1, 1, 1, false),
       one_input({512, 16, 28, 28})},
      {"conv3x3_32_14x14_b512", maker<Conv2d>(32, 32, 3, 1, 1, 1, false),
       one_input({512, 32, 14, 14})},
      {"conv3x3_64_7x7_b512", maker<Conv2d>(64, 64, 3, 1, 1, 1, false), one_input({512, 64, 7, 7})},
      {"batchnorm_16_28x28_b512", maker<BatchNorm2d>(16), one_input({512, 16, 28, 28})},
      {"relu_16_28x28_b128", maker<ReLU>(), one_input({128, 16, 28, 28})},
      {"maxpool3x3_s2_64_112x112_b8", maker<MaxPool2d>(3, 2, 1), one_input({8, 64, 112, 112})},
      {"globalavgpool_64_7x7_b128", maker<GlobalAvgPool>(), one_input({128, 64, 7, 7})},
      {"linear_768to3072_1024rows", maker<Linear>(768, 3072), one_input({8, 128, 768})},
      {"gelu_3072_1024rows", maker<GELU>(), one_input({8, 128, 3072})},
      {"layernorm_768_1024rows", maker<LayerNorm>(768), one_input({8, 128, 768})},
      {"attention_768_h12_t128_b8", maker<CausalSelfAttention>(768, 12), one_input({8, 128, 768})},
      {"embedding_50257x768_t128_b8", maker<Embedding>(50257, 1024, 768),
       [](Rng& rng) {
         return std::vector<Tensor>{integers({8, 128}, 50257, rng)};
       }},
      {"softmax_xent_50257_512rows", maker<SoftmaxCrossEntropy>(),
       [](Rng& rng) {
         return std::vector<Tensor>{normal_tensor({512, 50257}, rng), integers({512}, 50257, rng)};
       }},
  };
}

}  // namespace interplace::bench
