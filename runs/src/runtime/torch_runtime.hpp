// The PyTorch runtime (runtime = "torch"; docs/runtime.md, "The PyTorch runtime"): every
// rank of the configuration starts one PyTorch process that runs the rank's stages of the
// imported module itself, executing the torch plan's action lists with point-to-point
// messages through torch.distributed (gloo); the rank reads its step records back and they
// are gathered as the C++ runtime's are, into the same TrainResult.
#pragma once

#include <mpi.h>

#include "interplace/placement/graph.hpp"
#include "interplace/runs/training.hpp"

namespace interplace::runs {

// Planning's check of a runtime-torch configuration: what the PyTorch runtime runs (a
// graph file, synthetic data, the global strategy, one replica, the CPU, no evaluation).
// Throws invalid_input with a HINT otherwise.
void check_torch_runtime_config(const TrainConfig& config, const placement::Graph& graph);

// Collective over `comm` (plan.config.devices ranks). Throws invalid_input for what the
// PyTorch side refuses (its message, exit 2), Diverged for a non-finite loss, runtime
// errors otherwise; every rank throws the first failing rank's message.
TrainResult train_torch(const TrainPlan& plan, MPI_Comm comm, const StepCallback& on_step);

// cost_device = "profile:auto" for runtime torch: the torch runtime's own node times
// (interplace_importers.torch_profile, on rank 0 while the others wait idle), as profile
// text on rank 0 and "" on the others (auto_profile.hpp's contract). Collective over comm.
std::string measure_torch_profile(const TrainConfig& config, int threads, MPI_Comm comm);

}  // namespace interplace::runs
