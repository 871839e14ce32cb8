#include "interplace/placement/graph_stats.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "interplace/kernels/error.hpp"

namespace interplace::placement {

std::vector<int> depth_levels(const Graph& graph) {
  // Ids are topological, so every predecessor's level is final when a node is reached.
  std::vector<int> level(graph.node_count(), 1);
  for (const Node& node : graph.nodes()) {
    for (NodeId pred : node.predecessors)
      level[node.id] = std::max(level[node.id], level[pred] + 1);
  }
  return level;
}

GraphStats compute_graph_stats(const Graph& graph, std::span<const double> node_cost) {
  const int n = graph.node_count();
  if (static_cast<int>(node_cost.size()) != n) {
    throw_invalid("graph stats: " + std::to_string(node_cost.size()) + " costs for " +
                  std::to_string(n) + " nodes");
  }
  for (double cost : node_cost) {
    if (!(cost >= 0.0) || !std::isfinite(cost)) {
      throw_invalid("graph stats: node costs must be finite and >= 0");
    }
  }
  GraphStats stats;
  stats.node_count = n;
  stats.edge_count = graph.edge_count();
  if (n == 0) return stats;

  const std::vector<int> level = depth_levels(graph);
  stats.depth = *std::max_element(level.begin(), level.end());
  std::vector<int> nodes_at_level(stats.depth + 1, 0);
  for (int l : level) ++nodes_at_level[l];
  stats.max_width = *std::max_element(nodes_at_level.begin(), nodes_at_level.end());

  int branching_nodes = 0;
  int64_t branching_edges = 0;
  for (const Node& node : graph.nodes()) {
    if (node.successors.empty()) continue;
    ++branching_nodes;
    branching_edges += static_cast<int64_t>(node.successors.size());
  }
  if (branching_nodes > 0) {
    stats.mean_branching_factor =
        static_cast<double>(branching_edges) / static_cast<double>(branching_nodes);
  }

  // Heaviest path ending at each node, in id (= topological) order.
  std::vector<double> path_cost(n, 0.0);
  double total = 0.0;
  double heaviest = 0.0;
  for (const Node& node : graph.nodes()) {
    double best_pred = 0.0;
    for (NodeId pred : node.predecessors) best_pred = std::max(best_pred, path_cost[pred]);
    path_cost[node.id] = best_pred + node_cost[node.id];
    heaviest = std::max(heaviest, path_cost[node.id]);
    total += node_cost[node.id];
  }
  if (total > 0.0) stats.critical_path_cost_share = heaviest / total;
  return stats;
}

GraphStats compute_graph_stats(const Graph& graph) {
  std::vector<double> cost;
  cost.reserve(graph.node_count());
  for (const Node& node : graph.nodes()) {
    cost.push_back(static_cast<double>(node.forward_flops + node.backward_flops));
  }
  return compute_graph_stats(graph, cost);
}

}  // namespace interplace::placement
