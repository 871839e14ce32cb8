// One training step of a placement under a backprop strategy, as the command line and the
// benchmarks report it.
//
// Every step runs through the one discrete-event simulator (simulator.hpp) on the schedule
// the ranks execute (schedule.hpp): on a stage chain the strategy's stage schedule, with an
// auxiliary head on each stage the strategy gives one (aux_heads.hpp) and one optimiser
// step per stage, both costed by the device roofline; the global strategy on a placement
// that is not a chain, the node-level GPipe schedule of the list schedule
// (list_node_schedule). Local and interlocking strategies need a chain with single-tensor
// boundaries; otherwise simulate_step throws invalid_input saying why.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "interplace/placement/aux_heads.hpp"
#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/placement.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/placement/simulator.hpp"
#include "interplace/placement/step_estimate.hpp"

namespace interplace::placement {

struct StepRequest {
  Strategy strategy = {};  // global, local, pairwise, nwise:N
  // Global strategies only (a reach of K-1); unset: GPipe for global, and the interlocked
  // schedule of schedule.hpp otherwise.
  std::optional<PipelineKind> pipeline = std::nullopt;
  // Chunks per device, V (a pipeline that takes virtual stages, pipelines.hpp): the
  // placement simulate_step takes then places the K*V model stages, each on the device the
  // pipeline's stage map says.
  int virtual_stages = 1;
  int micro_batches = 1;
  int mini_batches = 1;  // simulated back to back; times are per mini-batch
  // R replicas of the pipeline (data parallelism, docs/strategies.md): the graph is one
  // replica's micro-batch, one replica is simulated, and each device's optimiser step waits
  // for the ring all-reduce of its gradients over the R replicas.
  int data_parallel = 1;
  // Interlock mode of the local and interlocking strategies (schedule.hpp).
  InterlockMode interlock = InterlockMode::single;
  AuxHeadOptions aux_heads = {};
};

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
  // grid_label ("F3", "B3", "b3", "H3", "r3", "S"), its micro-batch (numbered
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
  // Stage chains: stage; others: node (and why the placement is not a chain).
  MessageLevel messages = MessageLevel::stage;
  std::string node_level_reason;
  int reach = 0;  // gradient reach of the strategy on this many stages (K-1: global)
  // The global schedule used; unset for local and interlocking ones and the list schedule.
  std::optional<PipelineKind> pipeline = std::nullopt;
  double step_time_s = 0.0;
  double idle_fraction = 0.0;  // idle time over devices x step time
  int data_parallel = 1;       // replicas of the pipeline; devices are one replica's
  std::vector<DeviceStep> devices;
  // The simulated first step: every compute action and every wait of a receive.
  std::vector<TimelineEvent> timeline;
};

// The events of the first mini-batch of a simulated schedule (every compute action, and
// the wait of each receive that waited), as the runtime records its timeline.
std::vector<TimelineEvent> simulated_timeline(const Schedule& schedule,
                                              const SimulationResult& result);

// The optimiser step of `parameter_count` fp32 parameters on the cost model's device:
// a memory-bound update that reads weights, gradients and optimiser state and writes
// weights and state back.
double optimizer_step_s(const CostModel& cost_model, int64_t parameter_count);

// The schedule request of `request` on K = `stage_count` devices (the pipeline defaults to
// GPipe for global, the interlocked schedule otherwise).
ScheduleRequest step_schedule_request(const StepRequest& request, int stage_count);

// The one schedule a step of `stages` runs, for simulate_step, `train` and sweeps alike
// (training.hpp's plan_training): on a stage chain the pipeline's per-rank lists
// (build_schedule; with V virtual stages `stages` holds the K*V model stages, which must
// chain: require_chunk_chain); elsewhere the global strategy's list schedule node by node
// (list_node_schedule, GPipe alone). Throws invalid_input for a local or interlocking
// strategy on a placement that is not a stage chain, saying why, and as build_schedule.
Schedule plan_step_schedule(const Graph& graph, const Placement& stages, const NodeCosts& costs,
                            const CostModel& cost_model, const ScheduleRequest& request);

