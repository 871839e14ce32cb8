// Graph export: JSON (snake_case keys, for tools and the result files) and Graphviz DOT
// (for looking at a graph, optionally coloured by a placement).
//
// JSON layout, the graph file format (graph_file.hpp reads it; docs/your-network.md):
//   {"format": "interplace-graph", "format_version": 1, "name": str, ["family": str,]
//    "batch_size": int, "node_count": int, "edge_count": int,
//    "nodes": [{"id", "name", "op", "inputs": [id...], "successors": [id...],
//               "output_shape": [int...], "forward_flops", "backward_flops",
//               "parameter_grad_flops", "parameter_count", "output_bytes",
//               "attributes": {key: number|string}}],
//    "edges": [[producer, consumer], ...]}   (edges in producer id order, then successor order)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "interplace/placement/graph.hpp"

namespace interplace::placement {

// `family`, when not empty, is written as the file's "family".
std::string to_json(const Graph& graph, std::string_view family = {});

// `device_of_node`, when not empty (one entry per node), groups nodes into one cluster
// per device.
std::string to_dot(const Graph& graph, const std::vector<int>& device_of_node = {});

}  // namespace interplace::placement
