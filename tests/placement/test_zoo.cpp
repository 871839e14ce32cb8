#include <gtest/gtest.h>

#include <limits>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/layer_factory.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::placement {
namespace {

// Elements of the non-trainable state (batch-norm running statistics) of the graph's
// layers, as the kernel layers themselves hold it.
int64_t buffer_elements(const Graph& graph) {
  int64_t total = 0;
  for (const Node& node : graph.nodes()) {
    if (node.op == "input") continue;
    // Named, not a temporary in the range expression: buffers() points into the layer,
    // which a temporary would destroy before the loop reads it (AddressSanitizer).
    const auto layer = make_layer(node);
    for (const kernels::Tensor* t : layer->buffers()) total += t->numel();
  }
  return total;
}

// Every catalog model at its default options has exactly its reference parameter count
// (trainable parameters, plus batch-norm statistics where the reference counts them).
TEST(Zoo, ParameterCountsEqualTheReferences) {
  for (const ModelInfo& info : model_catalog()) {
    const Graph graph = build_model(info.name);
    const int64_t statistics =
        info.reference_counts_batch_norm_statistics ? buffer_elements(graph) : 0;
    EXPECT_EQ(graph.total_parameter_count() + statistics, info.reference_parameters) << info.name;
  }
}

TEST(Zoo, GraphsAreTopologicallyNumberedWithOneSourcePerInput) {
  for (const ModelInfo& info : model_catalog()) {
    const Graph graph = build_model(info.name, {.batch_size = 2});
    EXPECT_EQ(graph.batch_size(), 2);
    for (const Node& node : graph.nodes()) {
      for (NodeId input : node.inputs) EXPECT_LT(input, node.id) << info.name << " " << node.name;
      EXPECT_EQ(node.output_shape.at(0), 2) << info.name << " " << node.name;
    }
    EXPECT_FALSE(graph.sources().empty());
  }
}

TEST(Zoo, Resnet20StructureAndFlops) {
  const Graph graph = build_model("resnet20", {.batch_size = 128});
  EXPECT_EQ(graph.node(graph.id_of("fc")).output_shape, (Shape{128, 10}));
  EXPECT_EQ(graph.node(graph.id_of("layer3.2.relu2")).output_shape, (Shape{128, 64, 7, 7}));
  EXPECT_EQ(graph.node(graph.id_of("layer2.0.add")).inputs.size(), 2u);
  EXPECT_TRUE(graph.find("layer2.0.shortcut.conv").has_value());
  EXPECT_FALSE(graph.find("layer1.0.shortcut.conv").has_value());
  // First conv: 2 * 128 * 16 * 28 * 28 * 1 * 9 multiply-adds.
  EXPECT_EQ(graph.node(graph.id_of("conv1")).forward_flops, 2LL * 128 * 16 * 28 * 28 * 9);
}

TEST(Zoo, OptionsChangeShapesAndScaleWidthAndDepth) {
  const Graph rgb = build_model("resnet20", {.in_channels = 3, .image_size = 32, .classes = 100});
  EXPECT_EQ(rgb.node(rgb.id_of("fc")).output_shape, (Shape{1, 100}));
  const Graph small =
      build_model("resnet56", {.width_multiplier = 0.5, .depth_multiplier = 1.0 / 3});
  EXPECT_EQ(small.node_count(), build_model("resnet20", {.width_multiplier = 0.5}).node_count());
  EXPECT_LT(small.total_parameter_count(), 272186 / 3);
}

// Op coverage: every node of every catalog model is a kernel layer with the node's
// parameter count and output shape.
TEST(Zoo, NodesInstantiateAsKernelLayersWithTheSameCounts) {
  for (const ModelInfo& info : model_catalog()) {
    const Graph graph = build_model(info.name, {.batch_size = 2});
    for (const Node& node : graph.nodes()) {
      if (node.op == "input") continue;
      const auto layer = make_layer(node);
      EXPECT_EQ(layer->parameter_count(), node.parameter_count) << info.name << " " << node.name;
      std::vector<Shape> inputs;
      for (NodeId in : node.inputs) inputs.push_back(graph.node(in).output_shape);
      EXPECT_EQ(layer->output_shape(inputs), node.output_shape) << info.name << " " << node.name;
    }
  }
}

TEST(Zoo, RejectsUnknownModelsAndBadOptions) {
  try {
    build_model("resnet21");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    EXPECT_NE(std::string(e.what()).find("valid: resnet20"), std::string::npos) << e.what();
  }
  EXPECT_THROW(build_model("resnet20", {.batch_size = 0}), Error);
  EXPECT_THROW(build_model("resnet20", {.width_multiplier = 0.0}), Error);
  EXPECT_THROW(make_layer("conv3d", {}), Error);
  EXPECT_THROW(make_layer("conv2d", {{"in_channels", int64_t{3}}}), Error);
}

// Issue #16: inf or 1e30 overflowed std::llround in the scaling and silently built a
// one-channel model (235 parameters) recorded as the model asked for; 1000 or 1e9 built
// for minutes. Every model refuses them, and any option out of its documented range.
TEST(Zoo, RefusesOptionsOutOfRangeForEveryModel) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const ModelInfo& info : model_catalog()) {
    for (double bad : {inf, -inf, nan, 1e30, 1000.0, 64.5, -1.0}) {
      EXPECT_THROW(build_model(info.name, {.width_multiplier = bad}), Error) << info.name << bad;
      EXPECT_THROW(build_model(info.name, {.depth_multiplier = bad}), Error) << info.name << bad;
    }
    EXPECT_THROW(build_model(info.name, {.batch_size = int64_t{1} << 40}), Error) << info.name;
    EXPECT_THROW(build_model(info.name, {.image_size = 1'000'000}), Error) << info.name;
    EXPECT_THROW(build_model(info.name, {.classes = -2}), Error) << info.name;
  }
  try {
    build_model("resnet20", {.width_multiplier = inf});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    EXPECT_NE(std::string(e.what()).find("width multiplier must be a finite number in (0, 64]"),
              std::string::npos)
        << e.what();
  }
}

// The largest multipliers in range still build (planning decides whether they fit), and
// building allocates no weights: vgg16 at 64x width has a 38 GB convolution.
TEST(Zoo, HugeModelsInRangeBuildAsShapesOnly) {
  const Graph graph = build_model("vgg16", {.image_size = 32, .width_multiplier = 64});
  EXPECT_GT(graph.total_parameter_count(), int64_t{1} << 33);
}

}  // namespace
}  // namespace interplace::placement
