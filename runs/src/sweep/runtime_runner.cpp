// Kept apart from the driver so that tests which inject their own runner link without the
// runtime.
#include "interplace/runs/auto_profile.hpp"
#include "interplace/runs/sweep.hpp"

namespace interplace::runs {

SweepRunner runtime_runner() {
  return {[](const TrainConfig& config) { return plan_config(config); },
          [](const TrainPlan& plan, MPI_Comm comm) { return train(plan, comm); },
          [](const TrainConfig& config, int threads, MPI_Comm comm) {
            const MeasuredProfile measured =
                measure_profile(auto_profile_request(config, threads), comm);
            int rank = 0;
            MPI_Comm_rank(comm, &rank);
            if (rank != 0) return std::string();  // complete on rank 0 only
            return profile_file_text(measured, "measured by interplace sweep for " + config.model +
                                                   " (cost_device profile:auto)");
          }};
}

}  // namespace interplace::runs
