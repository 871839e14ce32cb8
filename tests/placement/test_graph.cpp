#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "graph_fixtures.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/graph_export.hpp"
#include "interplace/placement/graph_stats.hpp"

namespace interplace::placement {
namespace {

NodeSpec spec(std::string name, std::vector<NodeId> inputs = {}) {
  NodeSpec s;
  s.name = std::move(name);
  s.op = "conv2d";
  s.inputs = std::move(inputs);
  s.output_shape = {2, 3};
  return s;
}

ErrorKind error_kind_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.kind();
  }
  ADD_FAILURE() << "expected an interplace::Error";
  return ErrorKind::runtime;
}

TEST(Graph, IdsAreDenseAndEdgesFollowInputs) {
  Graph graph("g", 8);
  EXPECT_EQ(graph.add_node(spec("a")), 0);
  EXPECT_EQ(graph.add_node(spec("b", {0})), 1);
  EXPECT_EQ(graph.add_node(spec("c", {0})), 2);
  EXPECT_EQ(graph.add_node(spec("d", {2, 1})), 3);
  EXPECT_EQ(graph.node_count(), 4);
  EXPECT_EQ(graph.edge_count(), 4);
  EXPECT_EQ(graph.batch_size(), 8);
  EXPECT_EQ(graph.node(0).successors, (std::vector<NodeId>{1, 2}));
  EXPECT_EQ(graph.node(3).inputs, (std::vector<NodeId>{2, 1}));
  EXPECT_EQ(graph.node(3).predecessors, (std::vector<NodeId>{2, 1}));
  EXPECT_EQ(graph.sources(), (std::vector<NodeId>{0}));
  EXPECT_EQ(graph.sinks(), (std::vector<NodeId>{3}));
  EXPECT_EQ(graph.id_of("c"), 2);
  EXPECT_FALSE(graph.find("zzz").has_value());
}

TEST(Graph, RepeatedInputKeepsArgumentsButMakesOneEdge) {
  Graph graph;
  graph.add_node(spec("x"));
  graph.add_node(spec("double", {0, 0}));
  EXPECT_EQ(graph.node(1).inputs, (std::vector<NodeId>{0, 0}));
  EXPECT_EQ(graph.node(1).predecessors, (std::vector<NodeId>{0}));
  EXPECT_EQ(graph.node(0).successors, (std::vector<NodeId>{1}));
  EXPECT_EQ(graph.edge_count(), 1);
}

TEST(Graph, OutputBytesDefaultToFp32ElementsUnlessGiven) {
  Graph graph;
  graph.add_node(spec("x"));  // {2, 3}
  NodeSpec half = spec("half");
  half.output_bytes = 12;
  graph.add_node(half);
  EXPECT_EQ(graph.node(0).output_bytes, 24);
  EXPECT_EQ(graph.node(1).output_bytes, 12);
}

TEST(Graph, RejectsBadNodes) {
  Graph graph;
  graph.add_node(spec("a"));
  EXPECT_EQ(error_kind_of([&] { graph.add_node(spec("a")); }), ErrorKind::invalid_input);
  EXPECT_EQ(error_kind_of([&] { graph.add_node(spec("b", {1})); }), ErrorKind::invalid_input);
  EXPECT_EQ(error_kind_of([&] { graph.add_node(spec("b", {-1})); }), ErrorKind::invalid_input);
  EXPECT_EQ(error_kind_of([&] { graph.add_node(spec("")); }), ErrorKind::invalid_input);
  EXPECT_EQ(error_kind_of([&] { graph.add_node(spec("tab\there")); }), ErrorKind::invalid_input);
  NodeSpec no_op = spec("no_op");
  no_op.op.clear();
  EXPECT_THROW(graph.add_node(no_op), Error);
  NodeSpec negative = spec("negative");
  negative.forward_flops = -1;
  EXPECT_THROW(graph.add_node(negative), Error);
  NodeSpec too_many = spec("too_many");  // the parameter-gradient part exceeds the whole
  too_many.backward_flops = 10;
  too_many.parameter_grad_flops = 11;
  EXPECT_THROW(graph.add_node(too_many), Error);
  NodeSpec bad_shape = spec("bad_shape");
  bad_shape.output_shape = {2, -3};
  EXPECT_THROW(graph.add_node(bad_shape), Error);
  NodeSpec infinite = spec("infinite");
  infinite.attributes["scale"] = std::numeric_limits<double>::infinity();
  EXPECT_THROW(graph.add_node(infinite), Error);
  EXPECT_EQ(graph.node_count(), 1);  // failed adds leave the graph unchanged
  EXPECT_EQ(error_kind_of([&] { (void)graph.node(5); }), ErrorKind::invalid_input);
  EXPECT_EQ(error_kind_of([&] { (void)graph.id_of("missing"); }), ErrorKind::invalid_input);
  EXPECT_THROW(Graph("g", 0), Error);
}

