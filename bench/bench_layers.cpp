// Forward and backward of each layer at shapes taken from the model zoo (resnet20 on
// Fashion-MNIST, resnet50/mobilenet_v2 on ImageNet, gpt2-small), with achieved GFLOP/s.
// Backward is timed alone: one forward, then backward repeatedly on the same context.
#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layers/activation.hpp"
#include "interplace/kernels/layers/attention.hpp"
#include "interplace/kernels/layers/batch_norm.hpp"
#include "interplace/kernels/layers/conv2d.hpp"
#include "interplace/kernels/layers/embedding.hpp"
#include "interplace/kernels/layers/layer_norm.hpp"
#include "interplace/kernels/layers/linear.hpp"
#include "interplace/kernels/layers/loss.hpp"
#include "interplace/kernels/layers/pooling.hpp"

namespace {

using namespace interplace::kernels;

struct Case {
  std::string name;
  std::function<std::unique_ptr<Layer>()> make;
  std::function<std::vector<Tensor>(Rng&)> inputs;
};

Tensor normal(const Shape& shape, Rng& rng) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = rng.normal(0.0f, 1.0f);
  return t;
}

Tensor integers(const Shape& shape, int64_t bound, Rng& rng) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data()[i] = static_cast<float>(rng.next_u64() % static_cast<uint64_t>(bound));
  }
  return t;
}

std::function<std::vector<Tensor>(Rng&)> one_input(Shape shape) {
  return [shape](Rng& rng) { return std::vector<Tensor>{normal(shape, rng)}; };
}

template <class L, class... Args>
std::function<std::unique_ptr<Layer>()> maker(Args... args) {
  return [=] { return std::make_unique<L>(args...); };
}

std::vector<Case> cases() {
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
         return std::vector<Tensor>{normal({512, 50257}, rng), integers({512}, 50257, rng)};
       }},
  };
}

void set_flop_rate(benchmark::State& state, int64_t flops) {
  state.counters["gflops_per_s"] = benchmark::Counter(
      static_cast<double>(flops) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = cpu_threads();
}

void run_forward(benchmark::State& state, const Case& c) {
  Rng rng(1);
  auto layer = c.make();
  layer->init_parameters(rng);
  const std::vector<Tensor> inputs = c.inputs(rng);
  Context ctx;
  layer->forward(inputs, ctx);  // plans created outside the timed loop
  for (auto _ : state) benchmark::DoNotOptimize(layer->forward(inputs, ctx).data());
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  set_flop_rate(state, layer->flops(shapes).forward_flops);
}

void run_backward(benchmark::State& state, const Case& c) {
  Rng rng(1);
  auto layer = c.make();
  layer->init_parameters(rng);
  const std::vector<Tensor> inputs = c.inputs(rng);
  Context ctx;
  const Tensor y = layer->forward(inputs, ctx);
  const Tensor dy = normal(y.shape(), rng);
  layer->backward(dy, ctx);
  for (auto _ : state) benchmark::DoNotOptimize(layer->backward(dy, ctx).data());
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  set_flop_rate(state, layer->flops(shapes).backward_flops);
}

}  // namespace

int main(int argc, char** argv) {
  for (const Case& c : cases()) {
    benchmark::RegisterBenchmark(("forward/" + c.name).c_str(), run_forward, c)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("backward/" + c.name).c_str(), run_backward, c)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
