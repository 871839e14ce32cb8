// Traversal orders: the sequence in which a placer takes its decisions. Every order is a
// permutation of the node ids. Ties are broken as docs/orders.md says: roots are the
// unvisited nodes in ascending id, successors are visited in insertion order, which makes
// the DFS and BFS orders equal to networkx's dfs_preorder_nodes, dfs_postorder_nodes and
// breadth-first search over all components on the same graph.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "interplace/placement/graph.hpp"

namespace interplace::placement {

using Order = std::vector<NodeId>;

enum class OrderKind {
  topo,           // Kahn, FIFO queue seeded with the sources in ascending id
  topo_rev,       // reverse of topo
  dfs_pre,        // depth-first, emit on first visit
  dfs_post,       // depth-first, emit on finish
  dfs_pre_rev,    // reverse of dfs_pre
  dfs_post_rev,   // reverse of dfs_post (a topological order)
  bfs,            // breadth-first from each unvisited root, emit on discovery
  bfs_rev,        // reverse of bfs
  lexical,        // by node name (byte order)
  lexical_rev,    // reverse of lexical
  random,         // seeded random permutation
  random_topo,    // Kahn with seeded random choice among the ready nodes
  critical_path,  // Kahn, ready node with the largest bottom level first (ties: lower id)
  // The traversal-order study's orders (networkx 2.4 semantics, docs/orders.md):
  topo_lifo,      // Kahn with a LIFO stack of ready nodes (networkx 2.4 topological_sort)
  topo_lifo_rev,  // reverse of topo_lifo (the study's reversed_topo)
  lexical_topo,   // Kahn taking the ready node with the smallest name
  bfs_by_name     // bfs_edges from each source in name order, first occurrences kept
};

// Names as used on the command line and in result files: "topo", "dfs-post-rev", ...
const std::vector<std::string>& order_names();
std::string to_string(OrderKind kind);
// A one-line definition (docs/orders.md has the full ones).
std::string order_definition(OrderKind kind);
// Throws invalid_input for an unknown name, listing the valid ones.
OrderKind order_by_name(std::string_view name);

struct OrderOptions {
  uint64_t seed = 0;  // random, random-topo
  // critical-path: one non-negative cost per node (e.g. forward+backward seconds); when
  // empty, forward plus backward FLOPs.
  std::vector<double> node_cost = {};
};

Order compute_order(const Graph& graph, OrderKind kind, const OrderOptions& options = {});

// Orders that are one order on this graph: for each of `kinds`, the index in `kinds` of the
// first order that gives `graph` the same node sequence (with `options`), or -1 when it is
// the first of its sequence. Seeded orders (random, random-topo) are never merged: their
// sequence changes with the seed. A study counts each distinct sequence once (on chains
// dfs-post and topo-lifo-rev always coincide: docs/orders.md).
std::vector<int> same_sequence_as(const Graph& graph, const std::vector<OrderKind>& kinds,
                                  const OrderOptions& options = {});

// The individual orders, for callers that want one directly.
Order topological_order(const Graph& graph);
Order dfs_preorder(const Graph& graph);
Order dfs_postorder(const Graph& graph);
Order bfs_order(const Graph& graph);
Order lexical_order(const Graph& graph);
Order random_order(const Graph& graph, uint64_t seed);
Order random_topological_order(const Graph& graph, uint64_t seed);
Order critical_path_order(const Graph& graph, std::span<const double> node_cost);
Order topological_order_lifo(const Graph& graph);
Order lexical_topological_order(const Graph& graph);
Order bfs_by_name_order(const Graph& graph);
// Longest cost-weighted path from each node to a sink, the node's own cost included.
std::vector<double> bottom_levels(const Graph& graph, std::span<const double> node_cost);

bool is_permutation_of_nodes(const Graph& graph, std::span<const NodeId> order);
bool is_topological(const Graph& graph, std::span<const NodeId> order);
// Throws invalid_input unless `order` is a permutation of the graph's node ids.
void require_valid_order(const Graph& graph, std::span<const NodeId> order);

}  // namespace interplace::placement
