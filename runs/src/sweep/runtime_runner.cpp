// Kept apart from the driver so that tests which inject their own runner link without the
// runtime.
#include "interplace/runs/auto_profile.hpp"
#include "interplace/runs/sweep.hpp"

namespace interplace::runs {

SweepRunner runtime_runner() {
  return {[](const TrainConfig& config) { return plan_config(config); },
          [](const TrainPlan& plan, MPI_Comm comm) { return train(plan, comm); },
          [](const TrainConfig& config, int threads, MPI_Comm comm) {
            return measure_auto_profile(
                config, threads, comm,
                "measured by interplace sweep for " + config.model + " (cost_device profile:auto)");
          }};
}

}  // namespace interplace::runs
