// The placers' fast objective: an estimate of one training step's time for any placement
// (not only stage chains), the makespan of the forward+backward task graph of
// `micro_batches` micro-batches, list-scheduled on the placement. Refine's default
// estimator and rl's reward where no host is shared. Not the prediction: that is the event
// simulator's (simulator.hpp) run of the schedule the ranks execute, which adds what this
// leaves out (one message at a time per link, the optimiser step, compute sharing, working
// sets; step_simulation.hpp).
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

#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/placement.hpp"
#include "interplace/placement/schedule.hpp"

namespace interplace::placement {

double estimate_step_time_s(const Graph& graph, const NodeCosts& costs, const LinkSpec& link,
                            const Placement& placement, int micro_batches = 1);

// The list schedule behind the estimate: per device, its tasks in the order it runs them
// (input to node_level_schedule, schedule.hpp, whose simulation on a link without
// contention and with free optimiser steps is this estimate).
std::vector<std::vector<NodeTask>> list_schedule_tasks(const Graph& graph, const NodeCosts& costs,
                                                       const LinkSpec& link,
                                                       const Placement& placement,
                                                       int micro_batches = 1);

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
