#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "graph_fixtures.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/graph_groups.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/rl_placer.hpp"
#include "interplace/placement/step_estimate.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::placement {
namespace {

CostModel roofline() {
  return CostModel({.name = "test",
                    .peak_flops_per_s = 1e11,
                    .memory_bandwidth_bytes_per_s = 1e10,
                    .memory_capacity_bytes = int64_t{1} << 36},
                   {.latency_s = 1e-6, .bandwidth_bytes_per_s = 1e10});
}

// Every node in exactly one group; the numbering topological (so the group graph is
// acyclic); the group graph's edges exactly the group pairs a tensor crosses; costs the
// members' sums, a leaving tensor counted once.
void expect_valid_grouping(const Graph& graph, const NodeCosts& costs, const GraphGroups& groups,
                           int max_groups) {
  const int n = graph.node_count();
  ASSERT_EQ(groups.group_count(), std::min(n, max_groups));
  ASSERT_EQ(groups.graph.node_count(), groups.group_count());
  ASSERT_EQ(groups.group_of_node.size(), static_cast<size_t>(n));
  std::vector<int> seen(static_cast<size_t>(n), 0);
  for (int g = 0; g < groups.group_count(); ++g) {
    const std::vector<NodeId>& members = groups.members[static_cast<size_t>(g)];
    ASSERT_FALSE(members.empty()) << "group " << g;
    EXPECT_TRUE(std::is_sorted(members.begin(), members.end()));
    for (NodeId v : members) {
      ++seen[static_cast<size_t>(v)];
      EXPECT_EQ(groups.group_of_node[static_cast<size_t>(v)], g);
    }
  }
  for (int v = 0; v < n; ++v) EXPECT_EQ(seen[static_cast<size_t>(v)], 1) << "node " << v;

  std::set<std::pair<int, int>> crossing;
  std::vector<int64_t> leaving(static_cast<size_t>(groups.group_count()), 0);
  double forward = 0.0;
  for (const Node& node : graph.nodes()) {
    const int from = groups.group_of_node[static_cast<size_t>(node.id)];
    bool leaves = false;
    for (NodeId consumer : node.successors) {
      const int to = groups.group_of_node[static_cast<size_t>(consumer)];
      if (to == from) continue;
      EXPECT_LT(from, to) << "edge " << node.id << " -> " << consumer << " goes back";
      crossing.insert({from, to});
      leaves = true;
    }
    if (leaves) leaving[static_cast<size_t>(from)] += costs.output_bytes[node.id];
    forward += costs.forward_s[node.id];
  }
  std::set<std::pair<int, int>> edges;
  double group_forward = 0.0;
  for (const Node& group : groups.graph.nodes()) {
    for (NodeId consumer : group.successors) edges.insert({group.id, consumer});
    EXPECT_EQ(groups.costs.output_bytes[group.id], leaving[static_cast<size_t>(group.id)]);
    group_forward += groups.costs.forward_s[group.id];
  }
  EXPECT_EQ(edges, crossing);
  EXPECT_NEAR(group_forward, forward, 1e-9 * forward);
}

TEST(GraphGroups, CoverEveryNodeOnceAndStayAcyclic) {
  for (uint64_t seed : {1, 2, 3, 4}) {
    const Graph graph = testing::random_dag(150, 0.06, seed, 4);
    const NodeCosts costs = roofline().node_costs(graph);
    for (int max_groups : {1, 2, 9, 40, 149, 150, 400}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(max_groups) + " groups");
      expect_valid_grouping(graph, costs, group_nodes(graph, costs, max_groups), max_groups);
    }
  }
  // A real op-level graph of thousands of nodes (fan-out and fan-in everywhere).
  const Graph nmt = build_model("nmt-small:3");
  const NodeCosts costs = roofline().node_costs(nmt);
  expect_valid_grouping(nmt, costs, group_nodes(nmt, costs, 60), 60);
}

// The merges run in the same sequence whatever the limit, so a finer grouping nests in a
// coarser one: every fine group lies within one coarse group (rl's coarse-to-fine levels
// rely on it: docs/placers.md#coarse-to-fine).
TEST(GraphGroups, FinerGroupingsNestInCoarserOnes) {
  auto expect_nested = [](const Graph& graph, int coarse_limit, int fine_limit) {
    SCOPED_TRACE(graph.name() + ": " + std::to_string(coarse_limit) + " in " +
                 std::to_string(fine_limit) + " groups");
    const NodeCosts costs = roofline().node_costs(graph);
    const GraphGroups coarse = group_nodes(graph, costs, coarse_limit);
    const GraphGroups fine = group_nodes(graph, costs, fine_limit);
    EXPECT_GT(fine.group_count(), coarse.group_count());
    for (const std::vector<NodeId>& members : fine.members) {
      for (NodeId v : members) {
        EXPECT_EQ(coarse.group_of_node[static_cast<size_t>(v)],
                  coarse.group_of_node[static_cast<size_t>(members.front())]);
      }
    }
  };
  for (uint64_t seed : {1, 2, 3}) {
    const Graph graph = testing::random_dag(150, 0.06, seed, 4);
    expect_nested(graph, 9, 27);
    expect_nested(graph, 40, 120);
    expect_nested(graph, 40, 149);
  }
  expect_nested(build_model("nmt-small:3"), 60, 180);
}

