// From a placement that is a stage chain to the simulator's per-stage costs, and the
// simulator wrapped as a step-time estimator for the refine placer.
#pragma once

#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/placement.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/placement/simulator.hpp"

namespace interplace::placement {

// Stage j: the sums of its nodes' forward_s, backward_s, parameter state and output bytes
// (activations kept), and as output_bytes the tensors that cross boundary j -> j+1: every
// distinct producer on a stage <= j with a consumer on a stage > j (tensors that skip a
// stage are relayed through it). Auxiliary head costs and optimizer_s are left at 0 for
// the caller to fill (they depend on the head design, which the model zoo knows).
// Throws invalid_input with the reason when the placement is not a stage chain.
PipelineCosts pipeline_costs(const Graph& graph, const Placement& placement, const NodeCosts& costs,
                             const LinkSpec& link);

// An estimator for PlacementRequest::refine_estimator: the simulated step time of the
// schedule (its stage_count replaced by the placement's device count), or +infinity for
// placements that are not stage chains. `graph` and `costs` must outlive it.
StepTimeEstimator simulator_estimator(const Graph& graph, const NodeCosts& costs,
                                      const LinkSpec& link, ScheduleRequest schedule);

}  // namespace interplace::placement
