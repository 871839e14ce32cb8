// Small hand-built graphs and seeded random DAGs shared by the placement tests.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/graph.hpp"

namespace interplace::placement::testing {

// Nodes n0..n{count-1}; `inputs[i]` lists node i's inputs (ids below i). Every node has
// output shape {1, 4} (16 bytes), `flops` forward FLOPs, twice that backward, and 10
// parameters.
Graph graph_from_inputs(const std::vector<std::vector<NodeId>>& inputs, int64_t flops = 100);

// 0 -> {1, 2} -> 3
Graph diamond();

// Two components with a skip connection, names chosen so lexical order differs from ids:
//   0 input -> 1 block.conv -> 2 block.bn -> 3 add -> 6 head, and 0 -> 3 (skip)
//   4 aux.input -> 5 aux.linear
Graph two_components_with_skip();

// A chain of `count` nodes.
Graph chain(int count, int64_t flops = 100);

// A seeded random DAG: node i takes each earlier node as input with probability
// `edge_probability` (at most `max_inputs` inputs); FLOPs, parameters and bytes vary.
Graph random_dag(int count, double edge_probability, uint64_t seed, int max_inputs = 4);

// A cost model whose node times are exactly `forward_s` / `backward_s` (through a
// profile), with `link` and `capacity_bytes` per device (SGD with momentum).
CostModel timed_cost_model(const Graph& graph, const std::vector<double>& forward_s,
                           const std::vector<double>& backward_s, LinkSpec link = {},
                           int64_t capacity_bytes = int64_t{1} << 40);

}  // namespace interplace::placement::testing
