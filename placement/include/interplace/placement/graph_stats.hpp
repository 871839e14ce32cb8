// Structural features of a graph, the ones the traversal-order study relates to which
// order works best.
#pragma once

#include <cstdint>
#include <span>

#include "interplace/placement/graph.hpp"

namespace interplace::placement {

struct GraphStats {
  int node_count = 0;
  int64_t edge_count = 0;
  // Longest path counted in nodes (a single node has depth 1; an empty graph 0).
  int depth = 0;
  // Width is NOT the largest antichain (hard to compute): it is the largest number of
  // nodes sharing one depth level, where a node's level is the number of nodes on the
  // longest path from a source to it (sources are level 1).
  int max_width = 0;
  // Mean out-degree over the nodes that have at least one successor (0 if none do).
  double mean_branching_factor = 0.0;
  // Cost of the most expensive source-to-sink path divided by the total cost (0 when the
  // total is 0). 1 for a chain; small for wide graphs.
  double critical_path_cost_share = 0.0;
};

// `node_cost` holds one non-negative cost per node (seconds, FLOPs: any unit).
GraphStats compute_graph_stats(const Graph& graph, std::span<const double> node_cost);
// Cost of a node = its forward plus backward FLOPs.
GraphStats compute_graph_stats(const Graph& graph);

// Per-node depth level as defined above (sources are 1).
std::vector<int> depth_levels(const Graph& graph);

}  // namespace interplace::placement
