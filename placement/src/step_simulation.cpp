#include "interplace/placement/step_simulation.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/stage_chain.hpp"
#include "interplace/placement/stage_costs.hpp"
#include "interplace/placement/step_estimate.hpp"

namespace interplace::placement {

namespace {

// What every rank spends drawing a mini-batch of `micro_batches` micro-batches (the graph
// is built at the micro-batch size).
double mini_batch_overhead_s(const CostModel& cost_model, const Graph& graph, int micro_batches) {
  return cost_model.mini_batch_overhead_s(graph.batch_size() * micro_batches);
}

// Per device of the schedule (which runs the placement's model stages, schedule.hpp):
// the fp32 gradients its optimiser step steps, its nodes' parameters and one replica of
// each tied weight it holds heads of (data parallelism all-reduces them; auxiliary heads
// are added by the caller).
std::vector<int64_t> gradient_bytes_per_device(const Graph& graph, const Placement& placement,
                                               const NodeCosts& costs, const Schedule& schedule) {
  std::vector<int64_t> bytes(static_cast<size_t>(schedule.stage_count), 0);
  for (const Node& node : graph.nodes()) {
    bytes[static_cast<size_t>(schedule.device_of_stage(placement.device_of_node[node.id]))] +=
        4 * node.parameter_count;
  }
  const std::vector<int64_t> replicas =
      costs.replica_bytes_per_device(placement.device_of_node, placement.device_count);
  for (size_t stage = 0; stage < replicas.size(); ++stage) {
    bytes[static_cast<size_t>(schedule.device_of_stage(static_cast<int>(stage)))] +=
        replicas[stage] / 2;  // values + gradient
  }
  return bytes;
}

}  // namespace

namespace {

double roofline_optimizer_step_s(const CostModel& cost_model, OptimizerKind kind,
                                 int64_t parameter_count) {
  const int64_t state = optimizer_state_factor(kind);
  // Reads weights, gradients and `state` copies; writes weights and the state copies.
  const int64_t bytes = parameter_count * 4 * (3 + 2 * state);
  const int64_t flops = parameter_count * (2 + 3 * state);
  return cost_model.roofline_s(flops, bytes);
}

}  // namespace

double optimizer_step_s(const CostModel& cost_model, int64_t parameter_count) {
  const OptimizerKind kind = cost_model.optimizer();
  const auto& profile = cost_model.profile();
  if (!profile || std::isnan(profile->runtime_optimizer_s) || profile->graph_parameter_count <= 0) {
    return roofline_optimizer_step_s(cost_model, kind, parameter_count);
  }
  // The runtime's measured step (momentum SGD, `interplace profile`) per parameter, scaled
  // by the roofline's ratio for another optimiser.
  const double per_parameter_s =
      profile->runtime_optimizer_s / static_cast<double>(profile->graph_parameter_count);
  const double measured_s = per_parameter_s * static_cast<double>(parameter_count);
  if (kind == OptimizerKind::sgd_momentum || parameter_count == 0) return measured_s;
  return measured_s * roofline_optimizer_step_s(cost_model, kind, parameter_count) /
         roofline_optimizer_step_s(cost_model, OptimizerKind::sgd_momentum, parameter_count);
}

ScheduleRequest step_schedule_request(const StepRequest& request, int stage_count) {
  const bool global = strategy_reach(request.strategy, stage_count) >= stage_count - 1;
  return {.strategy = request.strategy,
          .pipeline =
              request.pipeline.value_or(global ? PipelineKind::gpipe : PipelineKind::one_f_one_b),
          .stage_count = stage_count,
          .virtual_stages = request.virtual_stages,
          .micro_batches = request.micro_batches,
          .mini_batches = request.mini_batches,
          .interlock = request.interlock};
}

Schedule plan_step_schedule(const Graph& graph, const Placement& stages, const NodeCosts& costs,
                            const CostModel& cost_model, const ScheduleRequest& request) {
  const int k = request.stage_count;
  const bool global = strategy_reach(request.strategy, k) >= k - 1;
  if (!global) {
    if (auto why = local_strategy_ineligibility(graph, stages)) {
      throw_invalid("strategy '" + to_string(request.strategy) +
                    "' cannot run on this placement: " + *why + "; only the global strategy can");
    }
  }
  if (request.virtual_stages > 1) {
    // The K*V stages must chain with messages to the next stage only (rank_model.cpp).
    require_chunk_chain(request.pipeline, graph, stages);
  } else if (global && !is_stage_chain(graph, stages)) {
    return list_node_schedule(graph, stages, costs, cost_model, request.pipeline,
                              request.micro_batches, request.mini_batches);
  }
  return build_schedule(request);
}

Schedule list_node_schedule(const Graph& graph, const Placement& placement, const NodeCosts& costs,
                            const CostModel& cost_model, PipelineKind pipeline, int micro_batches,
                            int mini_batches) {
  if (pipeline != PipelineKind::gpipe) {
    throw_invalid("pipeline '" + to_string(pipeline) + "' cannot run on this placement (" +
                  stage_chain_violation(graph, placement).value_or("not a stage chain") +
                  "): it interleaves whole-stage forward and backward passes. HINT: "
                  "--pipeline gpipe (the list schedule, node by node), or a placer that "
                  "makes stage chains (contiguous, stages)");
  }
  ScheduleRequest request;
  request.pipeline = PipelineKind::gpipe;
  request.stage_count = placement.device_count;
  request.micro_batches = micro_batches;
  request.mini_batches = mini_batches;
  return node_level_schedule(
      request, list_schedule_tasks(graph, costs, cost_model.link(), placement, micro_batches),
      graph, placement);
}

void set_placer_objective(PlacementRequest& request, const Graph& graph, const NodeCosts& costs,
                          const CostModel& cost_model) {
  const int micro_batches = request.micro_batches;
  request.rl.estimator =
      [step_time = std::make_shared<GlobalStepTime>(graph, costs, cost_model, micro_batches)](
          const Placement& candidate) { return (*step_time)(candidate); };
  request.rl.group_estimator = [&cost_model, micro_batches](const Graph& groups,
                                                            const NodeCosts& group_costs) {
    return RlStepEstimator([step_time = std::make_shared<GlobalStepTime>(
                                groups, group_costs, cost_model, micro_batches)](
                               const Placement& candidate) { return (*step_time)(candidate); });
  };
}

GlobalStepTime::GlobalStepTime(const Graph& graph, const NodeCosts& costs,
                               const CostModel& cost_model, int micro_batches)
    : graph_(graph),
      costs_(costs),
      cost_model_(cost_model),
      micro_batches_(micro_batches),
      overhead_s_(mini_batch_overhead_s(cost_model, graph, micro_batches)),
      list_schedule_(graph, costs, cost_model.link(), micro_batches) {}

double GlobalStepTime::operator()(const Placement& placement) {
  if (placement.device_count != sharing_devices_) {
    sharing_devices_ = placement.device_count;
    // The list schedule's estimate leaves both sharing and working sets out.
    sharing_active_ = cost_model_.compute_sharing(sharing_devices_).active() ||
                      cost_model_.has_working_set_factor();
  }
  if (sharing_active_ || is_stage_chain(graph_, placement)) {
    StepRequest request;
    request.micro_batches = micro_batches_;
    return simulate_step(graph_, placement, costs_, cost_model_, request).step_time_s;
  }
  // The placers' fast estimate (step_estimate.hpp): the list schedule's makespan, shifted
  // by the mini-batch's overhead.
  return overhead_s_ + list_schedule_(placement);
}

StepReport simulate_step(const Graph& graph, const Placement& placement, const NodeCosts& costs,
                         const CostModel& cost_model, const StepRequest& request) {
  require_valid_placement(graph, placement);
  // V virtual stages: the placement's devices are the K*V model stages.
  const int chunks = std::max(1, request.virtual_stages);
  if (placement.device_count % chunks != 0) {
    throw_invalid(std::to_string(chunks) + " virtual stages need a placement of a multiple of " +
                  std::to_string(chunks) + " stages, got " +
                  std::to_string(placement.device_count));
  }
  const int k = placement.device_count / chunks;
  if (request.micro_batches < 1 || request.mini_batches < 1) {
    throw_invalid("micro-batches and mini-batches must be >= 1");
  }
  return simulate_schedule(
      graph, placement, costs, cost_model,
      plan_step_schedule(graph, placement, costs, cost_model, step_schedule_request(request, k)),
      request.aux_heads, request.data_parallel);
}

void require_memory_fits(const StepReport& report, const MemoryBudget& budget) {
  int64_t needed = 0;
  for (const DeviceStep& d : report.devices) needed = std::max(needed, d.peak_memory_bytes);
  if (budget.bytes <= 0 || needed <= budget.bytes) return;
  const auto gib = [](int64_t bytes) {
    std::ostringstream out;
    out.precision(3);
    out << static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
    return out.str();
  };
  throw_invalid("configuration does not fit in " + budget.memory + ": needs " + gib(needed) +
                " GiB per " + budget.unit + ", " + gib(budget.bytes) + " GiB available (" +
                budget.source + "). HINT: " + budget.hint);
}

std::vector<TimelineEvent> simulated_timeline(const Schedule& schedule,
                                              const SimulationResult& result) {
  std::vector<TimelineEvent> events;
  for (const TraceEvent& e : result.trace) {
    const Action& action =
        schedule.stage_actions[static_cast<size_t>(e.stage)][static_cast<size_t>(e.action_index)];
    if (action.mini_batch != 0 || action.kind == ActionKind::send) continue;
    if (action.kind == ActionKind::forward_backward) {  // its halves, split where they were
      const Action forward = forward_half(action), backward = backward_half(action);
      for (const auto& [half, start_s, end_s] : {std::tuple{&forward, e.start_s, e.split_s},
                                                 std::tuple{&backward, e.split_s, e.end_s}}) {
        if (!(end_s > start_s)) continue;
        events.push_back({.rank = e.stage,
                          .kind = half == &forward ? "forward" : "backward",
                          .start_s = start_s,
                          .end_s = end_s,
                          .action = grid_label(*half, schedule.micro_batches),
                          .micro_batch = half->micro_batch,
                          .loss_stage = half->loss_stage,
                          .peer = -1});
      }
      continue;
    }
    const Action& a = action;
    const char* kind = nullptr;
    switch (a.kind) {
      case ActionKind::forward:
        kind = "forward";
        break;
      case ActionKind::backward:
      case ActionKind::backward_weight:
        kind = "backward";
        break;
      case ActionKind::aux_forward:
      case ActionKind::aux_backward:
        kind = "aux";
        break;
      case ActionKind::optimizer_step:
        kind = "optimizer";
        break;
      case ActionKind::receive:
        kind = "comm_wait";  // the time the stage waited for the message
        break;
      case ActionKind::send:
      case ActionKind::forward_backward:
        break;
    }
    if (kind == nullptr || !(e.end_s > e.start_s)) continue;
    events.push_back({.rank = e.stage,
                      .kind = kind,
                      .start_s = e.start_s,
                      .end_s = e.end_s,
                      .action = grid_label(a, schedule.micro_batches),
                      .micro_batch = a.mini_batch * schedule.micro_batches + a.micro_batch,
                      .loss_stage = a.loss_stage,
                      // A rank: under interleaved 1F1B peer_stage is a model stage.
                      .peer = a.peer_stage < 0 ? -1 : schedule.device_of_stage(a.peer_stage)});
  }
  return events;
}

StepReport simulate_schedule(const Graph& graph, const Placement& placement, const NodeCosts& costs,
                             const CostModel& cost_model, const Schedule& schedule,
                             const AuxHeadOptions& aux_heads, int data_parallel) {
  require_valid_placement(graph, placement);
  // The placement's devices are the model stages: K, or K*V with V virtual stages, each
  // on the device the schedule's stage map says (pipelines.hpp).
  const int stages = placement.device_count;
  const int k = schedule.stage_count;
  if (k * schedule.virtual_stages != stages) {
    throw_invalid("simulate_schedule: a schedule of " + std::to_string(stages) +
                  " stages is needed, got " +
                  std::to_string(schedule.stage_count * schedule.virtual_stages));
  }
  const bool global = schedule.reach >= k - 1;
  const bool node_level = schedule.messages == MessageLevel::node;
  if (node_level) {
    if (!global || schedule.virtual_stages != 1) {
      throw_invalid("simulate_schedule: a node-level schedule runs the global strategy alone");
    }
  } else if (!global) {
    if (auto why = local_strategy_ineligibility(graph, placement)) {
      throw_invalid("strategy '" + schedule.strategy + "' cannot run on this placement: " + *why +
                    "; only the global strategy can");
    }
  } else if (auto why = schedule.virtual_stages > 1 ? interleaved_violation(graph, placement)
                                                    : stage_chain_violation(graph, placement)) {
    throw_invalid("simulate_schedule: the placement is not a stage chain: " + *why);
  }

  PipelineCosts pipeline = node_level
                               ? node_pipeline_costs(graph, placement, costs, cost_model.link())
                               : pipeline_costs(graph, placement, costs, cost_model.link());
  pipeline.sharing = cost_model.compute_sharing(k);
  pipeline.mini_batch_overhead_s = mini_batch_overhead_s(cost_model, graph, schedule.micro_batches);
  pipeline.data_parallel = data_parallel;
  std::vector<int64_t> parameters(k, 0);  // per device: its optimiser step steps them all
  for (const Node& node : graph.nodes()) {
    parameters[schedule.device_of_stage(placement.device_of_node[node.id])] += node.parameter_count;
  }
  // Data parallelism all-reduces a device's gradients at its optimiser step: charged to
  // its chunk-0 stage, as the step's time.
  const std::vector<int64_t> gradient_bytes =
      gradient_bytes_per_device(graph, placement, costs, schedule);
  const std::vector<NodeId> boundaries =
      global ? std::vector<NodeId>{} : boundary_producers(graph, placement);
  const HeadCalibration calibration =
      global ? HeadCalibration{} : head_calibration(graph, costs, cost_model);
  for (int j = 0; j < k; ++j) {
    StageCosts& stage = pipeline.stages[j];
    if (schedule.has_aux_head[j]) {
      const AuxHeadCosts head =
          aux_head_costs(aux_head_graph(graph, boundaries[j], aux_heads), cost_model, calibration);
      stage.aux_forward_s = head.forward_s;
      stage.aux_backward_s = head.backward_s;
      stage.aux_activation_bytes = head.activation_bytes;
      stage.parameter_state_bytes += cost_model.parameter_state_bytes(head.parameter_count);
      parameters[j] += head.parameter_count;
      stage.gradient_bytes += 4 * head.parameter_count;
    }
    stage.optimizer_s = optimizer_step_s(cost_model, parameters[j]);
    stage.gradient_bytes += gradient_bytes[static_cast<size_t>(j)];
  }

  if (cost_model.has_working_set_factor()) {
    // Each stage's working set is its peak memory in this schedule, which the order of its
    // actions fixes whatever they take: simulate once for it, then with the stages' times
    // at their working sets.
    const SimulationResult order_only = simulate(schedule, pipeline);
    std::vector<WorkingSetFactor> factors;  // by device
    for (int j = 0; j < k; ++j) {
      factors.push_back(
          cost_model.working_set_factor(costs, order_only.stages[j].peak_memory_bytes));
    }
    const auto scale = [](StageCosts& c, const WorkingSetFactor& f) {
      c.forward_s *= f.forward;
      c.backward_s *= f.backward;
      c.backward_input_s *= f.backward;
    };
    if (node_level) {
      for (const Node& node : graph.nodes()) {
        scale(pipeline.nodes[static_cast<size_t>(node.id)],
              factors[static_cast<size_t>(placement.device_of_node[node.id])]);
      }
    } else {
      for (int s = 0; s < stages; ++s) {  // a device's factor for each of its chunks' stages
        scale(pipeline.stages[static_cast<size_t>(s)],
              factors[static_cast<size_t>(schedule.device_of_stage(s))]);
      }
    }
  }
  const SimulationResult result = simulate(schedule, pipeline);
  StepReport report;
  report.messages = schedule.messages;
  if (node_level) report.node_level_reason = stage_chain_violation(graph, placement).value_or("");
  report.reach = schedule.reach;
  if (global) report.pipeline = schedule.pipeline;
  report.step_time_s = result.step_time_s;
  report.idle_fraction = result.idle_fraction;
  report.data_parallel = data_parallel;
  report.devices.resize(k);
  for (int j = 0; j < k; ++j) {
    const StageTimeline& timeline = result.stages[j];
    report.devices[j] = {.busy_s = timeline.busy_s / schedule.mini_batches,
                         .idle_s = timeline.idle_s / schedule.mini_batches,
                         .peak_memory_bytes = timeline.peak_memory_bytes,
                         .has_aux_head = schedule.has_aux_head[j],
                         .allreduce_s = timeline.allreduce_s / schedule.mini_batches};
  }
  report.timeline = simulated_timeline(schedule, result);
  for (const TimelineEvent& e : report.timeline) {  // the first mini-batch: one step
    if (e.kind == "aux")
      report.devices[static_cast<size_t>(e.rank)].aux_head_s += e.end_s - e.start_s;
  }
  return report;
}

}  // namespace interplace::placement
