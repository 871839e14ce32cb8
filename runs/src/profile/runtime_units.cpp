// interplace profile's calibration run: the real runtime on one rank (interplace/runs/
// profiling.hpp, time_runtime_units).
#include <algorithm>
#include <cmath>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/median.hpp"
#include "interplace/runs/profiling.hpp"
#include "interplace/runs/training.hpp"

namespace interplace::runs {

int runtime_unit_steps(double step_s, int at_least) {
  constexpr double kMeasuredSeconds = 1.0;
  constexpr int kMaxSteps = 2000;
  if (!(step_s > 0.0) || !std::isfinite(step_s)) return std::max(at_least, 1);
  return std::clamp(static_cast<int>(std::ceil(kMeasuredSeconds / step_s)), std::max(at_least, 1),
                    std::max(kMaxSteps, at_least));
}

RuntimeUnits time_runtime_units(const RuntimeUnitOptions& options) {
  if (options.steps < 1) throw_invalid("runtime units: steps must be >= 1");
  if (options.micro_batches < 1) throw_invalid("runtime units: micro_batches must be >= 1");
  TrainConfig config;
  config.model = options.model;
  config.graph_file = options.graph_file;
  config.model_options = options.options;
  config.batch_size = options.options.batch_size * options.micro_batches;
  config.micro_batches = options.micro_batches;
  config.devices = 1;
  config.warmup_steps = options.warmup;
  config.steps = options.steps;
  config.dataset = DatasetKind::synthetic;
  config.seed = options.seed;
  config.device = options.device;
  config.threads_per_rank = options.threads;
  config.cost_device = options.cost_device;
  TrainPlan plan = plan_config(config);
  plan.record_node_times = options.node_times;
  const TrainResult result = train(plan, MPI_COMM_SELF);
  std::vector<double> forward, backward, optimizer, overhead;
  for (const StepRecord& step : result.steps) {
    if (step.warmup || step.ranks.empty()) continue;
    const RankStepRecord& r = step.ranks[0];
    // One rank waits for nothing: the step is its units and the rest (the overhead).
    const double f = options.cpu_time ? r.forward_cpu_s : r.forward_s;
    const double b = options.cpu_time ? r.backward_cpu_s : r.backward_s;
    const double o = options.cpu_time ? r.optimizer_cpu_s : r.optimizer_s;
    const double a = options.cpu_time ? r.aux_cpu_s : r.aux_s;
    const double whole = options.cpu_time ? r.step_cpu_s : r.step_s;
    forward.push_back(f);
    backward.push_back(b);
    optimizer.push_back(o);
    overhead.push_back(std::max(0.0, whole - f - b - o - a));
  }
  if (forward.empty()) throw_runtime("runtime units: no measured step");
  double total_s = 0.0;
  for (size_t i = 0; i < forward.size(); ++i) total_s += forward[i] + backward[i];
  RuntimeUnits units{.forward_s = kernels::median(forward),
                     .backward_s = kernels::median(backward),
                     .optimizer_s = kernels::median(optimizer),
                     .overhead_s = kernels::median(overhead),
                     .mean_compute_s = total_s / static_cast<double>(forward.size())};
  if (result.node_times.empty()) return units;
  const auto n = static_cast<size_t>(plan.graph.node_count());
  units.node_forward_s.assign(n, 0.0);
  units.node_backward_s.assign(n, 0.0);
  std::vector<double> f(result.node_times.size()), b(result.node_times.size());
  for (size_t node = 0; node < n; ++node) {
    for (size_t step = 0; step < result.node_times.size(); ++step) {
      const NodeStepTimes& t = result.node_times[step];
      f[step] = (options.cpu_time ? t.forward_cpu_s : t.forward_s)[node];
      b[step] = (options.cpu_time ? t.backward_cpu_s : t.backward_s)[node];
    }
    units.node_forward_s[node] = kernels::median(f);
    units.node_backward_s[node] = kernels::median(b);
  }
  return units;
}

}  // namespace interplace::runs
