// Graph export: JSON (snake_case keys, for tools and the result files) and Graphviz DOT
// (for looking at a graph, optionally coloured by a placement).
//
// JSON layout:
//   {"name": str, "batch_size": int, "node_count": int, "edge_count": int,
//    "nodes": [{"id", "name", "op", "inputs": [id...], "successors": [id...],
//               "output_shape": [int...], "forward_flops", "backward_flops",
//               "parameter_count", "output_bytes", "attributes": {key: number|string}}],
//    "edges": [[producer, consumer], ...]}   (edges in producer id order, then successor order)
#pragma once

#include <string>
#include <vector>

#include "interplace/placement/graph.hpp"

namespace interplace::placement {

std::string to_json(const Graph& graph);

// `device_of_node`, when not empty (one entry per node), groups nodes into one cluster
// per device.
std::string to_dot(const Graph& graph, const std::vector<int>& device_of_node = {});

}  // namespace interplace::placement
