// Forward and backward of each layer on the GPU at the shapes of layer_cases.hpp, with
// achieved TFLOP/s. Each iteration ends by waiting for the GPU, so a time is the layer's
// whole cost: host-side work, launches and kernels. Backward is timed alone: one forward,
// then backward repeatedly on the same context. host_us is the time the host spends in the
// call itself (checks, planning look-ups, launches): where it nears the whole time, the
// layer is bound by the host, not the GPU.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <vector>

#include "gpu_bench.hpp"
#include "interplace/kernels/backend.hpp"
#include "layer_cases.hpp"

namespace {

using namespace interplace::kernels;
using interplace::bench::LayerCase;
using interplace::bench::normal_tensor;

void set_flop_rate(benchmark::State& state, int64_t flops) {
  state.counters["tflops_per_s"] = benchmark::Counter(
      static_cast<double>(flops) * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
}

void run(benchmark::State& state, const LayerCase& c, bool backward) {
  Backend& gpu = backend_for(Device::cuda);
  Rng rng(1);
  auto layer = c.make();
  layer->init_parameters(rng);
  layer->to(Device::cuda);
  std::vector<Tensor> inputs;
  std::vector<Shape> shapes;
  for (const Tensor& t : c.inputs(rng)) {
    inputs.push_back(t.to(Device::cuda));
    shapes.push_back(t.shape());
  }
  Context ctx;
  const Tensor y = layer->forward(inputs, ctx);  // plans (cudnnFind) outside the timed loop
  const Tensor dy = normal_tensor(y.shape(), rng).to(Device::cuda);
  if (backward) layer->backward(dy, ctx);
  gpu.synchronize();
  double host_us = 0.0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    if (backward) {
      layer->backward(dy, ctx);
    } else {
      layer->forward(inputs, ctx);
    }
    host_us +=
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    gpu.synchronize();
  }
  const FlopCount flops = layer->flops(shapes);
  set_flop_rate(state, backward ? flops.backward_flops : flops.forward_flops);
  state.counters["host_us"] = benchmark::Counter(host_us, benchmark::Counter::kAvgIterations);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!interplace::bench::start_gpu()) return 1;
  for (const LayerCase& c : interplace::bench::layer_cases()) {
    for (const bool backward : {false, true}) {
      const std::string name = (backward ? "backward/" : "forward/") + c.name;
      benchmark::RegisterBenchmark(name.c_str(), run, c, backward)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
