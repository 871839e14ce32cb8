#include "interplace/runs/placing.hpp"

#include <chrono>

#include "interplace/runs/step_simulation.hpp"

namespace interplace::runs {

OrderedGraph order_graph(const placement::Graph& graph, const placement::CostModel& cost_model,
                         placement::OrderKind kind, uint64_t seed) {
  OrderedGraph out{cost_model.node_costs(graph), {}, {}};
  out.node_seconds.resize(static_cast<size_t>(graph.node_count()));
  for (placement::NodeId id = 0; id < graph.node_count(); ++id) {
    out.node_seconds[static_cast<size_t>(id)] = out.costs.compute_s(id);
  }
  out.order = placement::compute_order(graph, kind, {.seed = seed, .node_cost = out.node_seconds});
  return out;
}

placement::Placement run_placer(const placement::Graph& graph, const OrderedGraph& ordered,
                                const std::string& placer, placement::PlacementRequest request,
                                double* wall_s) {
  const placement::Placer place = placement::placer_by_name(placer);
  // rl's objective (no other placer reads it) refers to request.cost_model: set on this
  // copy, which outlives the call.
  if (placer == "rl") set_placer_objective(request, graph, ordered.costs, request.cost_model);
  const auto start = std::chrono::steady_clock::now();
  placement::Placement placement = place(graph, ordered.order, request);
  if (wall_s != nullptr) {
    *wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return placement;
}

}  // namespace interplace::runs
