// Graph files (graph_file.hpp): the zoo round trip, batch sizes, opaque nodes, and a table of
// bad files, each refused with an error that names what is wrong.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../kernels/expect_invalid.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/shapes_only.hpp"
#include "interplace/placement/graph_export.hpp"
#include "interplace/placement/graph_file.hpp"
#include "interplace/placement/layer_factory.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::placement {
namespace {

using Json = nlohmann::json;
using kernels::testing::throws_invalid;

// A node whose costs are its kernel layer's, as the zoo builds them.
NodeId add_layer(Graph& graph, const std::string& name, const std::string& op,
                 Attributes attributes, std::vector<NodeId> inputs) {
  const kernels::ShapesOnlyScope shapes_only;
  const auto layer = make_layer(op, attributes);
  std::vector<Shape> shapes;
  for (NodeId id : inputs) shapes.push_back(graph.node(id).output_shape);
  NodeSpec spec;
  spec.name = name;
  spec.op = op;
  spec.output_shape = layer->output_shape(shapes);
  const kernels::FlopCount flops = layer->flops(shapes);
  spec.forward_flops = flops.forward_flops;
  spec.backward_flops = flops.backward_flops;
  spec.parameter_grad_flops = flops.parameter_grad_flops;
  spec.parameter_count = layer->parameter_count();
  spec.attributes = std::move(attributes);
  spec.inputs = std::move(inputs);
  return graph.add_node(std::move(spec));
}

// x [2,1,4,4] -> conv -> relu -> pool -> fc [2,3]: ids 0..4.
Graph small_graph() {
  Graph g("small", 2);
  NodeSpec input;
  input.name = "x";
  input.op = "input";
  input.output_shape = {2, 1, 4, 4};
  const NodeId x = g.add_node(input);
  const NodeId conv = add_layer(g, "conv", "conv2d",
                                {{"in_channels", int64_t{1}},
                                 {"out_channels", int64_t{2}},
                                 {"kernel", int64_t{3}},
                                 {"padding", int64_t{1}}},
                                {x});
  const NodeId relu = add_layer(g, "relu", "relu", {}, {conv});
  const NodeId pool = add_layer(g, "pool", "global_avg_pool", {}, {relu});
  add_layer(g, "fc", "linear", {{"in_features", int64_t{2}}, {"out_features", int64_t{3}}}, {pool});
  return g;
}

Json small_json() {
  return Json::parse(to_json(small_graph()));
}

GraphFile parse(const Json& json) {
  return parse_graph_file(json.dump(), "test.json");
}

TEST(GraphFile, EveryZooModelRoundTripsExactly) {
  for (const ModelInfo& info : model_catalog()) {
    const Graph graph = build_model(info.name, {.batch_size = 2});
    const std::string text = to_json(graph, info.family);
    const GraphFile file = parse_graph_file(text, info.name);
    EXPECT_EQ(file.family, info.family);
    EXPECT_EQ(file.graph.node_count(), graph.node_count()) << info.name;
    EXPECT_EQ(file.graph.total_parameter_count(), graph.total_parameter_count()) << info.name;
    EXPECT_EQ(file.graph.total_forward_flops(), graph.total_forward_flops()) << info.name;
    EXPECT_EQ(file.graph.total_backward_flops(), graph.total_backward_flops()) << info.name;
    EXPECT_EQ(to_json(file.graph, file.family), text) << info.name;
  }
}

TEST(GraphFile, RebatchingEqualsBuildingAtThatBatch) {
  for (const char* model : {"resnet20", "inception_v3-small", "gpt-mini", "bert-mini",
                            "enas-rnn-small", "nmt-small", "nasnet_a_mobile-small"}) {
    const Graph one = parse_graph_file(to_json(build_model(model, {.batch_size = 1}))).graph;
    EXPECT_EQ(to_json(rebatch_graph(one, 6)), to_json(build_model(model, {.batch_size = 6})))
        << model;
  }
}

TEST(GraphFile, NodesInAnyOrderAreSortedTopologically) {
  Json json = small_json();
  std::reverse(json["nodes"].begin(), json["nodes"].end());
  EXPECT_EQ(to_json(parse(json).graph), to_json(small_graph()));
  // Ids that are not topological: the consumers come first.
  Json permuted = small_json();
  const std::vector<int> new_id = {4, 3, 2, 1, 0};
  for (Json& node : permuted["nodes"]) {
    node["id"] = new_id[node["id"].get<size_t>()];
    for (Json& input : node["inputs"]) input = new_id[input.get<size_t>()];
    node.erase("successors");
  }
  for (Json& edge : permuted["edges"]) {
    edge = Json::array({new_id[edge[0].get<size_t>()], new_id[edge[1].get<size_t>()]});
  }
  const Graph graph = parse(permuted).graph;
  EXPECT_EQ(to_json(graph), to_json(small_graph()));
}

TEST(GraphFile, OpaqueNodesKeepTheirCostsAndScaleWithTheBatch) {
  Json json = small_json();
  Json& relu = json["nodes"][2];
  relu["op"] = "opaque";
  relu["attributes"] = {{"source_op", "hardswish"}};
  relu["forward_flops"] = 4 * 64;
  relu["backward_flops"] = 8 * 64;
  relu["parameter_count"] = 5;
  const Graph graph = parse(json).graph;
  EXPECT_EQ(graph.node(2).forward_flops, 256);
  EXPECT_EQ(graph.total_parameter_count(), small_graph().total_parameter_count() + 5);
  EXPECT_EQ(opaque_nodes(graph), std::vector<NodeId>{2});
  EXPECT_EQ(opaque_summary(graph), "1 node has no kernel layer: hardswish ('relu')");
  const Graph bigger = rebatch_graph(graph, 8);
  EXPECT_EQ(bigger.node(2).forward_flops, 4 * 256);
  EXPECT_EQ(bigger.node(2).output_bytes, 4 * graph.node(2).output_bytes);
  EXPECT_EQ(bigger.node(2).parameter_count, 5);
  EXPECT_EQ(bigger.node(4).output_shape, (Shape{8, 3}));
  EXPECT_TRUE(opaque_summary(small_graph()).empty());
}

TEST(GraphFile, ModulePathsAreKeptThroughReadingRebatchingAndWriting) {
  Json json = small_json();
  json["nodes"][1]["module"] = "features.0.conv";
  json["nodes"][2]["module"] = "features.0";
  const Graph graph = parse(json).graph;
  EXPECT_EQ(graph.node(1).module, "features.0.conv");
  EXPECT_EQ(graph.node(2).module, "features.0");
  EXPECT_EQ(graph.node(3).module, "");
  const Graph bigger = rebatch_graph(graph, 8);
  EXPECT_EQ(bigger.node(1).module, "features.0.conv");
  const std::string text = to_json(graph);
  EXPECT_NE(text.find("\"module\": \"features.0.conv\""), std::string::npos);
  EXPECT_EQ(to_json(parse_graph_file(text).graph), text);
  // Without modules (the zoo) the export has no "module" key.
  EXPECT_EQ(to_json(small_graph()).find("\"module\""), std::string::npos);
}

struct BadFile {
  const char* name;
  std::function<std::string()> text;
  std::vector<std::string_view> fragments;
};

std::function<std::string()> edited(std::function<void(Json&)> edit) {
  return [edit] {
    Json json = small_json();
    edit(json);
    return json.dump();
  };
}

std::function<std::string()> raw(std::string text) {
  return [text] { return text; };
}

const std::vector<BadFile>& bad_files() {
  static const std::vector<BadFile> cases = {
      {"not_json", raw("{\"format\": "), {"test.json", "not valid JSON"}},
      {"not_an_object", raw("[1, 2]"), {"top level: must be a JSON object"}},
      {"too_deep",
       raw(std::string(100, '[') + std::string(100, ']')),
       {"line 1", "nested more than 16 levels deep", "before parsing"}},
      {"wrong_format",
       edited([](Json& j) { j["format"] = "onnx"; }),
       {"format must be 'interplace-graph'", "'onnx'"}},
      {"newer_version",
       edited([](Json& j) { j["format_version"] = 2; }),
       {"format_version 2 is not one this interplace reads (1)"}},
      {"unknown_key", edited([](Json& j) { j["nodez"] = 1; }), {"unknown key 'nodez'"}},
      {"no_nodes",
       edited([](Json& j) { j["nodes"] = Json::array(); }),
       {"nodes must not be empty"}},
      {"nodes_not_array",
       edited([](Json& j) { j["nodes"] = Json::object(); }),
       {"nodes must be an array"}},
      {"node_count_differs",
       edited([](Json& j) { j["node_count"] = 9; }),
       {"node_count 9 but nodes has 5 entries"}},
      {"cycle",
       edited([](Json& j) {
         j["nodes"][1]["inputs"] = {3};  // conv <- pool <- relu <- conv
         j["edges"] = {{1, 2}, {2, 3}, {3, 4}, {3, 1}};
         j["nodes"][0]["successors"] = Json::array();
       }),
       {"the graph has a cycle: 'relu' -> 'pool' -> 'conv' -> 'relu'"}},
      {"self_loop",
       edited([](Json& j) {
         j["nodes"][2]["inputs"] = {2};
         j["edges"] = {{0, 1}, {2, 2}, {2, 3}, {3, 4}};
       }),
       {"cycle", "'relu' -> 'relu'"}},
      {"edge_to_missing_node",
       edited([](Json& j) {
         j["edges"].push_back({1, 99});
       }),
       {"edges[4] [1, 99] is dangling: there is no node 99"}},
      {"edge_without_input",
       edited([](Json& j) {
         j["edges"].push_back({0, 4});
       }),
       {"edges[4] [0, 4] ('x' -> 'fc') is dangling"}},
      {"edge_missing",
       edited([](Json& j) { j["edges"].erase(0); }),
       {"node 'conv' takes 'x' as an input but edges has no [0, 1]"}},
      {"edge_twice",
       edited([](Json& j) {
         j["edges"].push_back({0, 1});
       }),
       {"[0, 1] ('x' -> 'conv') is listed twice"}},
      {"edge_not_pair",
       edited([](Json& j) { j["edges"][0] = {0}; }),
       {"edges[0] must be a [producer, consumer] pair"}},
      {"input_id_missing",
       edited([](Json& j) { j["nodes"][4]["inputs"] = {7}; }),
       {"node 'fc': input id must be in 0..4, got 7"}},
      {"unknown_op",
       edited([](Json& j) { j["nodes"][2]["op"] = "hardswish"; }),
       {"node 'relu': unknown op type 'hardswish'", "opaque", "source_op"}},
      {"opaque_without_source",
       edited([](Json& j) { j["nodes"][2]["op"] = "opaque"; }),
       {"node 'relu'", "'source_op'"}},
      {"negative_flops",
       edited([](Json& j) { j["nodes"][2]["forward_flops"] = -5; }),
       {"node 'relu': forward_flops must be in 0..", "got -5"}},
      {"infinite_flops", raw("PLACEHOLDER_INF"), {"not valid JSON", "number overflow", "1e400"}},
      {"fractional_flops",
       edited([](Json& j) { j["nodes"][2]["backward_flops"] = 1.5; }),
       {"node 'relu': backward_flops must be an integer, got 1.5"}},
      {"huge_flops",
       edited([](Json& j) { j["nodes"][1]["forward_flops"] = 1ull << 62; }),
       {"node 'conv': forward_flops must be in 0..72057594037927936"}},
      {"huge_shape",
       edited([](Json& j) {
         j["nodes"][0]["output_shape"] = {2, 1000000, 1000000, 1000};
       }),
       {"node 'x': output_shape", "more than 1099511627776 elements"}},
      {"zero_extent",
       edited([](Json& j) {
         j["nodes"][0]["output_shape"] = {2, 0};
       }),
       {"node 'x': output_shape extent must be in 1.."}},
      {"deep_shape",
       edited([](Json& j) { j["nodes"][0]["output_shape"] = {2, 1, 1, 1, 1, 1, 1, 1, 1}; }),
       {"node 'x': output_shape has 9 entries, more than 8"}},
      {"huge_parameters",
       edited([](Json& j) { j["nodes"][4]["parameter_count"] = 1ll << 50; }),
       {"node 'fc': parameter_count must be in 0.."}},
      {"no_batch_dimension",
       edited([](Json& j) { j["nodes"][4]["output_shape"] = {3}; }),
       {"node 'fc': output_shape [3] must begin with the file's batch_size 2"}},
      {"duplicate_name",
       edited([](Json& j) { j["nodes"][3]["name"] = "conv"; }),
       {"duplicate node name 'conv' (nodes[1] and nodes[3])"}},
      {"duplicate_id",
       edited([](Json& j) { j["nodes"][3]["id"] = 1; }),
       {"node 'pool': id 1 is also the id of node 'conv'"}},
      {"empty_name",
       edited([](Json& j) { j["nodes"][3]["name"] = ""; }),
       {"name must not be empty"}},
      {"flops_differ_from_kernel",
       edited([](Json& j) {
         j["nodes"][1]["forward_flops"] = j["nodes"][1]["forward_flops"].get<int64_t>() + 1;
       }),
       {"node 'conv': forward_flops", "differs from the conv2d kernel layer's"}},
      {"parameters_differ_from_kernel",
       edited([](Json& j) { j["nodes"][4]["parameter_count"] = 1; }),
       {"node 'fc': parameter_count 1 differs from the linear kernel layer's 9"}},
      {"shape_differs_from_kernel",
       edited([](Json& j) { j["nodes"][1]["attributes"]["out_channels"] = 3; }),
       {"node 'conv': output_shape [2, 2, 4, 4] differs", "[2, 3, 4, 4]"}},
      {"mistyped_attribute",
       edited([](Json& j) { j["nodes"][1]["attributes"]["kernel"] = "3"; }),
       {"node 'conv': op conv2d: attribute 'kernel' must be an integer"}},
      {"nested_attribute",
       edited([](Json& j) {
         j["nodes"][1]["attributes"]["kernel"] = {3, 3};
       }),
       {"node 'conv': attribute 'kernel' must be a number or a string"}},
      {"input_with_inputs",
       edited([](Json& j) {
         j["nodes"][0]["inputs"] = {0};
         j["edges"].push_back({0, 0});
       }),
       {"node 'x': an input node takes no inputs"}},
      {"layer_without_inputs",
       edited([](Json& j) {
         j["nodes"][2]["inputs"] = Json::array();
         j["edges"] = {{0, 1}, {2, 3}, {3, 4}};
       }),
       {"node 'relu': op 'relu' needs at least one input"}},
      {"unknown_node_key",
       edited([](Json& j) { j["nodes"][2]["flops"] = 1; }),
       {"node 'relu': unknown key 'flops'"}},
      {"module_not_text",
       edited([](Json& j) { j["nodes"][2]["module"] = 3; }),
       {"node 'relu': module must be a string"}},
      {"module_control_character",
       edited([](Json& j) { j["nodes"][2]["module"] = "a\nb"; }),
       {"node 'relu': module contains a control character"}},
      {"missing_node_key",
       edited([](Json& j) { j["nodes"][2].erase("output_bytes"); }),
       {"node 'relu': missing key 'output_bytes'"}},
      {"tied_to_nothing",
       edited([](Json& j) {
         j["nodes"][4]["op"] = "tied_linear";
         j["nodes"][4]["attributes"] = {{"in_features", 2},
                                        {"out_features", 3},
                                        {"tied_to", "embed"},
                                        {"tied_parameter", "token_table"}};
       }),
       {"node 'fc': tied_to 'embed' names no node of the graph"}},
  };
  return cases;
}

TEST(GraphFile, BadFilesAreRefusedNamingTheProblem) {
  for (const BadFile& bad : bad_files()) {
    std::string text = bad.text();
    if (text == "PLACEHOLDER_INF") {  // JSON has no infinity; 1e400 parses as one
      Json json = small_json();
      json["nodes"][2]["forward_flops"] = 12345;
      text = json.dump();
      text.replace(text.find("12345"), 5, "1e400");
    }
    try {
      parse_graph_file(text, "test.json");
      ADD_FAILURE() << bad.name << ": accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_input) << bad.name;
      for (std::string_view fragment : bad.fragments) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
            << bad.name << ": \"" << e.what() << "\" lacks \"" << fragment << "\"";
      }
    }
  }
}

TEST(GraphFile, FilesAreCheckedBeforeReading) {
  EXPECT_TRUE(throws_invalid([] { read_graph_file("/dev/zero"); },
                             {"graph file '/dev/zero'", "not a regular file"}));
  EXPECT_TRUE(throws_invalid([] { read_graph_file("/nonexistent/g.json"); }, {"no such file"}));
  const std::filesystem::path big =
      std::filesystem::temp_directory_path() / "interplace-big-graph.json";
  {
    std::ofstream out(big);
    out << std::string(static_cast<size_t>(GraphFileLimits::max_file_bytes) + 1, ' ');
  }
  EXPECT_TRUE(throws_invalid([&] { read_graph_file(big); }, {"more than the 16777216"}));
  const std::filesystem::path good =
      std::filesystem::temp_directory_path() / "interplace-small-graph.json";
  {
    std::ofstream out(good);
    out << to_json(small_graph());
  }
  EXPECT_EQ(read_graph_file(good).graph.node_count(), 5);
  EXPECT_EQ(graph_file_digest(good).size(), 16u);
  std::filesystem::remove(big);
  std::filesystem::remove(good);
}

}  // namespace
}  // namespace interplace::placement