TEST(Graph, ErrorMessagesNameTheOffendingValue) {
  Graph graph;
  graph.add_node(spec("layer1.conv"));
  try {
    graph.add_node(spec("layer1.conv"));
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("layer1.conv"), std::string::npos);
  }
  try {
    graph.add_node(spec("x", {7}));
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("7"), std::string::npos);
  }
}

TEST(GraphExport, JsonIsExactAndEscaped) {
  Graph graph("quote\"name", 2);
  NodeSpec a = spec("in\\put");
  a.forward_flops = 5;
  a.attributes["kernel"] = int64_t{3};
  a.attributes["eps"] = 0.5;
  a.attributes["mode"] = std::string("same\npad");
  graph.add_node(a);
  NodeSpec b = spec("out", {0});
  b.parameter_count = 7;
  b.backward_flops = 9;
  graph.add_node(b);
  const std::string expected =
      "{\"format\": \"interplace-graph\", \"format_version\": 1, "
      "\"name\": \"quote\\\"name\", \"batch_size\": 2, \"node_count\": 2, \"edge_count\": 1,\n"
      " \"nodes\": [\n"
      "  {\"id\": 0, \"name\": \"in\\\\put\", \"op\": \"conv2d\", \"inputs\": [], "
      "\"successors\": [1], \"output_shape\": [2, 3], \"forward_flops\": 5, "
      "\"backward_flops\": 0, \"parameter_grad_flops\": 0, \"parameter_count\": 0, "
      "\"output_bytes\": 24, "
      "\"attributes\": {\"eps\": 0.5, \"kernel\": 3, \"mode\": \"same\\npad\"}},\n"
      "  {\"id\": 1, \"name\": \"out\", \"op\": \"conv2d\", \"inputs\": [0], "
      "\"successors\": [], \"output_shape\": [2, 3], \"forward_flops\": 0, "
      "\"backward_flops\": 9, \"parameter_grad_flops\": 0, \"parameter_count\": 7, "
      "\"output_bytes\": 24, "
      "\"attributes\": {}}\n"
      " ],\n"
      " \"edges\": [[0, 1]]}\n";
  EXPECT_EQ(to_json(graph), expected);
}

TEST(GraphExport, DotHasNodesEdgesAndDeviceClusters) {
  const Graph graph = testing::two_components_with_skip();
  const std::string dot = to_dot(graph);
  EXPECT_NE(dot.find("digraph \"two_components\" {"), std::string::npos);
  EXPECT_NE(dot.find("n0 -> n3;"), std::string::npos);
  EXPECT_NE(dot.find("n4 -> n5;"), std::string::npos);
  EXPECT_NE(dot.find("label=\"block.conv\\nop [2, 8]\""), std::string::npos);
  const std::string clustered = to_dot(graph, {0, 0, 1, 1, 0, 0, 1});
  EXPECT_NE(clustered.find("subgraph cluster_device1"), std::string::npos);
  EXPECT_THROW(to_dot(graph, {0, 1}), Error);
}

TEST(GraphStats, HandBuiltGraph) {
  const Graph graph = testing::two_components_with_skip();
  // Levels: input 1, conv 2, bn 3, add 4, head 5, aux.input 1, aux.linear 2.
  const std::vector<double> cost = {1, 2, 3, 4, 5, 6, 7};
  const GraphStats stats = compute_graph_stats(graph, cost);
  EXPECT_EQ(stats.node_count, 7);
  EXPECT_EQ(stats.edge_count, 6);
  EXPECT_EQ(stats.depth, 5);
  EXPECT_EQ(stats.max_width, 2);
  // Out-degrees of nodes with successors: 2, 1, 1, 1, 1.
  EXPECT_DOUBLE_EQ(stats.mean_branching_factor, 6.0 / 5.0);
  EXPECT_DOUBLE_EQ(stats.critical_path_cost_share, 17.0 / 28.0);
  EXPECT_EQ(depth_levels(graph), (std::vector<int>{1, 2, 3, 4, 1, 2, 5}));
}

TEST(GraphStats, ChainAndDiamond) {
  const GraphStats chain = compute_graph_stats(testing::chain(10));
  EXPECT_EQ(chain.depth, 10);
  EXPECT_EQ(chain.max_width, 1);
  EXPECT_DOUBLE_EQ(chain.mean_branching_factor, 1.0);
  EXPECT_DOUBLE_EQ(chain.critical_path_cost_share, 1.0);
  const GraphStats diamond = compute_graph_stats(testing::diamond());
  EXPECT_EQ(diamond.depth, 3);
  EXPECT_EQ(diamond.max_width, 2);
  EXPECT_DOUBLE_EQ(diamond.mean_branching_factor, 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(diamond.critical_path_cost_share, 0.75);
  EXPECT_THROW(compute_graph_stats(testing::diamond(), std::vector<double>{1.0}), Error);
}

}  // namespace
}  // namespace interplace::placement
