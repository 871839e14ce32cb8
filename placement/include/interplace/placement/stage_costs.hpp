// From a placement to the simulator's costs: per stage for a stage chain, per node (and
// per device) for a node-level schedule.
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

// The costs of a node-level schedule (MessageLevel::node) on any placement: per node its
// forward_s, backward_s, backward_input_s, output bytes (sent, and kept as its activation);
// per device its nodes' parameter state and its tied-weight replicas. Auxiliary heads do
// not exist there; optimizer_s and gradient_bytes are left at 0 for the caller.
PipelineCosts node_pipeline_costs(const Graph& graph, const Placement& placement,
                                  const NodeCosts& costs, const LinkSpec& link);

}  // namespace interplace::placement