TEST(GraphGroups, AGraphNoLargerThanTheLimitIsLeftWhole) {
  const Graph graph = testing::random_dag(40, 0.1, 7, 3);
  const NodeCosts costs = roofline().node_costs(graph);
  const GraphGroups groups = group_nodes(graph, costs, 40);
  for (NodeId v = 0; v < 40; ++v) EXPECT_EQ(groups.group_of_node[static_cast<size_t>(v)], v);
  EXPECT_EQ(groups.costs.forward_s, costs.forward_s);
}

TEST(GraphGroups, AChainBecomesAChainOfContiguousGroups) {
  const Graph graph = testing::chain(30);
  const NodeCosts costs = roofline().node_costs(graph);
  const GraphGroups groups = group_nodes(graph, costs, 7);
  ASSERT_EQ(groups.group_count(), 7);
  for (const Node& group : groups.graph.nodes()) {
    if (group.id == 0) {
      EXPECT_TRUE(group.predecessors.empty());
    } else {
      EXPECT_EQ(group.predecessors, std::vector<NodeId>{group.id - 1});
    }
    const std::vector<NodeId>& members = groups.members[static_cast<size_t>(group.id)];
    EXPECT_EQ(members.back() - members.front() + 1, static_cast<int>(members.size()));
  }
  // Equal nodes: merging the cheapest first keeps the groups balanced (pairs, then pairs of
  // pairs: 30 nodes in six groups of 4 and one of 6).
  for (const std::vector<NodeId>& members : groups.members) {
    EXPECT_GE(members.size(), 2U);
    EXPECT_LE(members.size(), 6U);
  }
}

TEST(GraphGroups, UngroupingPutsEachNodeOnItsGroupsDevice) {
  const Graph graph = testing::random_dag(80, 0.08, 5, 3);
  const NodeCosts costs = roofline().node_costs(graph);
  const GraphGroups groups = group_nodes(graph, costs, 12);
  Placement by_group{.device_count = 3, .device_of_node = {}};
  for (int g = 0; g < groups.group_count(); ++g) by_group.device_of_node.push_back(g * 5 % 3);
  const Placement placement = ungroup_placement(groups, by_group);
  ASSERT_EQ(placement.device_of_node.size(), 80U);
  for (NodeId v = 0; v < 80; ++v) {
    EXPECT_EQ(placement.device_of_node[static_cast<size_t>(v)],
              groups.group_of_node[static_cast<size_t>(v)] * 5 % 3);
  }
  EXPECT_THROW(ungroup_placement(groups, Placement{.device_count = 3, .device_of_node = {0}}),
               Error);
}

TEST(GraphGroups, TheGroupOrderIsTheNodeOrderAtEachGroupsFirstNode) {
  const Graph graph = testing::random_dag(60, 0.08, 8, 3);
  const NodeCosts costs = roofline().node_costs(graph);
  const GraphGroups groups = group_nodes(graph, costs, 10);
  for (OrderKind kind : {OrderKind::topo, OrderKind::topo_rev, OrderKind::random}) {
    const Order order = compute_order(graph, kind, {.seed = 3});
    const Order by_group = group_order(groups, order);
    ASSERT_EQ(by_group.size(), 10U);
    std::vector<int> expected;
    for (NodeId v : order) {
      const int g = groups.group_of_node[static_cast<size_t>(v)];
      if (std::find(expected.begin(), expected.end(), g) == expected.end()) expected.push_back(g);
    }
    EXPECT_EQ(by_group, Order(expected.begin(), expected.end()));
  }
}

TEST(GraphGroups, BadLimitsFail) {
  const Graph graph = testing::chain(5);
  const NodeCosts costs = roofline().node_costs(graph);
  EXPECT_THROW(group_nodes(graph, costs, 0), Error);
  PlacementRequest request{.device_count = 3, .cost_model = roofline()};
  request.rl.episodes = 1;
  request.rl.groups = 2;  // fewer groups than devices
  EXPECT_THROW(place_rl(graph, topological_order(graph), request), Error);
  request.rl.groups = -1;
  EXPECT_THROW(place_rl(graph, topological_order(graph), request), Error);
}

// rl on a generated graph of thousands of nodes (nmt:13, 3808 nodes): with the default
// grouping a few episodes take well under a second (node by node, one episode took ~6 s
// before the incremental featurizer). The returned placement is the full graph's, and the
// log's best is its full-graph estimate.
TEST(RlGroups, PlacesAGraphOfThousandsOfNodesQuickly) {
  const Graph graph = build_model("nmt:13");
  ASSERT_GT(graph.node_count(), 3000);
  const CostModel cost_model = roofline();
  PlacementRequest request{.device_count = 4, .cost_model = cost_model};
  request.rl.episodes = 3;
  request.rl.fine_episodes = 1;
  RlTrainingLog log;
  request.rl_log = &log;
  const Placement placement = place_rl(graph, topological_order(graph), request);
  EXPECT_EQ(log.groups, RlOptions{}.groups);
  EXPECT_EQ(log.level_groups, (std::vector<int>{RlOptions{}.groups, 3 * RlOptions{}.groups}));
  EXPECT_EQ(log.episodes_run, 3);
  EXPECT_LT(log.wall_s, 10.0);
  ASSERT_EQ(placement.device_of_node.size(), static_cast<size_t>(graph.node_count()));
  const NodeCosts costs = cost_model.node_costs(graph);
  EXPECT_EQ(log.best_final_s, estimate_step_time_s(graph, costs, cost_model.link(), placement));
  // Never worse than the start or the greedy result, whatever the group-graph estimate said.
  EXPECT_LE(log.best_final_s, log.start_step_time_s);
  EXPECT_LE(log.best_final_s, log.greedy_step_time_s);
}

}  // namespace
}  // namespace interplace::placement
