// Whole training steps on the GPU: resnet20 (batch 128, 1x28x28, 10 classes, SGD with
// momentum, as bench_resnet20) and a small GPT (gpt_model.hpp, AdamW), each forward, loss,
// backward and optimiser, ending with a wait for the GPU. The PyTorch peers
// (resnet20_torch.py --device cuda, gpt_torch.py) run the same networks and shapes.
#include <benchmark/benchmark.h>

#include <nvtx3/nvToolsExt.h>

#include <chrono>

#include "gpt_model.hpp"
#include "gpu_bench.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layers/loss.hpp"
#include "interplace/kernels/optimizer.hpp"
#include "resnet_model.hpp"

namespace {

using namespace interplace::kernels;

// One training step of `net` on (inputs, labels), then a wait for the GPU. Returns the
// host's time in the step before that wait, in milliseconds: the loss value is read back
// (a synchronisation) after the forward pass, so this is the forward's GPU time plus the
// host's time for the backward and the optimiser.
template <class Optimiser>
double train_step(Layer& net, SoftmaxCrossEntropy& loss, Optimiser& optimiser, const Tensor& inputs,
                  const Tensor& labels, const Tensor& one) {
  const auto start = std::chrono::steady_clock::now();
  Context net_ctx, loss_ctx;
  const Tensor logits = net.forward(inputs, net_ctx);
  const Tensor loss_inputs[] = {logits, labels};
  loss.forward(loss_inputs, loss_ctx);
  optimiser.zero_grad();
  const Tensor dlogits = loss.backward(one, loss_ctx)[0];
  net.backward(dlogits, net_ctx);
  optimiser.step();
  const auto launched = std::chrono::steady_clock::now();
  backend_for(Device::cuda).synchronize();
  return std::chrono::duration<double, std::milli>(launched - start).count();
}

// Runs the timed loop, with the host's mean time per step before the wait (host_ms). The
// process's first run also runs one step inside the NVTX range "profiled_step", for a
// kernel profiler (ncu --nvtx --nvtx-include profiled_step) to time that step's kernels. A
// start/end range, not push/pop: it spans threads, as PyTorch's backward runs on its own.
template <class Optimiser>
void timed_steps(benchmark::State& state, Layer& net, SoftmaxCrossEntropy& loss,
                 Optimiser& optimiser, const Tensor& inputs, const Tensor& labels,
                 const Tensor& one) {
  for (int i = 0; i < 2; ++i) train_step(net, loss, optimiser, inputs, labels, one);
  static bool profiled = false;
  if (!profiled) {
    profiled = true;
    const nvtxRangeId_t range = nvtxRangeStartA("profiled_step");
    train_step(net, loss, optimiser, inputs, labels, one);
    nvtxRangeEnd(range);
  }
  reset_cuda_peak_memory();
  double host_ms = 0.0;
  for (auto _ : state) host_ms += train_step(net, loss, optimiser, inputs, labels, one);
  state.counters["host_ms"] = benchmark::Counter(host_ms, benchmark::Counter::kAvgIterations);
}

void set_counters(benchmark::State& state, Layer& net, const Shape& input, int64_t samples,
                  int64_t loss_flops) {
  const FlopCount f = net.flops(input);
  state.counters["params"] = static_cast<double>(net.parameter_count());
  state.counters["samples_per_s"] = benchmark::Counter(
      static_cast<double>(samples), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tflops_per_s"] = benchmark::Counter(
      static_cast<double>(f.forward_flops + f.backward_flops + loss_flops) * 1e-12,
      benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_memory_bytes"] =
      static_cast<double>(cuda_memory_stats().peak_allocated_bytes);
}

void BM_resnet20_train_step_gpu(benchmark::State& state) {
  const int64_t batch = state.range(0);
  auto net = interplace::bench::make_cifar_resnet(3, 1, 10);
  Rng rng(42);
  net->init_parameters(rng);
  net->to(Device::cuda);
  SoftmaxCrossEntropy loss;
  Sgd sgd(net->parameters(), {.learning_rate = 0.1f, .momentum = 0.9f, .weight_decay = 5e-4f});
  Tensor images({batch, 1, 28, 28});
  Tensor labels({batch});
  for (int64_t i = 0; i < images.numel(); ++i) images.data()[i] = rng.normal(0.0f, 1.0f);
  for (int64_t i = 0; i < batch; ++i) labels.data()[i] = static_cast<float>(i % 10);
  const Tensor gpu_images = images.to(Device::cuda), gpu_labels = labels.to(Device::cuda);
  const Tensor one = Tensor::full({1}, 1.0f, Device::cuda);

  timed_steps(state, *net, loss, sgd, gpu_images, gpu_labels, one);
  const Shape logits_shape{batch, 10};
  set_counters(state, *net, images.shape(), batch,
               loss.flops(std::vector<Shape>{logits_shape, {batch}}).forward_flops +
                   loss.flops(std::vector<Shape>{logits_shape, {batch}}).backward_flops);
}

// GPT step: batch, sequence length, layers, dim as arguments; vocabulary 50257, heads dim/64.
void BM_gpt_train_step_gpu(benchmark::State& state) {
  const int64_t batch = state.range(0), time = state.range(1);
  interplace::bench::GptConfig config;
  config.positions = time;
  config.layers = state.range(2);
  config.dim = state.range(3);
  config.heads = config.dim / 64;
  auto net = interplace::bench::make_gpt(config);
  Rng rng(42);
  net->init_parameters(rng);
  net->to(Device::cuda);
  SoftmaxCrossEntropy loss;
  AdamW adamw(net->parameters(), {.learning_rate = 3e-4f, .weight_decay = 0.01f});
  Tensor ids({batch, time}), targets({batch, time});
  for (int64_t i = 0; i < ids.numel(); ++i) {
    ids.data()[i] = static_cast<float>(rng.next_u64() % static_cast<uint64_t>(config.vocab));
    targets.data()[i] = static_cast<float>(rng.next_u64() % static_cast<uint64_t>(config.vocab));
  }
  const Tensor gpu_ids = ids.to(Device::cuda), gpu_targets = targets.to(Device::cuda);
  const Tensor one = Tensor::full({1}, 1.0f, Device::cuda);

  timed_steps(state, *net, loss, adamw, gpu_ids, gpu_targets, one);
  const std::vector<Shape> loss_shapes = {{batch, time, config.vocab}, {batch, time}};
  const FlopCount loss_flops = loss.flops(loss_shapes);
  set_counters(state, *net, ids.shape(), batch,
               loss_flops.forward_flops + loss_flops.backward_flops);
  state.counters["tokens_per_s"] = benchmark::Counter(
      static_cast<double>(batch * time), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_resnet20_train_step_gpu)
    ->Arg(128)
    ->Arg(512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(20)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

BENCHMARK(BM_gpt_train_step_gpu)
    ->ArgNames({"batch", "time", "layers", "dim"})
    ->Args({8, 256, 4, 512})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(10)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!interplace::bench::start_gpu()) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
