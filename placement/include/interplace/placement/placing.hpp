// How every command places a graph: `place`, `simulate`, `train` and
// sweeps all order and place through these two functions, so one configuration gets one
// placement whichever command asks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placers.hpp"

namespace interplace::placement {

struct OrderedGraph {
  NodeCosts costs;                   // on the cost model the order was computed with
  std::vector<double> node_seconds;  // per node: forward + backward (costs.compute_s)
  Order order;
};

// The graph's node costs on `cost_model` and its `kind` order: critical-path weighs each
// node by its forward + backward seconds there; the random orders draw from `seed`.
OrderedGraph order_graph(const Graph& graph, const CostModel& cost_model, OrderKind kind,
                         uint64_t seed);

// Runs `placer` on `ordered` (from order_graph with request.cost_model) with `request`,
// whose rl objective is set here as the simulator's global step (set_placer_objective).
// `wall_s`, when given, receives the placer call's wall time. Throws invalid_input when no
// placement exists.
Placement run_placer(const Graph& graph, const OrderedGraph& ordered, PlacerKind placer,
                     PlacementRequest request, double* wall_s = nullptr);

}  // namespace interplace::placement
