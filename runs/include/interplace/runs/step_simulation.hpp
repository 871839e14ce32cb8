// One training step of a placement under a backprop strategy, as the command line and the
// benchmarks report it.
//
// A stage chain runs through the discrete-event simulator (schedule.hpp, simulator.hpp),
// with an auxiliary head on each stage the strategy gives one (aux_heads.hpp) and one
// optimiser step per stage, both costed by the device roofline. Local and interlocking
// strategies need a chain with single-tensor boundaries; otherwise simulate_step throws
// invalid_input saying why. The global strategy on a placement that is not a chain has no
// stage pipeline to simulate: it falls back to the list-scheduled estimate of
// step_estimate.hpp, with each device's compute as its busy time and the activations of all
// micro-batches as its memory (GPipe's worst case).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/placement.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/placement/simulator.hpp"
#include "interplace/placement/step_estimate.hpp"
#include "interplace/runs/aux_heads.hpp"

namespace interplace::runs {

struct StepRequest {
  placement::Strategy strategy = {};  // global, local, pairwise, nwise:N
  // Global strategies only (a reach of K-1); unset: GPipe for global, and the interlocked
  // schedule of schedule.hpp otherwise.
  std::optional<placement::PipelineKind> pipeline = std::nullopt;
  // interleaved-1f1b: chunks per device, V; the placement simulate_step takes then places
  // the K*V model stages (stage s on device s mod K).
  int virtual_stages = 1;
  int micro_batches = 1;
  int mini_batches = 1;  // simulated back to back; times are per mini-batch
  // R replicas of the pipeline (data parallelism, docs/strategies.md): the graph is one
  // replica's micro-batch, one replica is simulated, and each device's optimiser step waits
  // for the ring all-reduce of its gradients over the R replicas.
  int data_parallel = 1;
  // Interlock mode of the local and interlocking strategies (schedule.hpp).
  placement::InterlockMode interlock = placement::InterlockMode::single;
  AuxHeadOptions aux_heads = {};
};

enum class StepEstimator { event_simulator, list_schedule };
std::string to_string(StepEstimator estimator);  // "event-simulator", "list-schedule"

struct DeviceStep {
  double busy_s = 0.0;  // per step
  double idle_s = 0.0;  // per step
  int64_t peak_memory_bytes = 0;
  bool has_aux_head = false;
  double aux_head_s = 0.0;  // per step: of busy_s, the auxiliary head's passes
  // Data parallelism: per step, the time the optimiser step waited for the all-reduce of
  // the device's gradients across the replicas (part of idle_s); 0 with one replica.
  double allreduce_s = 0.0;
};

// One interval of one rank during a step, for timeline plots: measured (the last measured
// step of a run, TrainResult::timeline) or simulated (the first step of the schedule,
// StepReport::timeline), in the same layout so that the two can be drawn one above the
// other.
struct TimelineEvent {
  int rank = 0;
  std::string kind;      // forward | backward | aux | optimizer | comm_wait
  double start_s = 0.0;  // from that rank's start of the step
  double end_s = 0.0;
  // The schedule action the interval belongs to (a comm_wait: the receive it waited in):
  // placement::grid_label ("F3", "B3", "b3", "H3", "r3", "S"), its micro-batch (numbered
  // across mini-batches), the loss stage of a backward or gradient message and the peer
  // of a message; "" and -1 where the interval is not one action's.
  std::string action;
  int micro_batch = -1;
  int loss_stage = -1;
  int peer = -1;
  // Measured events: CPU seconds of the rank's main thread in the interval (a comm_wait:
  // the CPU its polling took, which no unit counts); NaN for the simulator's events.
  double cpu_s = std::numeric_limits<double>::quiet_NaN();
};

struct StepReport {
  StepEstimator estimator = StepEstimator::event_simulator;
  std::string fallback_reason;  // list_schedule: why the simulator was not used
  int reach = 0;                // gradient reach of the strategy on this many stages (K-1: global)
  // The global schedule used; unset for local and interlocking ones and the list schedule.
  std::optional<placement::PipelineKind> pipeline = std::nullopt;
  double step_time_s = 0.0;
  double idle_fraction = 0.0;  // idle time over devices x step time
  int data_parallel = 1;       // replicas of the pipeline; devices are one replica's
  std::vector<DeviceStep> devices;
  // The simulated first step, every compute action and every wait of a receive (the event
  // simulator only; empty for the list schedule's estimate).
  std::vector<TimelineEvent> timeline;
};

// The events of the first mini-batch of a simulated schedule (every compute action, and
// the wait of each receive that waited), as the runtime records its timeline.
std::vector<TimelineEvent> simulated_timeline(const placement::Schedule& schedule,
                                              const placement::SimulationResult& result);

// The optimiser step of `parameter_count` fp32 parameters on the cost model's device:
// a memory-bound update that reads weights, gradients and optimiser state and writes
// weights and state back.
double optimizer_step_s(const placement::CostModel& cost_model, int64_t parameter_count);

// The schedule simulate_step simulates for `request` on a stage chain of
// `placement.device_count` stages (the pipeline defaults to GPipe for global, the interlocked
// schedule otherwise). Throws invalid_input like build_schedule.
placement::Schedule step_schedule(const StepRequest& request, int stage_count);

// Simulates `schedule` itself (a stage chain's: MessageLevel::stage) on the placement, with
// auxiliary heads of `aux_heads` where the schedule has them: the runtime executes the
// same object (training.hpp's TrainPlan::schedule). Throws invalid_input when the placement
// is not a stage chain of schedule.stage_count stages, or a local/interlocking schedule's
// placement cannot run it.
StepReport simulate_schedule(const placement::Graph& graph, const placement::Placement& placement,
                             const placement::NodeCosts& costs,
                             const placement::CostModel& cost_model,
                             const placement::Schedule& schedule,
                             const AuxHeadOptions& aux_heads = {}, int data_parallel = 1);

// The list-scheduled estimate for the global strategy on any placement (the fallback of
// simulate_step for placements that are not stage chains); `reason` says why. Its step time
// is the replay (simulate_node_schedule) of `schedule`, the node-level schedule the ranks
// execute, when given, else of the list schedule built here where ranks sharing a host slow
// each other down, else the estimate itself (which equals the replay without sharing).
// With data_parallel R > 1 the step time adds the largest device's all-reduce of its
// gradients across the replicas (ring_allreduce_s), as if every device ended the step at
// once: an upper bound, the replay does not overlap it.
StepReport list_schedule_step(const placement::Graph& graph, const placement::Placement& placement,
                              const placement::NodeCosts& costs,
                              const placement::CostModel& cost_model, int micro_batches,
                              std::string reason, const placement::Schedule* schedule = nullptr,
                              int data_parallel = 1);

// The objective of the placers that take one, as every command places: rl's reward is
// GlobalStepTime (below) on the full graph and on its groups. `place`, `simulate`,
// `order-study`, `train` and sweeps all place through it, so one configuration gets one
// placement whichever command asks (`train --placer rl` used rl's list-scheduled default).
// `graph`, `costs` and `cost_model` must outlive the placer call.
void set_placer_objective(placement::PlacementRequest& request, const placement::Graph& graph,
                          const placement::NodeCosts& costs,
                          const placement::CostModel& cost_model);

// simulate_step(...).step_time_s of the global strategy for many placements of one graph
// (the rl placer's reward, one call per move): the same number, without the report. A
// placement that is not a stage chain (most of what rl explores) goes to a list schedule
// that keeps its buffers between calls, and nothing per-device (memory, tied-weight
// replicas, busy time) is computed. Holds references to `graph`, `costs` and
// `cost_model`, which must outlive it; not safe to call from two threads at once.
class GlobalStepTime {
 public:
  GlobalStepTime(const placement::Graph& graph, const placement::NodeCosts& costs,
                 const placement::CostModel& cost_model, int micro_batches);
  double operator()(const placement::Placement& placement);

 private:
  const placement::Graph& graph_;
  const placement::NodeCosts& costs_;
  const placement::CostModel& cost_model_;
  int micro_batches_;
  double overhead_s_;  // the mini-batch's draw (list_schedule_step's shift)
  placement::StepTimeEstimate list_schedule_;
  int sharing_devices_ = -1;     // the device count sharing_active_ was computed for
  bool sharing_active_ = false;  // or working sets: simulate_step's way, not the estimate
};

// Throws invalid_input for a bad strategy or count, or a local/interlocking strategy on a
// placement that cannot run it (the message gives the reason).
StepReport simulate_step(const placement::Graph& graph, const placement::Placement& placement,
                         const placement::NodeCosts& costs, const placement::CostModel& cost_model,
                         const StepRequest& request);

}  // namespace interplace::runs
