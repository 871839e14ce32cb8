// Forward and backward of each layer on the CPU at the shapes of layer_cases.hpp, with
// achieved GFLOP/s.
// Backward is timed alone: one forward, then backward repeatedly on the same context.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "interplace/kernels/backend.hpp"
#include "layer_cases.hpp"

namespace {

using namespace interplace::kernels;
using interplace::bench::LayerCase;
using interplace::bench::normal_tensor;

void set_flop_rate(benchmark::State& state, int64_t flops) {
  state.counters["gflops_per_s"] = benchmark::Counter(
      static_cast<double>(flops) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = cpu_threads();
}

void run_forward(benchmark::State& state, const LayerCase& c) {
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

// `which`: the full backward, or the pass interlocking backpropagation runs through a stage
// it does not train (input gradients only); their ratio is the saving of such a pass.
void run_backward(benchmark::State& state, const LayerCase& c, Gradients which) {
  Rng rng(1);
  auto layer = c.make();
  layer->init_parameters(rng);
  const std::vector<Tensor> inputs = c.inputs(rng);
  Context ctx;
  const Tensor y = layer->forward(inputs, ctx);
  const Tensor dy = normal_tensor(y.shape(), rng);
  layer->backward(dy, ctx, which);
  for (auto _ : state) benchmark::DoNotOptimize(layer->backward(dy, ctx, which).data());
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  const FlopCount flops = layer->flops(shapes);
  set_flop_rate(state, which == Gradients::inputs_only
                           ? flops.backward_flops - flops.parameter_grad_flops
                           : flops.backward_flops);
}

}  // namespace

int main(int argc, char** argv) {
  for (const LayerCase& c : interplace::bench::layer_cases()) {
    benchmark::RegisterBenchmark(("forward/" + c.name).c_str(), run_forward, c)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("backward/" + c.name).c_str(), run_backward, c,
                                 Gradients::inputs_and_parameters)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("backward-inputs/" + c.name).c_str(), run_backward, c,
                                 Gradients::inputs_only)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
