#include <gtest/gtest.h>

#include <algorithm>

#include "graph_fixtures.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/orders.hpp"

namespace interplace::placement {
namespace {

Order order_of(const Graph& graph, const std::string& name, const OrderOptions& options = {}) {
  return compute_order(graph, order_by_name(name), options);
}

// Expected sequences below are worked out by hand from docs/orders.md's definitions (and agree
// with networkx's dfs_preorder_nodes / dfs_postorder_nodes / bfs_edges).
TEST(Orders, Diamond) {
  const Graph graph = testing::diamond();
  EXPECT_EQ(order_of(graph, "topo"), (Order{0, 1, 2, 3}));
  EXPECT_EQ(order_of(graph, "topo-rev"), (Order{3, 2, 1, 0}));
  EXPECT_EQ(order_of(graph, "dfs-pre"), (Order{0, 1, 3, 2}));
  EXPECT_EQ(order_of(graph, "dfs-post"), (Order{3, 1, 2, 0}));
  EXPECT_EQ(order_of(graph, "dfs-pre-rev"), (Order{2, 3, 1, 0}));
  EXPECT_EQ(order_of(graph, "dfs-post-rev"), (Order{0, 2, 1, 3}));
  EXPECT_EQ(order_of(graph, "bfs"), (Order{0, 1, 2, 3}));
  EXPECT_EQ(order_of(graph, "bfs-rev"), (Order{3, 2, 1, 0}));
}

TEST(Orders, TwoComponentsWithSkip) {
  const Graph graph = testing::two_components_with_skip();
  EXPECT_EQ(order_of(graph, "topo"), (Order{0, 4, 1, 5, 2, 3, 6}));
  EXPECT_EQ(order_of(graph, "topo-rev"), (Order{6, 3, 2, 5, 1, 4, 0}));
  EXPECT_EQ(order_of(graph, "dfs-pre"), (Order{0, 1, 2, 3, 6, 4, 5}));
  EXPECT_EQ(order_of(graph, "dfs-post"), (Order{6, 3, 2, 1, 0, 5, 4}));
  EXPECT_EQ(order_of(graph, "dfs-pre-rev"), (Order{5, 4, 6, 3, 2, 1, 0}));
  EXPECT_EQ(order_of(graph, "dfs-post-rev"), (Order{4, 5, 0, 1, 2, 3, 6}));
  EXPECT_EQ(order_of(graph, "bfs"), (Order{0, 1, 3, 2, 6, 4, 5}));
  EXPECT_EQ(order_of(graph, "bfs-rev"), (Order{5, 4, 6, 2, 3, 1, 0}));
  // add, aux.input, aux.linear, block.bn, block.conv, head, input
  EXPECT_EQ(order_of(graph, "lexical"), (Order{3, 4, 5, 2, 1, 6, 0}));
  EXPECT_EQ(order_of(graph, "lexical-rev"), (Order{0, 6, 1, 2, 5, 4, 3}));
}

// Expected sequences produced by networkx 3.6.1 on the same graph (61 edges, sources 0
// and 14): list(dfs_preorder_nodes(G)), list(dfs_postorder_nodes(G)), and [r] + the
// targets of bfs_edges(G, r) for each unvisited root r in ascending id.
TEST(Orders, MatchNetworkxOnARandomDag) {
  const Graph graph = testing::random_dag(30, 0.08, 2024, 3);
  ASSERT_EQ(graph.edge_count(), 61);
  EXPECT_EQ(dfs_preorder(graph),
            (Order{0,  1,  2,  4,  6,  7,  9,  10, 12, 13, 20, 21, 22, 24, 25,
                   27, 28, 29, 23, 11, 17, 19, 15, 16, 18, 26, 3,  5,  8,  14}));
  EXPECT_EQ(dfs_postorder(graph),
            (Order{7,  28, 29, 27, 25, 24, 22, 21, 23, 20, 13, 12, 10, 19, 17,
                   11, 9,  6,  4,  18, 16, 26, 15, 2,  1,  8,  5,  3,  0,  14}));
  EXPECT_EQ(bfs_order(graph), (Order{0,  1,  2,  3,  11, 15, 22, 4,  27, 5,  12, 13, 17, 19, 16,
                                     26, 29, 24, 25, 6,  7,  23, 28, 8,  20, 21, 18, 9,  10, 14}));
}

TEST(Orders, CriticalPathTakesLargestBottomLevelFirst) {
  const Graph graph = testing::two_components_with_skip();
  OrderOptions options;
  options.node_cost = {1, 5, 1, 1, 10, 1, 1};
  // Bottom levels: 9, 8, 3, 2, 11, 1, 1. Ready {0:9, 4:11} -> 4; {0, 5:1} -> 0;
  // {5, 1:8} -> 1; {5, 2:3} -> 2; {5, 3:2} -> 3; {5:1, 6:1} tie -> lower id 5, then 6.
  EXPECT_EQ(bottom_levels(graph, options.node_cost), (std::vector<double>{9, 8, 3, 2, 11, 1, 1}));
  EXPECT_EQ(order_of(graph, "critical-path", options), (Order{4, 0, 1, 2, 3, 5, 6}));
  options.node_cost = {1, 1};
  EXPECT_THROW(order_of(graph, "critical-path", options), Error);
  options.node_cost = {1, 5, 1, -1, 10, 1, 1};
  EXPECT_THROW(order_of(graph, "critical-path", options), Error);
}

TEST(Orders, CriticalPathDefaultsToFlops) {
  // Branch 1 is heavier than branch 2, so it goes first although both are ready together.
  Graph graph = testing::graph_from_inputs({{}, {0}, {0}, {1, 2}});
  EXPECT_EQ(order_of(graph, "critical-path"), (Order{0, 1, 2, 3}));
  const Graph heavy_second = [] {
    Graph g("g", 1);
    for (int i = 0; i < 4; ++i) {
      NodeSpec s;
      s.name = std::string("n").append(std::to_string(i));
      s.op = "op";
      s.forward_flops = (i == 2) ? 1000 : 1;
      if (i == 1 || i == 2) s.inputs = {0};
      if (i == 3) s.inputs = {1, 2};
      g.add_node(s);
    }
    return g;
  }();
  EXPECT_EQ(order_of(heavy_second, "critical-path"), (Order{0, 2, 1, 3}));
}

TEST(Orders, RandomOrdersAreSeededPermutations) {
  const Graph graph = testing::random_dag(60, 0.05, 11);
  for (const std::string name : {"random", "random-topo"}) {
    const Order a = order_of(graph, name, {.seed = 1, .node_cost = {}});
    const Order b = order_of(graph, name, {.seed = 1, .node_cost = {}});
    const Order c = order_of(graph, name, {.seed = 2, .node_cost = {}});
    EXPECT_EQ(a, b) << name;
    EXPECT_NE(a, c) << name;
    EXPECT_TRUE(is_permutation_of_nodes(graph, a)) << name;
  }
  EXPECT_FALSE(is_topological(graph, order_of(graph, "random", {.seed = 3, .node_cost = {}})));
}

TEST(Orders, UnknownNameListsValidNames) {
  try {
    order_by_name("dfs");
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_input);
    const std::string message = error.what();
    EXPECT_NE(message.find("'dfs'"), std::string::npos);
    for (const std::string& name : order_names()) {
      EXPECT_NE(message.find(name), std::string::npos) << name;
    }
  }
  EXPECT_EQ(order_names().size(), 17u);
  for (const std::string& name : order_names()) EXPECT_EQ(to_string(order_by_name(name)), name);
}

TEST(Orders, DeepChainDoesNotExhaustTheStack) {
  const Graph graph = testing::chain(200000, 1);
  const Order post = dfs_postorder(graph);
  ASSERT_EQ(post.size(), 200000u);
  EXPECT_EQ(post.front(), 199999);
  EXPECT_EQ(post.back(), 0);
}

TEST(Orders, PropertiesOnRandomDags) {
  const std::vector<std::string> topological = {"topo", "dfs-post-rev", "random-topo",
                                                "critical-path"};
  for (uint64_t seed = 1; seed <= 25; ++seed) {
    const Graph graph = testing::random_dag(static_cast<int>(5 + seed * 7), 0.1, seed);
    for (const std::string& name : order_names()) {
      const Order order = order_of(graph, name, {.seed = seed, .node_cost = {}});
      EXPECT_TRUE(is_permutation_of_nodes(graph, order)) << name << " seed " << seed;
      const bool must_be_topological =
          std::find(topological.begin(), topological.end(), name) != topological.end();
      if (must_be_topological) {
        EXPECT_TRUE(is_topological(graph, order)) << name << " seed " << seed;
      }
    }
    // Reverse orders are exact reverses of their forward counterparts.
    Order topo = order_of(graph, "topo");
    std::reverse(topo.begin(), topo.end());
    EXPECT_EQ(topo, order_of(graph, "topo-rev"));
    // Preorder puts every node before its DFS-tree children, so the first node is a root.
    EXPECT_EQ(order_of(graph, "dfs-pre").front(), 0);
  }
}

// Node ids of this suite's graphs are a topological numbering and a node's consumers are
// visited in ascending id: then DFS postorder is exactly the reverse of Kahn with a LIFO
// stack (docs/orders.md), so a study that asks for both runs one.
TEST(Orders, SameSequenceAsFindsOrdersThatCoincide) {
  const std::vector<OrderKind> kinds = {OrderKind::topo_lifo_rev, OrderKind::dfs_post,
                                        OrderKind::dfs_pre, OrderKind::random, OrderKind::random};
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Graph graph = testing::random_dag(25, 0.15, seed, 3);
    const std::vector<int> same = same_sequence_as(graph, kinds, {.seed = 7, .node_cost = {}});
    EXPECT_EQ(same[0], -1);
    EXPECT_EQ(same[1], 0) << "seed " << seed;  // dfs-post is topo-lifo-rev
    EXPECT_EQ(same[3], -1);
    EXPECT_EQ(same[4], -1);  // seeded orders are never merged, even with one seed
  }
  // On a chain every topological order is one: each later one points at the first.
  const std::vector<int> chain =
      same_sequence_as(testing::chain(6),
                       {OrderKind::topo, OrderKind::dfs_pre, OrderKind::bfs, OrderKind::topo_rev});
  EXPECT_EQ(chain, (std::vector<int>{-1, 0, 0, -1}));
}

TEST(Orders, ValidationHelpers) {
  const Graph graph = testing::diamond();
  EXPECT_TRUE(is_topological(graph, Order{0, 2, 1, 3}));
  EXPECT_FALSE(is_topological(graph, Order{0, 3, 1, 2}));
  EXPECT_FALSE(is_permutation_of_nodes(graph, Order{0, 1, 1, 3}));
  EXPECT_FALSE(is_permutation_of_nodes(graph, Order{0, 1, 2}));
  EXPECT_FALSE(is_permutation_of_nodes(graph, Order{0, 1, 2, 9}));
  EXPECT_THROW(require_valid_order(graph, Order{0, 1}), Error);
}

}  // namespace
}  // namespace interplace::placement
