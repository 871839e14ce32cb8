#include "interplace/placement/placing.hpp"

#include <chrono>

#include "interplace/placement/step_simulation.hpp"

namespace interplace::placement {

OrderedGraph order_graph(const Graph& graph, const CostModel& cost_model, OrderKind kind,
                         uint64_t seed) {
  OrderedGraph out{cost_model.node_costs(graph), {}, {}};
  out.node_seconds.resize(static_cast<size_t>(graph.node_count()));
  for (NodeId id = 0; id < graph.node_count(); ++id) {
    out.node_seconds[static_cast<size_t>(id)] = out.costs.compute_s(id);
  }
  out.order = compute_order(graph, kind, {.seed = seed, .node_cost = out.node_seconds});
  return out;
}

Placement run_placer(const Graph& graph, const OrderedGraph& ordered, PlacerKind placer,
                     PlacementRequest request, double* wall_s) {
  const Placer place = placer_of(placer);
  // rl's objective (no other placer reads it) refers to request.cost_model: set on this
  // copy, which outlives the call.
  if (placer == PlacerKind::rl)
    set_placer_objective(request, graph, ordered.costs, request.cost_model);
  const auto start = std::chrono::steady_clock::now();
  Placement placement = place(graph, ordered.order, request);
  if (wall_s != nullptr) {
    *wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return placement;
}

}  // namespace interplace::placement
