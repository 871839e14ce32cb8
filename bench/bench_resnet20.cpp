// One full training step of resnet20 (batch 128, 1x28x28, 10 classes, SGD with momentum):
// forward, loss, backward, optimiser. Threads come from OMP_NUM_THREADS, one count per
// process (bench/run runs it at 1 and 2), so oneDNN's plans match the thread count.
#include <benchmark/benchmark.h>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layers/loss.hpp"
#include "interplace/kernels/optimizer.hpp"
#include "resnet_model.hpp"

namespace {

using namespace interplace::kernels;

void BM_resnet20_train_step(benchmark::State& state) {
  const int64_t batch = state.range(0);
  auto net = interplace::bench::make_cifar_resnet(3, 1, 10);
  Rng rng(42);
  net->init_parameters(rng);
  SoftmaxCrossEntropy loss;
  Sgd sgd(net->parameters(), {.learning_rate = 0.1f, .momentum = 0.9f, .weight_decay = 5e-4f});

  Tensor images({batch, 1, 28, 28});
  Tensor labels({batch});
  for (int64_t i = 0; i < images.numel(); ++i) images.data()[i] = rng.normal(0.0f, 1.0f);
  for (int64_t i = 0; i < batch; ++i) labels.data()[i] = static_cast<float>(i % 10);

  const auto step = [&] {
    Context net_ctx, loss_ctx;
    const Tensor logits = net->forward(images, net_ctx);
    const Tensor inputs[] = {logits, labels};
    loss.forward(inputs, loss_ctx);
    sgd.zero_grad();
    const Tensor dlogits = loss.backward(Tensor::full({1}, 1.0f), loss_ctx)[0];
    net->backward(dlogits, net_ctx);
    sgd.step();
  };
  for (int i = 0; i < 2; ++i) step();  // plans created, caches warm
  for (auto _ : state) step();

  const FlopCount f = net->flops(images.shape());
  state.counters["threads"] = cpu_threads();
  state.counters["params"] = static_cast<double>(net->parameter_count());
  state.counters["samples_per_s"] =
      benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["gflops_per_s"] =
      benchmark::Counter(static_cast<double>(f.forward_flops + f.backward_flops) * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_resnet20_train_step)
    ->Arg(128)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(5)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
