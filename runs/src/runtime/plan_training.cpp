// plan_training: everything decided before any rank trains (training.hpp). No MPI: every
// rank computes the same plan from the same configuration.
#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <string>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/device_presets.hpp"
#include "interplace/placement/graph_file.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placement_file.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/placing.hpp"
#include "interplace/placement/profile.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/placement/stage_chain.hpp"
#include "interplace/placement/step_estimate.hpp"
#include "interplace/runs/datasets.hpp"
#include "interplace/runs/devices.hpp"
#include "interplace/runs/mpi_session.hpp"
#include "interplace/runs/training.hpp"
#include "runtime/plan_support.hpp"
#include "runtime/torch_runtime.hpp"

namespace interplace::runs {
namespace {

const placement::ModelInfo& catalog_entry(const std::string& model) {
  return placement::find_model(model);  // "enas-cnn:7" included
}

// What one rank may use: MemAvailable of /proc/meminfo divided among the job's ranks,
// and no more than the address space left under this process's own limit (ulimit -v,
// RLIMIT_AS: a stated cap, e.g. on a shared login node). 0 when nothing can be read
// (then nothing is checked).
int64_t memory_per_rank_bytes(int devices) {
  int64_t available = 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") available = kib * 1024 / std::max(1, devices);
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    int64_t used = 0;  // VmSize: the address space this process holds already
    std::ifstream status("/proc/self/status");
    while (status >> key) {
      if (key == "VmSize:") {
        status >> used;
        used *= 1024;
        break;
      }
      status.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    const int64_t left = std::max<int64_t>(0, static_cast<int64_t>(limit.rlim_cur) - used);
    available = available > 0 ? std::min(available, left) : left;
  }
  return available;
}

// Beyond each key's own check (check_scalar_fields, by resolve_epochs): the rules that
// combine keys or bound them by the machine.
void validate_scalars(const TrainConfig& c) {
  // The one rule every subcommand uses (the replicas' slices, then micro-batches).
  c.micro_batch_samples();
  check_thread_count("threads_per_rank", c.threads_per_rank);
}

}  // namespace

placement::CostModel training_cost_model(const TrainConfig& c) {
  const placement::DevicePreset& preset = placement::device_preset_by_name(c.cost_device);
  const placement::OptimizerKind optimizer = c.optimizer;
  if (c.profile_path.empty()) return placement::CostModel(preset.device, preset.link, optimizer);
  placement::DeviceSpec device = preset.device;
  device.name.clear();  // the profile names the device it was measured on
  if (c.profile_path == kAutoProfile && !c.measured_profile) {
    throw_invalid(
        "cost_device profile:auto: no profile was measured for this configuration (a sweep or "
        "train measures it in its job, before planning). HINT: run it with interplace sweep "
        "or train, or name a profile file: profile:PATH");
  }
  placement::CostModel model = placement::CostModel::from_profile(
      c.profile_path == kAutoProfile ? *c.measured_profile
                                     : placement::read_profile_file(c.profile_path),
      device, optimizer);
  // The run's ranks share hosts as MPI placed them (consecutive ranks on one host); the
  // profile's host_sharing then slows down ranks that compute at once on one host. A
  // simulate-only configuration runs on no ranks of this job: its K devices share one host
  // as in `simulate` (the cost model's default).
  if (world_node_local_recorded() && !c.simulate_only) {
    model.set_ranks_per_host(std::min(c.devices, world_node_local().size));
  }
  return model;
}

void parse_choices(TrainPlan& plan) {
  const TrainConfig& c = plan.config;
  plan.strategy = c.strategy;
  plan.reach = placement::strategy_reach(plan.strategy, c.devices);
  const bool global = plan.reach == c.devices - 1;
  plan.interlock = c.interlock_mode.kind();
  plan.device = c.device.kind();
  placement::to_string(c.optimizer);  // rejects values outside the enum
  if (global && plan.interlock == placement::InterlockMode::sum && c.devices > 1) {
    throw_invalid("interlock mode 'sum' is for the local and interlocking strategies, not global");
  }
  // e2e: one unpipelined pass (M = 1), scheduled as GPipe; refused with M > 1. The rest of
  // the pipeline's rules are the registry's (placement::plan_pipeline).
  const placement::PipelineKind kind = global ? config_pipeline(c) : c.pipeline.scheduled();
  plan.pipeline =
      placement::plan_pipeline({.pipeline = kind,
                                .reach = plan.reach,
                                .strategy = to_string(c.strategy),
                                .devices = c.devices,
                                .virtual_stages = c.virtual_stages,
                                .micro_batches = c.micro_batches,
                                .interlock_sum = plan.interlock == placement::InterlockMode::sum});
}

void plan_schedule(TrainPlan& plan, const placement::CostModel& cost_model) {
  const TrainConfig& c = plan.config;
  const int chunks = plan.pipeline.virtual_stages;
  if (chunks == 1) {
    plan.stage_placement = plan.placement;
  } else if (plan.stage_placement.device_count != plan.pipeline.stages()) {
    throw_invalid("pipeline '" + placement::to_string(plan.pipeline.kind) + "' with " +
                  std::to_string(chunks) + " virtual stages needs a placement of " +
                  std::to_string(plan.pipeline.stages()) + " stages, got " +
                  std::to_string(plan.stage_placement.device_count));
  }
  plan.global_only_reason =
      placement::local_strategy_ineligibility(plan.graph, plan.placement).value_or("");
  plan.schedule = placement::plan_step_schedule(
      plan.graph, plan.stage_placement, cost_model.node_costs(plan.graph), cost_model,
      {.strategy = plan.strategy,
       .pipeline = plan.pipeline.kind,
       .stage_count = c.devices,
       .virtual_stages = chunks,
       .micro_batches = c.micro_batches,
       .mini_batches = 1,  // one training step; the runtime repeats it
       .interlock = plan.interlock});
}

PlanInputs check_plan_inputs(const TrainConfig& given) {
  TrainConfig config = given;
  resolve_epochs(config);  // steps from epochs; the recipe's epoch units checked
  validate_scalars(config);
  if (config.graph_file.empty()) catalog_entry(config.model);  // an unknown model, named first

  TrainPlan plan;
  plan.config = config;
  parse_choices(plan);
  require_device_support(plan.device);
  if (!config.graph_file.empty() && config.graph_digest.empty()) resolve_graph_file(plan.config);
  plan.graph = build_config_graph(plan.config, &plan.family);
  if (!config.simulate_only) {
    // A graph file's nodes without a kernel layer: simulate and simulate-only sweeps take
    // them, the runtime cannot build them.
    // PyTorch runs every op of the module (the torch runtime).
    if (const std::string opaque = placement::opaque_summary(plan.graph);
        !opaque.empty() && config.runtime == RuntimeKind::native) {
      throw_invalid("cannot train graph '" + plan.graph.name() + "': " + opaque +
                    ". HINT: simulate, place and simulate-only sweeps (simulate_only = 1) take "
                    "it as it is; to train it, replace those ops by ones the kernel library "
                    "has (docs/your-network.md), or train it in PyTorch: runtime = \"torch\"");
    }
    if (config.runtime == RuntimeKind::torch) check_torch_runtime_config(plan.config, plan.graph);
    require_trainable_graph(plan.graph);
    check_dataset_fits(to_string(config.dataset), sample_shape(plan.graph));
    check_augmentation(config.augmentation, sample_shape(plan.graph));
  }
  plan.parameter_count = plan.graph.total_parameter_count();

  PlanInputs inputs{.plan = std::move(plan),
                    .cost_model = training_cost_model(config),
                    .placement_file = std::nullopt,
                    .memory = {}};
  if (!config.placement_path.empty()) {
    // V virtual stages: a placement file of K*V stages, each on the device of the
    // pipeline's stage map.
    const int stage_count = inputs.plan.pipeline.stages();
    placement::Placement file =
        placement::read_placement_file(config.placement_path, inputs.plan.graph);
    if (file.device_count != stage_count) {
      throw_invalid(
          "the placement file " + config.placement_path + " places on " +
          std::to_string(file.device_count) + " devices, the run has " +
          std::to_string(stage_count) +
          (inputs.plan.pipeline.virtual_stages > 1 ? " stages (devices x virtual stages)" : ""));
    }
    inputs.placement_file = std::move(file);
  }
  if (config.simulate_only) return inputs;  // nothing is allocated
  // Weights and activations live on the GPU, not in the host's memory: checked against the
  // cost model's device, as the placers count it (planning needs no GPU: a dry run on a
  // login node plans the cluster's job).
  if (inputs.plan.device == kernels::Device::cuda) {
    const placement::DeviceSpec& gpu = inputs.cost_model.device();
    inputs.memory = {.bytes = gpu.memory_capacity_bytes,
                     .memory = "GPU memory",
                     .unit = "GPU",
                     .source = "the cost model's device '" + gpu.name + "'",
                     .hint =
                         "a smaller batch size or multiplier, more micro-batches, or more "
                         "devices; cost_device names the GPU (h100, h200)"};
  } else {
    inputs.memory = {.bytes = memory_per_rank_bytes(config.ranks()),
                     .memory = "memory",
                     .unit = "rank",
                     .source = "MemAvailable / ranks, and ulimit -v",
                     .hint =
                         "a smaller batch size or multiplier, more micro-batches, or more "
                         "ranks"};
  }
  return inputs;
}

TrainPlan plan_training(PlanInputs inputs) {
  TrainPlan plan = std::move(inputs.plan);
  const TrainConfig& config = plan.config;
  const placement::CostModel& cost_model = inputs.cost_model;
  placement::OrderedGraph ordered =
      placement::order_graph(plan.graph, cost_model, config.order.kind(), config.seed);
  // V virtual stages: the placer cuts K*V stages, each on the device of the pipeline's
  // stage map.
  if (inputs.placement_file) {
    plan.stage_placement = std::move(*inputs.placement_file);
  } else {
    placement::PlacementRequest request{.device_count = plan.pipeline.stages(),
                                        .cost_model = cost_model};
    request.micro_batches = config.micro_batches;
    // What the pipeline keeps at once (1F1B: at most K), as the simulator's peaks count
    // it; with virtual stages charged to each of a device's V stages (pipelines.hpp).
    request.kept_micro_batches = plan.pipeline.kept_micro_batches;
    request.seed = config.seed;
    request.rl = placement::rl_preset_options(config.rl_preset);
    if (config.placer == placement::PlacerKind::rl) request.rl_log = &plan.rl_log.emplace();
    plan.stage_placement = placement::run_placer(plan.graph, ordered, config.placer.kind(),
                                                 std::move(request), &plan.placer_wall_s);
  }
  plan.order = std::move(ordered.order);
  plan.placement = plan.pipeline.virtual_stages > 1
                       ? placement::interleaved_devices(plan.stage_placement,
                                                        plan.pipeline.stage_map, config.devices)
                       : plan.stage_placement;

  plan_schedule(plan, cost_model);
  // The split points and action lists PyTorch runs (refused here unless every cut is a
  // module boundary).
  if (config.runtime == RuntimeKind::torch && !config.simulate_only) {
    plan.torch_plan = placement::torch_plan(plan.graph, plan.stage_placement, plan.schedule);
  }
  // The prediction simulates the schedule the ranks execute.
  plan.prediction =
      placement::simulate_schedule(plan.graph, plan.stage_placement, ordered.costs, cost_model,
                                   plan.schedule, config_aux_heads(config), config.data_parallel);
  plan.graph_stats = placement::compute_graph_stats(plan.graph, ordered.node_seconds);
  // Decided from the graph's shapes: no weight exists yet (the zoo builds shapes only).
  placement::require_memory_fits(plan.prediction, inputs.memory);
  return plan;
}

TrainPlan plan_config(const TrainConfig& config) {
  return plan_training(check_plan_inputs(config));
}

std::vector<placement::NodeId> config_node_order(const TrainConfig& given) {
  TrainConfig config = given;
  if (!config.graph_file.empty() && config.graph_digest.empty()) resolve_graph_file(config);
  const placement::Graph graph = build_config_graph(config);
  return placement::order_graph(graph, training_cost_model(config), config.order.kind(),
                                config.seed)
      .order;
}

}  // namespace interplace::runs
