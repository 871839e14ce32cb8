// A fast estimate of one training step's time for any placement (not only stage chains):
// the makespan of the forward+backward task graph of `micro_batches` micro-batches,
// list-scheduled on the placement. Refine's default estimator.
//
// Tasks: F(v, m) and B(v, m) for every node v and micro-batch m, on v's device, taking
// forward_s / backward_s. F(u, m) -> F(v, m) and B(v, m) -> B(u, m) for every edge u -> v,
// F(v, m) -> B(v, m). A dependency between devices is delayed by transfer_s(output bytes of
// u) (links carry any number of transfers at once: no contention). A device runs one task
// at a time; whenever tasks are ready, the one with the earliest ready time goes first
// (ties: lower micro-batch, forward before backward, then lower node id) and is appended
// to its device's timeline. The optimiser step is not modelled.
#pragma once

#include <cstdint>
#include <vector>

#include "interplace/placement/compute_sharing.hpp"
#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/placement.hpp"
#include "interplace/placement/schedule.hpp"

namespace interplace::placement {

double estimate_step_time_s(const Graph& graph, const NodeCosts& costs, const LinkSpec& link,
                            const Placement& placement, int micro_batches = 1);

// The list schedule behind the estimate: per device, its tasks in the order it runs them
// (input to node_level_schedule, schedule.hpp). Its makespan is estimate_step_time_s.
std::vector<std::vector<NodeTask>> list_schedule_tasks(const Graph& graph, const NodeCosts& costs,
                                                       const LinkSpec& link,
                                                       const Placement& placement,
                                                       int micro_batches = 1);

// Simulates a node-level schedule (MessageLevel::node) as the runtime executes it: each
// device runs its forward and backward actions in list order, a task starting when its
// device is free and its inputs are there (same-device at once, others transfer_s after
// the producer ends: for a forward its producers' forwards, for a backward its own forward
// and its consumers' backwards); the optimiser step is not modelled. Returns the makespan
// per mini-batch. With `sharing`, tasks of devices on one host that run at once slow each
// other down (compute_sharing.hpp). Every device spends `mini_batch_overhead_s` (as
// compute, not a task) before its first action of each mini-batch, as the runtime draws
// the batch there. Throws runtime when the lists deadlock, invalid_input when the schedule
// is not node-level for this placement.
double simulate_node_schedule(const Graph& graph, const NodeCosts& costs, const LinkSpec& link,
                              const Placement& placement, const Schedule& schedule,
                              const ComputeSharing& sharing = {},
                              double mini_batch_overhead_s = 0.0);

// The same estimate for many placements of one graph (refine calls it thousands of
// times): keeps its buffers between calls. Holds references to `graph` and `costs`,
// which must outlive it; not safe to call from two threads at once.
class StepTimeEstimate {
 public:
  StepTimeEstimate(const Graph& graph, const NodeCosts& costs, const LinkSpec& link,
                   int micro_batches = 1);
  double operator()(const Placement& placement);
  // The same run, returning each device's tasks in the order it ran them.
  std::vector<std::vector<NodeTask>> tasks(const Placement& placement);

 private:
  double run(const Placement& placement, std::vector<std::vector<NodeTask>>* order);
  struct ReadyTask {
    double ready_s;
    int64_t task;
    bool operator>(const ReadyTask& other) const;
  };
  const Graph& graph_;
  const NodeCosts& costs_;
  LinkSpec link_;  // a copy: callers pass temporaries
  int micro_batches_;
  std::vector<int> waiting_;
  std::vector<double> ready_s_;
  std::vector<ReadyTask> heap_;
  std::vector<double> device_free_s_;
};

}  // namespace interplace::placement
