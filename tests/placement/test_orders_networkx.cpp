// The study's orders against networkx 2.4's algorithms, transcribed line by line from its
// Python source into C++ below (networkx 2.4 does not install on today's Python). The
// transcriptions work on node names and an insertion-ordered adjacency, as a networkx
// DiGraph built by adding the nodes in id order and then their out-edges does, and share
// no code with placement/src/orders.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "graph_fixtures.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::placement {
namespace {

using Names = std::vector<std::string>;

// A networkx DiGraph's state: nodes in insertion order, G[u] in edge insertion order.
struct NxDiGraph {
  Names nodes;
  std::map<std::string, Names> succ;
  std::map<std::string, int> in_degree;
};

NxDiGraph to_nx(const Graph& graph) {
  NxDiGraph g;
  for (const Node& node : graph.nodes()) {
    g.nodes.push_back(node.name);
    g.succ[node.name];
    g.in_degree[node.name] = 0;
  }
  for (const Node& node : graph.nodes()) {
    for (NodeId child : node.successors) {
      g.succ[node.name].push_back(graph.node(child).name);
      ++g.in_degree[graph.node(child).name];
    }
  }
  return g;
}

// networkx 2.4 dag.topological_sort.
Names nx_topological_sort(const NxDiGraph& g) {
  std::map<std::string, int> indegree_map;
  Names zero_indegree;
  for (const std::string& v : g.nodes) {
    if (g.in_degree.at(v) > 0) indegree_map[v] = g.in_degree.at(v);
    if (g.in_degree.at(v) == 0) zero_indegree.push_back(v);
  }
  Names out;
  while (!zero_indegree.empty()) {
    const std::string node = zero_indegree.back();  // node = zero_indegree.pop()
    zero_indegree.pop_back();
    for (const std::string& child : g.succ.at(node)) {
      indegree_map[child] -= 1;
      if (indegree_map[child] == 0) {
        zero_indegree.push_back(child);
        indegree_map.erase(child);
      }
    }
    out.push_back(node);  // yield node
  }
  return out;
}

// networkx 2.4 dag.lexicographical_topological_sort with key=None: a heapq of
// (key(node), node) tuples.
Names nx_lexicographical_topological_sort(const NxDiGraph& g) {
  using Entry = std::pair<std::string, std::string>;
  std::map<std::string, int> indegree_map;
  std::vector<Entry> zero_indegree;
  for (const std::string& v : g.nodes) {
    if (g.in_degree.at(v) > 0) indegree_map[v] = g.in_degree.at(v);
    if (g.in_degree.at(v) == 0) zero_indegree.emplace_back(v, v);
  }
  std::make_heap(zero_indegree.begin(), zero_indegree.end(), std::greater<>());  // heapify
  Names out;
  while (!zero_indegree.empty()) {
    std::pop_heap(zero_indegree.begin(), zero_indegree.end(), std::greater<>());  // heappop
    const std::string node = zero_indegree.back().second;
    zero_indegree.pop_back();
    for (const std::string& child : g.succ.at(node)) {
      indegree_map[child] -= 1;
      if (indegree_map[child] == 0) {
        zero_indegree.emplace_back(child, child);
        std::push_heap(zero_indegree.begin(), zero_indegree.end(), std::greater<>());
        indegree_map.erase(child);
      }
    }
    out.push_back(node);
  }
  return out;
}

// networkx 2.4 depth_first_search.dfs_labeled_edges(G) (source=None: every node in G
// order as a start), as (u, v, direction) triples.
std::vector<std::tuple<std::string, std::string, std::string>> nx_dfs_labeled_edges(
    const NxDiGraph& g) {
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  std::set<std::string> visited;
  for (const std::string& start : g.nodes) {
    if (visited.count(start)) continue;
    out.emplace_back(start, start, "forward");
    visited.insert(start);
    struct Frame {
      std::string parent;
      size_t next;  // iter(G[parent])
    };
    std::vector<Frame> stack = {{start, 0}};
    while (!stack.empty()) {
      Frame& top = stack.back();
      const std::string parent = top.parent;
      const Names& children = g.succ.at(parent);
      if (top.next < children.size()) {  // child = next(children)
        const std::string child = children[top.next++];
        if (visited.count(child)) {
          out.emplace_back(parent, child, "nontree");
        } else {
          out.emplace_back(parent, child, "forward");
          visited.insert(child);
          stack.push_back({child, 0});  // depth_limit = len(G) never binds
        }
      } else {  // StopIteration
        stack.pop_back();
        if (!stack.empty()) out.emplace_back(stack.back().parent, parent, "reverse");
      }
    }
    out.emplace_back(start, start, "reverse");
  }
  return out;
}

Names nx_dfs_nodes(const NxDiGraph& g, const std::string& direction) {
  Names out;
  for (const auto& [u, v, d] : nx_dfs_labeled_edges(g)) {
    if (d == direction) out.push_back(v);
  }
  return out;
}

// networkx 2.4 breadth_first_search.generic_bfs_edges(G, source, G.neighbors).
std::vector<std::pair<std::string, std::string>> nx_bfs_edges(const NxDiGraph& g,
                                                              const std::string& source) {
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> visited = {source};
  struct Entry {
    std::string parent;
    size_t next;
  };
  std::deque<Entry> queue = {{source, 0}};
  while (!queue.empty()) {
    Entry& front = queue.front();
    const Names& children = g.succ.at(front.parent);
    if (front.next < children.size()) {
      const std::string child = children[front.next++];
      if (!visited.count(child)) {
        out.emplace_back(front.parent, child);
        visited.insert(child);
        queue.push_back({child, 0});
      }
    } else {
      queue.pop_front();
    }
  }
  return out;
}

// The study's bfs: sources sorted by name, [source] + targets of bfs_edges, duplicates
// dropped keeping the first.
Names study_bfs(const NxDiGraph& g) {
  Names sources;
  for (const std::string& v : g.nodes) {
    if (g.in_degree.at(v) == 0) sources.push_back(v);
  }
  std::sort(sources.begin(), sources.end());
  Names all;
  for (const std::string& source : sources) {
    all.push_back(source);
    for (const auto& [u, v] : nx_bfs_edges(g, source)) all.push_back(v);
  }
  Names out;
  std::set<std::string> seen;
  for (const std::string& v : all) {
    if (seen.insert(v).second) out.push_back(v);
  }
  return out;
}

Names names_of(const Graph& graph, const Order& order) {
  Names out;
  for (NodeId id : order) out.push_back(graph.node(id).name);
  return out;
}

Names order_names_of(const Graph& graph, const char* order) {
  return names_of(graph, compute_order(graph, order_by_name(order)));
}

void expect_matches_networkx(const Graph& graph) {
  const NxDiGraph g = to_nx(graph);
  Names topo = nx_topological_sort(g);
  EXPECT_EQ(order_names_of(graph, "topo-lifo"), topo) << graph.name();
  std::reverse(topo.begin(), topo.end());
  EXPECT_EQ(order_names_of(graph, "topo-lifo-rev"), topo) << graph.name();
  EXPECT_EQ(order_names_of(graph, "lexical-topo"), nx_lexicographical_topological_sort(g))
      << graph.name();
  EXPECT_EQ(order_names_of(graph, "dfs-pre"), nx_dfs_nodes(g, "forward")) << graph.name();
  EXPECT_EQ(order_names_of(graph, "dfs-post"), nx_dfs_nodes(g, "reverse")) << graph.name();
  EXPECT_EQ(order_names_of(graph, "bfs-by-name"), study_bfs(g)) << graph.name();
  Names alpha = g.nodes;
  std::sort(alpha.begin(), alpha.end());
  EXPECT_EQ(order_names_of(graph, "lexical"), alpha) << graph.name();
}

// Worked by hand from the definitions in docs/orders.md.
TEST(StudyOrders, Diamond) {
  const Graph graph = testing::diamond();  // 0 -> {1, 2} -> 3
  auto order = [&](const char* name) { return compute_order(graph, order_by_name(name)); };
  // stack [0] -> pop 0, push 1, 2 -> pop 2 (3 still waits for 1) -> pop 1, push 3 -> pop 3
  EXPECT_EQ(order("topo-lifo"), (Order{0, 2, 1, 3}));
  EXPECT_EQ(order("topo-lifo-rev"), (Order{3, 1, 2, 0}));
  EXPECT_EQ(order("lexical-topo"), (Order{0, 1, 2, 3}));  // n0 n1 n2 n3
  EXPECT_EQ(order("bfs-by-name"), (Order{0, 1, 2, 3}));
}

TEST(StudyOrders, TwoComponentsWithSkip) {
  // 0 input -> 1 block.conv -> 2 block.bn -> 3 add -> 6 head, 0 -> 3; 4 aux.input -> 5
  const Graph graph = testing::two_components_with_skip();
  auto order = [&](const char* name) { return compute_order(graph, order_by_name(name)); };
  // stack [0, 4] -> 4 (frees 5) -> 5 -> 0 (frees 1; 3 waits for 2) -> 1 -> 2 (frees 3) -> 3 -> 6
  EXPECT_EQ(order("topo-lifo"), (Order{4, 5, 0, 1, 2, 3, 6}));
  EXPECT_EQ(order("topo-lifo-rev"), (Order{6, 3, 2, 1, 0, 5, 4}));
  // ready {aux.input, input}: aux.input < input, then aux.linear; input; block.conv;
  // block.bn; add; head
  EXPECT_EQ(order("lexical-topo"), (Order{4, 5, 0, 1, 2, 3, 6}));
  // sources by name: aux.input (4), input (0); bfs from 4: 5; from 0: 1, 3, then 2, 6
  EXPECT_EQ(order("bfs-by-name"), (Order{4, 5, 0, 1, 3, 2, 6}));
}

// Two sources that reach a shared node: the second search finds it again (a fresh
// visited set per source) and the duplicate is dropped.
TEST(StudyOrders, BfsByNameDropsNodesReachedFromAnEarlierSource) {
  // n0 -> n2 -> n3, n1 -> n3 -> n4 ... names n0..n4; sources n0, n1
  const Graph graph = testing::graph_from_inputs({{}, {}, {0}, {1, 2}, {3}});
  EXPECT_EQ(compute_order(graph, order_by_name("bfs-by-name")), (Order{0, 2, 3, 4, 1}));
  EXPECT_EQ(compute_order(graph, order_by_name("topo-lifo")), (Order{1, 0, 2, 3, 4}));
}

TEST(StudyOrders, TopoLifoIsTopologicalAndItsReverseIsNot) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Graph graph = testing::random_dag(40, 0.1, seed, 4);
    EXPECT_TRUE(is_topological(graph, compute_order(graph, OrderKind::topo_lifo)));
    EXPECT_TRUE(is_topological(graph, compute_order(graph, OrderKind::lexical_topo)));
    EXPECT_TRUE(is_permutation_of_nodes(graph, compute_order(graph, OrderKind::bfs_by_name)));
  }
}

TEST(StudyOrders, MatchNetworkx24OnHandBuiltAndRandomDags) {
  expect_matches_networkx(testing::diamond());
  expect_matches_networkx(testing::two_components_with_skip());
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    // Several sources (low edge probability) and names n0..n59, whose byte order differs
    // from the id order (n10 < n2).
    expect_matches_networkx(
        testing::random_dag(60, 0.05 + 0.01 * static_cast<double>(seed % 5), seed, 3));
  }
}

TEST(StudyOrders, MatchNetworkx24OnZooModels) {
  for (const char* model : {"resnet20", "inception_v3", "gpt2-small"}) {
    expect_matches_networkx(build_model(model));
  }
}

}  // namespace
}  // namespace interplace::placement
