// interplace profile's calibration run: the real runtime on one rank (interplace/runs/
// profiling.hpp, time_runtime_units).
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/median.hpp"
#include "interplace/runs/profiling.hpp"
#include "interplace/runs/training.hpp"

namespace interplace::runs {

RuntimeUnits time_runtime_units(const RuntimeUnitOptions& options) {
  if (options.steps < 1) throw_invalid("runtime units: steps must be >= 1");
  TrainConfig config;
  config.model = options.model;
  config.model_options = options.options;
  config.batch_size = options.options.batch_size;
  config.micro_batches = 1;
  config.devices = 1;
  config.warmup_steps = options.warmup;
  config.steps = options.steps;
  config.dataset = "synthetic";
  config.seed = options.seed;
  config.device = options.device == kernels::Device::cuda ? "cuda" : "cpu";
  config.threads_per_rank = options.threads;
  const TrainPlan plan = plan_training(config);
  const TrainResult result = train(plan, MPI_COMM_SELF);
  std::vector<double> forward, backward, optimizer;
  for (const StepRecord& step : result.steps) {
    if (step.warmup || step.ranks.empty()) continue;
    forward.push_back(step.ranks[0].forward_s);
    backward.push_back(step.ranks[0].backward_s);
    optimizer.push_back(step.ranks[0].optimizer_s);
  }
  if (forward.empty()) throw_runtime("runtime units: no measured step");
  double total_s = 0.0;
  for (size_t i = 0; i < forward.size(); ++i) total_s += forward[i] + backward[i];
  return {kernels::median(forward), kernels::median(backward), kernels::median(optimizer),
          total_s / static_cast<double>(forward.size())};
}

}  // namespace interplace::runs