// Simulates `schedule` itself on the placement, with auxiliary heads of `aux_heads` where
// the schedule has them: the runtime executes the same object (training.hpp's
// TrainPlan::schedule). A stage-level schedule needs a stage chain of
// schedule.stage_count stages (K*V under interleaved 1F1B); a node-level one (global) any
// placement on stage_count devices. Throws invalid_input when the placement cannot run the
// schedule.
StepReport simulate_schedule(const Graph& graph, const Placement& placement, const NodeCosts& costs,
                             const CostModel& cost_model, const Schedule& schedule,
                             const AuxHeadOptions& aux_heads = {}, int data_parallel = 1);

// The node-level schedule of the global strategy (GPipe, a flush per mini-batch) on a
// placement that is not a stage chain: the ready-first list schedule of step_estimate.hpp
// that the placers' estimate assumes, with its messages (node_level_schedule), so that the
// branch parallelism a placer planned for is what runs. simulate_step, `train` and sweeps
// build it here alone. Throws invalid_input for another `pipeline` than GPipe (1F1B and
// the others interleave whole-stage passes), with a HINT.
Schedule list_node_schedule(const Graph& graph, const Placement& placement, const NodeCosts& costs,
                            const CostModel& cost_model, PipelineKind pipeline, int micro_batches,
                            int mini_batches = 1);

// The objective of the placers that take one, as every command places: rl's reward is
// GlobalStepTime (below) on the full graph and on its groups. `place`, `simulate`,
// `train` and sweeps (simulate-only ones too) all place through it, so one configuration gets one
// placement whichever command asks (`train --placer rl` used rl's list-scheduled default).
// `graph`, `costs` and `cost_model` must outlive the placer call.
void set_placer_objective(PlacementRequest& request, const Graph& graph, const NodeCosts& costs,
                          const CostModel& cost_model);

// simulate_step(...).step_time_s of the global strategy for many placements of one graph
// (the rl placer's reward, one call per move) on stage chains, and where ranks share a host
// or pay for their working sets; on other placements (most of what rl explores) the
// placers' fast estimate (step_estimate.hpp) shifted by the mini-batch's overhead, which
// keeps its buffers between calls and leaves out what only the simulator models (one
// message per link at a time, the optimiser step). Holds references to `graph`, `costs` and
// `cost_model`, which must outlive it; not safe to call from two threads at once.
class GlobalStepTime {
 public:
  GlobalStepTime(const Graph& graph, const NodeCosts& costs, const CostModel& cost_model,
                 int micro_batches);
  double operator()(const Placement& placement);

 private:
  const Graph& graph_;
  const NodeCosts& costs_;
  const CostModel& cost_model_;
  int micro_batches_;
  double overhead_s_;  // the mini-batch's draw, which the fast estimate leaves out
  StepTimeEstimate list_schedule_;
  int sharing_devices_ = -1;     // the device count sharing_active_ was computed for
  bool sharing_active_ = false;  // or working sets: simulate_step's way, not the estimate
};

// What one device of a run may hold, for require_memory_fits: its bytes and the words of
// the refusal ("configuration does not fit in <memory>: needs X GiB per <unit>, Y GiB
// available (<source>). HINT: <hint>").
struct MemoryBudget {
  int64_t bytes = 0;  // 0: unknown, nothing is checked
  std::string memory = "memory";
  std::string unit = "device";
  std::string source;
  std::string hint;
};

// Throws invalid_input when the largest per-device peak memory of `report` exceeds
// `budget.bytes`.
void require_memory_fits(const StepReport& report, const MemoryBudget& budget);

// Throws invalid_input for a bad strategy or count, or a local/interlocking strategy on a
// placement that cannot run it (the message gives the reason).
StepReport simulate_step(const Graph& graph, const Placement& placement, const NodeCosts& costs,
                         const CostModel& cost_model, const StepRequest& request);

}  // namespace interplace::placement
