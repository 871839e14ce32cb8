// The baselines users of PyTorch's pipelining tools get today: torchtitan's even split of
// blocks and DeepSpeed's partition methods, against the tools' own functions
// (torchtitan/distributed/pipeline_parallel.py generate_llm_fqn_per_model_part,
// deepspeed/runtime/utils.py partition_uniform / partition_balanced), whose outputs for these
// inputs are the expected values below.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placers.hpp"

namespace interplace::placement {
namespace {

struct LayerSpec {
  std::string module;
  int64_t parameters = 0;
  int nodes = 1;  // nodes of the module, consecutive (one layer)
};

// "n7" (through a stream: GCC 12 warns, wrongly, on "n" + std::to_string inlined here).
std::string numbered(const char* prefix, int i) {
  std::ostringstream out;
  out << prefix << i;
  return out.str();
}

// A chain of the layers' nodes, each node of its layer carrying the layer's module and an
// equal part of its parameters.
Graph chain_of(const std::vector<LayerSpec>& layers) {
  Graph graph("layers", 1);
  int id = 0;
  for (const LayerSpec& layer : layers) {
    for (int i = 0; i < layer.nodes; ++i, ++id) {
      NodeSpec spec;
      spec.name = numbered("n", id);
      spec.op = id == 0 ? "input" : "linear";
      if (id > 0) spec.inputs = {id - 1};
      spec.output_shape = {1, 4};
      spec.parameter_count = i == 0 ? layer.parameters : 0;
      spec.module = layer.module;
      graph.add_node(spec);
    }
  }
  return graph;
}

Placement place(PlacerKind placer, const Graph& graph, int k) {
  const CostModel model({"d", 1e9, 1e10, int64_t{1} << 40}, {1e-6, 1e9});
  return placer_of(placer)(graph, topological_order(graph),
                           PlacementRequest{.device_count = k, .cost_model = model});
}

// The stage of each layer's first node.
std::vector<int> layer_stages(const Graph& graph, const Placement& placement) {
  std::vector<int> stages;
  std::string previous = "\n";
  for (const Node& node : graph.nodes()) {
    if (node.module.empty() || node.module != previous) {
      stages.push_back(placement.device_of_node[node.id]);
    }
    previous = node.module;
  }
  return stages;
}

// The stages of parts [0, 3, 6, 8, 10]: partition_uniform(10, 4).
TEST(BaselinePlacers, DeepSpeedUniformGivesTheFirstStagesTheRemainder) {
  const Graph graph = chain_of(std::vector<LayerSpec>(10));  // no modules: a node a layer
  EXPECT_EQ(place(PlacerKind::deepspeed_uniform, graph, 4).device_of_node,
            (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 3, 3}));
  // Layers, not nodes: a module of 3 nodes is one layer, never cut.
  const Graph modules = chain_of({{"a", 0, 3}, {"b", 0, 1}, {"c", 0, 2}, {"d", 0, 1}});
  const Placement split = place(PlacerKind::deepspeed_uniform, modules, 2);
  EXPECT_EQ(split.device_of_node, (std::vector<int>{0, 0, 0, 0, 1, 1, 1}));
}

std::vector<int> parameter_parts(const std::vector<int64_t>& weights, int k) {
  std::vector<LayerSpec> layers;
  for (size_t i = 0; i < weights.size(); ++i) {
    layers.push_back({.module = numbered("m", static_cast<int>(i)), .parameters = weights[i]});
  }
  const Graph graph = chain_of(layers);
  const std::vector<int> stages =
      layer_stages(graph, place(PlacerKind::deepspeed_parameters, graph, k));
  std::vector<int> parts{0};  // DeepSpeed's boundary list
  for (size_t i = 1; i < stages.size(); ++i) {
    if (stages[i] != stages[i - 1]) parts.push_back(static_cast<int>(i));
  }
  parts.push_back(static_cast<int>(stages.size()));
  return parts;
}

TEST(BaselinePlacers, DeepSpeedParametersIsItsPartitionBalanced) {
  // DeepSpeed's own unit test (tests/unit/utils/test_partition_balanced.py) asks for these
  // spreads; the boundaries are what its partition_balanced returns.
  EXPECT_EQ(parameter_parts({1, 1, 1, 1}, 4), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(parameter_parts({1, 1, 1, 1, 1}, 4), (std::vector<int>{0, 2, 3, 4, 5}));
  EXPECT_EQ(parameter_parts({1, 1, 1, 1, 0, 1}, 4), (std::vector<int>{0, 2, 3, 5, 6}));
  // An LM: heavy embedding and head around 8 equal blocks and a norm without parameters.
  const std::vector<int64_t> lm{50, 10, 10, 10, 10, 10, 10, 10, 10, 0, 50};
  EXPECT_EQ(parameter_parts(lm, 2), (std::vector<int>{0, 5, 11}));
  EXPECT_EQ(parameter_parts(lm, 4), (std::vector<int>{0, 1, 5, 10, 11}));
  // Its least spread is not the least largest part: contiguous's objective is another.
  const std::vector<int64_t> digits{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7};
  EXPECT_EQ(parameter_parts(digits, 3), (std::vector<int>{0, 6, 11, 14}));
  EXPECT_EQ(parameter_parts(digits, 5), (std::vector<int>{0, 5, 7, 10, 12, 14}));
}

// An LLM as torchtitan names it: tok_embeddings, layers.0..B-1 (several nodes each), norm,
// output; even-layers puts the blocks where generate_llm_fqn_per_model_part does.
Graph llm(int blocks) {
  std::vector<LayerSpec> layers{{"tok_embeddings", 100, 1}};
  for (int b = 0; b < blocks; ++b) {
    layers.push_back({"layers." + std::to_string(b) + ".attention", 10, 2});
    layers.push_back({"layers." + std::to_string(b) + ".feed_forward", 20, 2});
  }
  layers.push_back({"norm", 1, 1});
  layers.push_back({"output", 100, 1});
  return chain_of(layers);
}

// The stage of tok_embeddings, of each block and of norm and output.
std::vector<int> module_stages(int blocks, int k) {
  const Graph graph = llm(blocks);
  const Placement placement = place(PlacerKind::even_layers, graph, k);
  std::vector<int> stages;
  std::string previous_top;
  for (const Node& node : graph.nodes()) {
    const std::string top = node.module.rfind("layers.", 0) == 0
                                ? node.module.substr(0, node.module.find('.', 7))
                                : node.module;
    if (top != previous_top) stages.push_back(placement.device_of_node[node.id]);
    previous_top = top;
  }
  return stages;
}

TEST(BaselinePlacers, EvenLayersIsTorchtitansSplit) {
  // generate_llm_fqn_per_model_part(4, 8): [emb, 0, 1], [2, 3, 4], [5, 6], [7, norm, output].
  EXPECT_EQ(module_stages(8, 4), (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 3}));
  // (2, 4): [emb, 0, 1], [2, 3, norm, output].
  EXPECT_EQ(module_stages(4, 2), (std::vector<int>{0, 0, 0, 1, 1, 1, 1}));
  // (4, 32): 8, 9, 8 and 7 blocks.
  const std::vector<int> stages = module_stages(32, 4);
  std::vector<int> blocks_per_stage(4, 0);
  for (size_t i = 1; i + 2 < stages.size(); ++i) ++blocks_per_stage[stages[i]];
  EXPECT_EQ(blocks_per_stage, (std::vector<int>{8, 9, 8, 7}));
  // Too few blocks for the stages, as torchtitan refuses them.
  EXPECT_THROW(module_stages(2, 5), Error);  // 4 effective layers, 5 stages
}

// Blocks found under any numbered container (torchvision's ViT, a Sequential); a graph
// without modules splits its nodes evenly.
TEST(BaselinePlacers, EvenLayersFindsTheNumberedBlocks) {
  std::vector<LayerSpec> vit{{"conv_proj"}, {"encoder.dropout"}};
  for (int b = 0; b < 4; ++b) {
    vit.push_back({"encoder.layers.encoder_layer_" + std::to_string(b) + ".self_attention"});
    vit.push_back({"encoder.layers.encoder_layer_" + std::to_string(b) + ".mlp"});
  }
  vit.push_back({"encoder.ln"});
  vit.push_back({"heads.head"});
  const Graph graph = chain_of(vit);
  // 4 blocks + input + output = 6 effective layers on 2 stages: [input, 0, 1], [2, 3, output].
  EXPECT_EQ(layer_stages(graph, place(PlacerKind::even_layers, graph, 2)),
            (std::vector<int>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}));
  const Graph plain = chain_of(std::vector<LayerSpec>(6));
  EXPECT_EQ(place(PlacerKind::even_layers, plain, 4).device_of_node,
            (std::vector<int>{0, 0, 1, 1, 2, 3}));
}

TEST(BaselinePlacers, RefuseEmptyStagesAndOverflowWithAHint) {
  const Graph three = chain_of({{"a", 0, 2}, {"b", 0, 2}, {"c", 0, 2}});
  for (PlacerKind placer : {PlacerKind::deepspeed_uniform, PlacerKind::deepspeed_parameters}) {
    try {
      place(placer, three, 4);  // 6 nodes, 3 layers
      FAIL() << to_string(placer);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
      EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("HINT:"), std::string::npos) << e.what();
    }
  }
  // The tools' splits ignore memory: one that overflows a device is refused, not moved.
  const Graph lm = llm(4);
  // 12 bytes a parameter (SGD with momentum) and 16 of activation a node: 4156 bytes in
  // all, 2216 on the first stage of the uniform split [0, 6, 11].
  const CostModel small({"d", 1e9, 1e10, 2100}, {1e-6, 1e9});
  try {
    place_deepspeed_uniform(lm, topological_order(lm),
                            PlacementRequest{.device_count = 2, .cost_model = small});
    FAIL() << "an overflowing split passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not look at memory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace interplace::placement
