// Kept apart from the driver so that tests which inject their own runner link without the
// runtime.
#include "interplace/runs/sweep.hpp"

namespace interplace::runs {

SweepRunner runtime_runner() {
  return {[](const TrainConfig& config) { return plan_training(config); },
          [](const TrainPlan& plan, MPI_Comm comm) { return train(plan, comm); }};
}

}  // namespace interplace::runs
