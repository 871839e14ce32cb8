// Helpers of the MPI runtime tests.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "interplace/placement/schedule.hpp"
#include "interplace/placement/stage_chain.hpp"
#include "interplace/runs/training.hpp"

namespace interplace::runs::testing {

inline int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}
inline int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// Small models that train in well under a second per step on one core.
inline TrainConfig small_resnet() {
  TrainConfig c;
  c.model = "resnet20";
  c.model_options.width_multiplier = 0.5;
  c.model_options.image_size = 16;
  c.batch_size = 8;
  c.warmup_steps = 0;
  c.steps = 20;
  c.threads_per_rank = 1;
  return c;
}
inline TrainConfig small_gpt() {
  TrainConfig c;
  c.model = "gpt-mini";
  c.model_options.layers = 2;
  c.model_options.dim = 32;
  c.model_options.heads = 2;
  c.model_options.sequence_length = 16;
  c.batch_size = 8;
  c.warmup_steps = 0;
  c.steps = 20;
  c.optimizer = placement::OptimizerKind::adamw;
  c.learning_rate = 1e-3;
  c.threads_per_rank = 1;
  return c;
}

// train(plan) on the world's first devices x data_parallel ranks: R replicas of the plan's
// K-stage pipeline (data parallelism, world rank = replica * K + stage).
inline TrainResult train_plan_on(const TrainPlan& plan) {
  const int rank = world_rank();
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < plan.config.ranks() ? 0 : MPI_UNDEFINED, rank, &comm);
  TrainResult result;
  if (comm != MPI_COMM_NULL) {
    try {
      result = train(plan, comm);
    } catch (...) {
      MPI_Comm_free(&comm);
      throw;
    }
    MPI_Comm_free(&comm);
  }
  return result;
}

// The run of `config` on a communicator of its own `devices` ranks drawn from the world
// (ranks 0 .. devices-1); other ranks get an empty result. Collective over the world.
inline TrainResult train_on(TrainConfig config, int devices) {
  config.devices = devices;
  return train_plan_on(plan_config(config));
}

// The plan of `config` (its strategy on `devices` stages) on a contiguous split of the id
// order at the single-tensor cuts nearest to equal node counts: a placement every
// strategy can run, whatever the cost-model placer would choose. With virtual stages
// the split makes devices x virtual_stages stages, each on the device of the pipeline's
// stage map (loop: s mod devices).
inline TrainPlan chain_plan(TrainConfig config, int devices) {
  const placement::Strategy strategy = config.strategy;
  const InterlockChoice mode = config.interlock_mode;
  const TrainPipeline pipeline = config.pipeline;
  const int virtual_stages = config.virtual_stages;
  config.strategy = "global";
  config.interlock_mode = "single";
  config.devices = devices;
  // Planned on K stages (the placer's interleaved stages may skip one); split below.
  const bool interleaved = !pipeline.end_to_end() &&
                           placement::pipeline_info(*pipeline.pipeline()).takes_virtual_stages &&
                           virtual_stages > 1;
  if (interleaved) {
    config.pipeline = "1f1b";
    config.virtual_stages = 1;
  }
  TrainPlan plan = plan_config(config);
  const placement::Graph& g = plan.graph;
  const int n = g.node_count();
  std::vector<int> cuts;  // cut after node i: one producer feeds everything above i
  for (int i = 0; i + 1 < n; ++i) {
    int producer = -1;
    bool single = true;
    for (int j = 0; j <= i && single; ++j) {
      for (placement::NodeId s : g.node(j).successors) {
        if (s <= i) continue;
        single = single && (producer < 0 || producer == j);
        producer = j;
      }
    }
    if (single) cuts.push_back(i);
  }
  const int stages = devices * (interleaved ? virtual_stages : 1);
  std::vector<int> chosen;
  for (int k = 1; k < stages; ++k) {
    int best = cuts.front();
    for (int c : cuts) {
      if (std::abs(c - k * n / stages) < std::abs(best - k * n / stages)) best = c;
    }
    chosen.push_back(best);
  }
  placement::Placement split;
  split.device_count = stages;
  split.device_of_node.assign(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    int d = 0;
    while (d < stages - 1 && i > chosen[static_cast<size_t>(d)]) ++d;
    split.device_of_node[static_cast<size_t>(i)] = d;
  }
  plan.stage_placement = split;
  plan.placement =
      stages > devices
          ? placement::interleaved_devices(
                split, placement::pipeline_info(*pipeline.pipeline()).stage_map, devices)
          : split;
  plan.config.strategy = strategy;
  plan.config.interlock_mode = mode;
  plan.config.pipeline = pipeline;
  plan.config.virtual_stages = virtual_stages;
  parse_choices(plan);
  plan_schedule(plan, training_cost_model(plan.config));
  return plan;
}

inline std::vector<double> losses(const TrainResult& result) {
  std::vector<double> out;
  for (const StepRecord& s : result.steps) out.push_back(s.loss);
  return out;
}

// On rank 0: the runs' losses agree step by step within relative + absolute tolerance.
// Steps before `strict_steps` within relative * |b| + absolute, later ones within
// trajectory_relative * |b| (all of them strict by default).
inline void expect_losses_near(const TrainResult& a, const TrainResult& b, double relative,
                               double absolute, const std::string& what,
                               size_t strict_steps = SIZE_MAX, double trajectory_relative = 0.0) {
  if (world_rank() != 0) return;
  const std::vector<double> x = losses(a), y = losses(b);
  ASSERT_EQ(x.size(), y.size()) << what;
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_TRUE(std::isfinite(x[i])) << what << " step " << i;
    const double bound = i < strict_steps ? relative * std::abs(y[i]) + absolute
                                          : trajectory_relative * std::abs(y[i]);
    EXPECT_NEAR(x[i], y[i], bound)
        << what << " step " << i << (i < strict_steps ? "" : " (trajectory tolerance)");
  }
}

}  // namespace interplace::runs::testing
