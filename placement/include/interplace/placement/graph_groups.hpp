// Coarsening a graph into groups of nodes for the rl placer, as Placeto places TensorFlow's
// grouped graphs (docs/placers.md#grouping): the policy places groups, every node of a
// group goes to its group's device.
//
// group_nodes merges neighbours until at most `max_groups` groups are left, keeping the
// group graph acyclic: repeatedly the group with the least compute (forward+backward;
// ties: lower id) merges into one of its neighbours, preferring an edge that is the only
// output of the producer group or the only input of the consumer group (such a merge can
// never close a cycle), and among equals the neighbour with the least compute (groups
// stay balanced). Where no such edge exists it takes the cheapest neighbour whose merge
// closes no cycle (no other path between the two).
#pragma once

#include <vector>

#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placement.hpp"

namespace interplace::placement {

struct GraphGroups {
  // The ungroup map: the group of every node of the original graph.
  std::vector<int> group_of_node;
  // Per group, its nodes in ascending id.
  std::vector<std::vector<NodeId>> members;
  // The group graph: one node per group, ids a topological numbering (groups sorted by
  // their first node where the DAG allows), an edge where a tensor crosses from one group
  // to another. Node names "group:<first node's name>", op "group"; FLOPs and parameter
  // counts are the members' sums; output_bytes as in `costs`.
  Graph graph;
  // Per group: forward, backward, input-gradient and parameter-state costs are the
  // members' sums; output_bytes is the bytes of the distinct tensors that leave the group
  // (a member's output counted once however many groups consume it), which the list
  // schedule charges on every edge out of the group. No tied-weight replicas.
  NodeCosts costs;

  int group_count() const { return static_cast<int>(members.size()); }
};

// Throws invalid_input when max_groups < 1 or the costs do not match the graph. With
// max_groups >= the node count every node is its own group (group i = node i).
GraphGroups group_nodes(const Graph& graph, const NodeCosts& costs, int max_groups);

// The order of the group decisions: `order` (of the original nodes) restricted to each
// group's first node in it, i.e. the groups by their first appearance in the order.
Order group_order(const GraphGroups& groups, const Order& order);

// Every node on its group's device.
Placement ungroup_placement(const GraphGroups& groups, const Placement& group_placement);

}  // namespace interplace::placement
