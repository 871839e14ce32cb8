// A discrete-event model of training steps: executes a Schedule's per-stage action lists
// against per-stage costs and a link, and reports step time, per-stage busy and idle time
// and peak memory.
//
// Timing rules: compute actions (forward, backward, aux, optimiser step) occupy their stage
// for their duration; with PipelineCosts::sharing, stretched while other stages of the same
// host compute at the same time (compute_sharing.hpp). A send costs its stage no time; the message
// crosses the directed link (stage i -> i+1 or i+1 -> i) as soon as that link is free, taking
// latency_s + bytes / bandwidth_bytes_per_s, one message at a time per direction. A
// receive blocks its stage until the message has arrived; that wait is idle time.
// A backward pass that updates the body costs backward_s, one that only carries a gradient
// through costs backward_input_s; ZB-H1's split backward costs backward_input_s for B (the
// input gradient) and backward_s - backward_input_s for W (the parameter gradients).
// Memory: parameter state, plus activation_bytes from a micro-batch's forward until its
// last backward pass on that stage (its W under ZB-H1: the runtime keeps the micro-batch's
// contexts until then), plus aux_activation_bytes from an aux forward to its aux backward.
//
// Interleaved 1F1B (schedule.hpp): the schedule's K action lists are devices holding
// V chunks each; PipelineCosts::stages has one entry per model stage (K*V, stage c*K + j
// for device j's chunk c), and an action is costed by its chunk's stage. Links, the
// compute sharing and the results are per device; a device's memory is the parameter
// state of all its stages plus each chunk's activations from its forward to its last
// backward; its optimiser step costs the optimizer_s of its chunk-0 stage (stage j), which
// the caller sets for the whole device.
//
// Node-level schedules (MessageLevel::node, schedule.hpp's node_level_schedule): an action
// with a node is costed by PipelineCosts::nodes[node] (its forward_s, backward_s; its
// activation_bytes are kept from its forward to its backward; a message of it carries its
// output_bytes, and so does its gradient's), the optimiser step by the device's stages[j],
// which also holds the device's parameter state and gradient bytes. Messages cross any
// pair of devices, one at a time per direction as above.
//
// Data parallelism (PipelineCosts::data_parallel R > 1): the schedule is one of R identical
// replicas of the pipeline, so one is simulated. When a device reaches its optimiser step
// (its last backward of the mini-batch has ended), its parameter gradients
// (StageCosts::gradient_bytes of its stages) are averaged over the R replicas of that
// device by a ring all-reduce (ring_allreduce_s), and the step waits for it; the wait is
// idle time, and other devices go on meanwhile. The replicas of device j are devices
// j, j + K, ..., j + (R-1)K of the job (world rank = replica * K + stage), which decides
// whether the ring crosses nodes (LinkSpec::devices_per_node).
#pragma once

#include <cstdint>
#include <vector>

#include "interplace/placement/compute_sharing.hpp"
#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/schedule.hpp"

namespace interplace::placement {

// Costs of one stage for one micro-batch.
struct StageCosts {
  double forward_s = 0.0;
  double backward_s = 0.0;
  // A backward pass that does not update the stage's parameters (Action::
  // updates_parameters false: it only carries a gradient through, as interlocking
  // backpropagation does): the input gradient alone.
  double backward_input_s = 0.0;
  double aux_forward_s = 0.0;
  double aux_backward_s = 0.0;
  double optimizer_s = 0.0;
  int64_t output_bytes = 0;  // activation sent to the next stage; its gradient is as big
  int64_t parameter_state_bytes = 0;
  int64_t activation_bytes = 0;      // kept for backward
  int64_t aux_activation_bytes = 0;  // kept by the auxiliary head
  // Gradients all-reduced across data-parallel replicas before the optimiser step: the
  // stage's parameters (auxiliary head and tied-weight replicas included) in fp32.
  int64_t gradient_bytes = 0;
};

struct PipelineCosts {
  std::vector<StageCosts> stages;  // per model stage: stage_count * virtual_stages
  // Per graph node, for node-level schedules (forward_s, backward_s, backward_input_s,
  // activation_bytes, output_bytes); empty for stage-level ones.
  std::vector<StageCosts> nodes;
  LinkSpec link;
  // Stages (ranks) that share a host and slow each other down while they compute at once;
  // by default none do.
  ComputeSharing sharing;
  // What every stage spends at the start of each mini-batch before its first action, in no
  // unit (the runtime draws and slices the batch there: CostModel::mini_batch_overhead_s).
  // It occupies the stage's host like compute but is not busy time (the runtime counts it
  // in overhead_s, part of idle_s).
  double mini_batch_overhead_s = 0.0;
  // R: replicas of the pipeline whose gradients are averaged per device before each
  // optimiser step (1: no data parallelism, no all-reduce).
  int data_parallel = 1;
};

// A ring all-reduce of `bytes` over the `replicas` copies of `device` in a job of
// `stage_count` devices per replica (copy r is job device r * stage_count + device):
// 2(R-1) steps, each moving a 1/R share (rounded up) over the ring's slowest link, so
// 2(R-1)/R x bytes / bandwidth + 2(R-1) x latency on a latency-bandwidth link. 0 for
// R <= 1 or no bytes.
double ring_allreduce_s(const LinkSpec& link, int64_t bytes, int replicas, int device,
                        int stage_count);

struct TraceEvent {
  int stage = 0;
  int action_index = 0;  // into Schedule::stage_actions[stage]
  double start_s = 0.0;  // for a receive: when the stage started waiting
  double end_s = 0.0;
  // An overlapped forward_backward: when its forward half ended (its share of the
  // action's time); -1 for every other action.
  double split_s = -1.0;
};

struct StageTimeline {
  double busy_s = 0.0;           // compute
  double idle_s = 0.0;           // makespan - busy
  double first_start_s = 0.0;    // first compute action
  double last_end_s = 0.0;       // last compute action
  double internal_idle_s = 0.0;  // idle between first_start_s and last_end_s (no fill/drain)
  int64_t peak_memory_bytes = 0;
  std::vector<double> step_end_s;  // end of each mini-batch's optimiser step
  // Data parallelism: time the device's optimiser steps waited for their gradients'
  // all-reduce (in idle_s), summed over the mini-batches.
  double allreduce_s = 0.0;
};

struct SimulationResult {
  double makespan_s = 0.0;
  double step_time_s = 0.0;    // makespan / mini-batches
  double idle_fraction = 0.0;  // sum of idle / (stages * makespan)
  std::vector<StageTimeline> stages;
  std::vector<TraceEvent> trace;  // every action, in simulation order
};

// Throws invalid_input when the costs do not have one entry per stage or hold negative
// values; throws runtime when the schedule cannot complete (a receive whose message is
// never sent: deadlock) or leaves messages unreceived.
SimulationResult simulate(const Schedule& schedule, const PipelineCosts& costs);

}  // namespace interplace::placement
