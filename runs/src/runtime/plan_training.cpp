// plan_training: everything decided before any rank trains (training.hpp). No MPI: every
// rank computes the same plan from the same configuration.
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/profile.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/placement/stage_chain.hpp"
#include "interplace/runs/datasets.hpp"
#include "interplace/runs/device_presets.hpp"
#include "interplace/runs/devices.hpp"
#include "interplace/runs/name_choices.hpp"
#include "interplace/runs/training.hpp"
#include "runtime/plan_support.hpp"

namespace interplace::runs {
namespace {

const placement::ModelInfo& catalog_entry(const std::string& model) {
  std::vector<std::string> names;
  for (const placement::ModelInfo& info : placement::model_catalog()) {
    if (info.name == model) return info;
    names.push_back(info.name);
  }
  throw_invalid("unknown model '" + model + "' (valid: " + join_names(names) + ")");
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

std::string gib(double bytes) {
  std::ostringstream out;
  out.precision(3);
  out << bytes / (1024.0 * 1024.0 * 1024.0);
  return out.str();
}

void validate_scalars(const TrainConfig& c) {
  if (c.devices < 1) throw_invalid("devices must be >= 1, got " + std::to_string(c.devices));
  if (c.batch_size < 1) {
    throw_invalid("batch_size must be >= 1, got " + std::to_string(c.batch_size));
  }
  micro_batch_size(c.batch_size, c.micro_batches);  // the one rule every subcommand uses
  if (c.steps < 1) throw_invalid("steps must be >= 1, got " + std::to_string(c.steps));
  if (c.warmup_steps < 0) {
    throw_invalid("warmup_steps must be >= 0, got " + std::to_string(c.warmup_steps));
  }
  if (c.eval_samples < 0) {
    throw_invalid("eval_samples must be >= 0, got " + std::to_string(c.eval_samples));
  }
  if (!(c.learning_rate > 0.0) || !std::isfinite(c.learning_rate)) {
    throw_invalid("learning_rate must be a finite number > 0");
  }
  if (!(c.weight_decay >= 0.0) || !std::isfinite(c.weight_decay)) {
    throw_invalid("weight_decay must be a finite number >= 0");
  }
  check_thread_count("threads_per_rank", c.threads_per_rank);
  if (!(c.watchdog_s > 0.0) || !std::isfinite(c.watchdog_s)) {
    throw_invalid("watchdog_s must be a finite number of seconds > 0");
  }
}

}  // namespace

placement::CostModel training_cost_model(const TrainConfig& c) {
  const DevicePreset& preset = device_preset_by_name(c.cost_device);
  const placement::OptimizerKind optimizer = c.optimizer;
  if (c.profile_path.empty()) return placement::CostModel(preset.device, preset.link, optimizer);
  placement::DeviceSpec device = preset.device;
  device.name.clear();  // the profile names the device it was measured on
  return placement::CostModel::from_profile(placement::read_profile_file(c.profile_path), device,
                                            optimizer);
}

TrainPlan plan_training(const TrainConfig& given) {
  TrainConfig config = given;
  resolve_epochs(config);  // steps from epochs; the recipe's epoch units checked
  validate_scalars(config);
  const placement::ModelInfo& info = catalog_entry(config.model);
  placement::order_by_name(config.order);
  placement::placer_by_name(config.placer);
  const int reach = placement::strategy_reach(config.strategy, config.devices);
  require_name("pipeline", config.pipeline, train_pipeline_names());
  require_name("interlock mode", config.interlock_mode, {"single", "sum"});
  require_name("dataset", config.dataset, dataset_names());
  placement::to_string(config.optimizer);  // rejects values outside the enum
  require_device_support(device_by_name(config.device));
  // The pipeline only chooses the global schedule; local and interlocking ignore it.
  const bool global = reach == config.devices - 1;

  TrainPlan plan;
  plan.config = config;
  plan.family = info.family;
  plan.reach = reach;
  placement::ModelOptions options = config.model_options;
  // The graph is one micro-batch: the unit of the schedules, the cost model and profiles.
  options.batch_size = micro_batch_size(config.batch_size, config.micro_batches);
  plan.graph = placement::build_model(config.model, options);
  require_trainable_graph(plan.graph);
  check_dataset_fits(config.dataset, sample_shape(plan.graph));
  check_augmentation(config.augmentation, sample_shape(plan.graph));
  plan.parameter_count = plan.graph.total_parameter_count();

  const placement::CostModel cost_model = training_cost_model(config);
  const placement::NodeCosts costs = cost_model.node_costs(plan.graph);
  placement::OrderOptions order_options;
  order_options.seed = config.seed;
  order_options.node_cost.resize(static_cast<size_t>(plan.graph.node_count()));
  for (placement::NodeId id = 0; id < plan.graph.node_count(); ++id) {
    order_options.node_cost[static_cast<size_t>(id)] = costs.compute_s(id);
  }
  plan.order =
      placement::compute_order(plan.graph, placement::order_by_name(config.order), order_options);
  placement::PlacementRequest request{.device_count = config.devices, .cost_model = cost_model};
  request.micro_batches = config.micro_batches;
  request.seed = config.seed;
  plan.placement = placement::placer_by_name(config.placer)(plan.graph, plan.order, request);

  if (auto why = placement::local_strategy_ineligibility(plan.graph, plan.placement)) {
    plan.global_only_reason = *why;
  }
  if (!global && !plan.global_only_reason.empty()) {
    throw_invalid("strategy '" + config.strategy +
                  "' cannot run on this placement: " + plan.global_only_reason);
  }
  if (global && config.interlock_mode == "sum" && config.devices > 1) {
    throw_invalid("interlock mode 'sum' is for the local and interlocking strategies, not global");
  }

  StepRequest step;
  step.strategy = config.strategy;
  if (global) step.pipeline = config_pipeline(config);
  step.micro_batches = config.micro_batches;
  step.interlock = placement::interlock_mode_by_name(config.interlock_mode);
  step.aux_heads = config_aux_heads(config);
  plan.prediction = simulate_step(plan.graph, plan.placement, costs, cost_model, step);

  std::vector<double> node_cost(order_options.node_cost);
  plan.graph_stats = placement::compute_graph_stats(plan.graph, node_cost);

  int64_t needed = 0;
  for (const DeviceStep& d : plan.prediction.devices)
    needed = std::max(needed, d.peak_memory_bytes);
  // Decided from the graph's shapes: no weight exists yet (the zoo builds shapes only).
  const int64_t available = memory_per_rank_bytes(config.devices);
  if (available > 0 && needed > available) {
    throw_invalid("configuration does not fit in memory: needs " +
                  gib(static_cast<double>(needed)) + " GiB per rank, " +
                  gib(static_cast<double>(available)) +
                  " GiB available (MemAvailable / ranks, and ulimit -v). HINT: a smaller "
                  "batch size or multiplier, more micro-batches, or more ranks");
  }
  return plan;
}

}  // namespace interplace::runs
