#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/aux_heads.hpp"
#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/profile.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::placement {
namespace {

NodeSpec spec(const std::string& name, const std::string& op, std::vector<NodeId> inputs,
              kernels::Shape shape, int64_t parameters) {
  NodeSpec node;
  node.name = name;
  node.op = op;
  node.inputs = std::move(inputs);
  node.output_shape = std::move(shape);
  node.parameter_count = parameters;
  return node;
}

// input [2, 8, 16] -> block (linear 16->16) -> lm_head [2, 8, 100]; or a custom block shape.
Graph sequence_graph(kernels::Shape block_shape = {2, 8, 16}) {
  Graph graph("seq", 2);
  graph.add_node(spec("tokens", "input", {}, {2, 8, 16}, 0));
  graph.add_node(spec("block", "linear", {0}, std::move(block_shape), 272));
  graph.add_node(spec("lm_head", "linear", {1}, {2, 8, 100}, 1700));
  return graph;
}

// The study's head by default: conv 3x3 -> 128 with bias, BN, ReLU, conv 3x3 -> 64 with
// bias, BN, ReLU, global average pool, linear; PyTorch's count of
// conv128_bn_conv64_bn_gbpl_fc on 16 channels and 10 classes is
// (16*128*9 + 128) + 256 + (128*64*9 + 64) + 128 + (64*10 + 10) = 93386.
TEST(AuxHeads, TheStudysHeadByDefault) {
  const Graph resnet = build_model("resnet20");
  const NodeId boundary = resnet.id_of("layer1.0.relu2");  // [1, 16, 28, 28]
  const Graph head = aux_head_graph(resnet, boundary);
  ASSERT_EQ(head.node_count(), 9);
  EXPECT_EQ(head.node(0).op, "input");
  EXPECT_EQ(head.node(0).output_shape, resnet.node(boundary).output_shape);
  EXPECT_EQ(head.node(head.id_of("aux.conv1")).output_shape, (kernels::Shape{1, 128, 28, 28}));
  EXPECT_EQ(head.node(head.id_of("aux.conv2")).output_shape, (kernels::Shape{1, 64, 28, 28}));
  EXPECT_EQ(head.nodes().back().output_shape, (kernels::Shape{1, 10}));
  EXPECT_EQ(head.total_parameter_count(), 93386);
}

TEST(AuxHeads, CappedHeadNeverWiderThanItsInput) {
  const Graph resnet = build_model("resnet20");
  const NodeId boundary = resnet.id_of("layer1.0.relu2");  // [1, 16, 28, 28]
  const Graph head = aux_head_graph(resnet, boundary, {.width = AuxHeadWidth::capped});
  ASSERT_EQ(head.node_count(), 9);
  // Both convolutions 16 -> 16 (128 and 64 capped at 16) with bias: 2 x (16*16*9 + 16),
  // BN 2 x 32, linear 170.
  EXPECT_EQ(head.total_parameter_count(), 2 * (2304 + 16) + 2 * 32 + 170);

  // A width multiplier of 0.1 gives 13 and 6 channels (capped or not).
  const Graph small = aux_head_graph(resnet, boundary, {.width_multiplier = 0.1});
  EXPECT_EQ(small.total_parameter_count(),
            16 * 13 * 9 + 13 + 26 + 13 * 6 * 9 + 6 + 12 + 6 * 10 + 10);
}

// The study's heads read its ResNet-34's 64-channel first stage with 128 and 64 channels:
// proportional keeps that ratio (2C, C) at a boundary of C channels, at any width.
TEST(AuxHeads, ProportionalHeadIsTwiceThenOnceItsInput) {
  const Graph resnet = build_model("resnet20");
  for (const char* name : {"layer1.0.relu2", "layer2.0.relu2", "layer3.0.relu2"}) {
    const NodeId boundary = resnet.id_of(name);
    const kernels::Shape& in = resnet.node(boundary).output_shape;
    const Graph head = aux_head_graph(resnet, boundary, {.width = AuxHeadWidth::proportional});
    EXPECT_EQ(head.node(head.id_of("aux.conv1")).output_shape,
              (kernels::Shape{in[0], 2 * in[1], in[2], in[3]}))
        << name;
    EXPECT_EQ(head.node(head.id_of("aux.conv2")).output_shape,
              (kernels::Shape{in[0], in[1], in[2], in[3]}))
        << name;
  }
  // The multiplier is in C already: a x0.5 model's 8-channel boundary gets 16 and 8.
  const Graph half = build_model("resnet20", {.width_multiplier = 0.5});
  const Graph head = aux_head_graph(half, half.id_of("layer1.0.relu2"),
                                    {.width_multiplier = 0.5, .width = AuxHeadWidth::proportional});
  EXPECT_EQ(head.node(head.id_of("aux.conv1")).output_shape[1], 16);
  EXPECT_EQ(head.node(head.id_of("aux.conv2")).output_shape[1], 8);
  EXPECT_EQ(to_string(aux_head_width_by_name("proportional")), "proportional");
  EXPECT_THROW(aux_head_width_by_name("wide"), Error);
}

TEST(AuxHeads, SequenceAndFlatHeads) {
  const Graph seq = sequence_graph();
  const Graph head = aux_head_graph(seq, 1);
  ASSERT_EQ(head.node_count(), 3);
  EXPECT_EQ(head.node(1).op, "layer_norm");
  EXPECT_EQ(head.node(2).output_shape, (kernels::Shape{2, 8, 100}));
  EXPECT_EQ(head.total_parameter_count(), 32 + 16 * 100 + 100);

  const Graph flat = sequence_graph({2, 16});
  EXPECT_EQ(aux_head_graph(flat, 1).total_parameter_count(), 16 * 100 + 100);
  EXPECT_THROW(aux_head_graph(sequence_graph({2, 2, 2, 2, 16}), 1), Error);
}

// A sequence classifier (bert-mini: [N, classes] out, one label per sequence) gets heads
// that read the first token, as its pooler, so their logits match its labels.
TEST(AuxHeads, SequenceClassifiersHeadsReadTheFirstToken) {
  const Graph bert = build_model("bert-mini");
  ASSERT_EQ(bert.node(bert.sinks().back()).output_shape.size(), 2u);
  const int64_t classes = bert.node(bert.sinks().back()).output_shape.back();
  int heads = 0;
  for (const Node& node : bert.nodes()) {
    if (node.output_shape.size() != 3 || node.op == "input") continue;
    const Graph head = aux_head_graph(bert, node.id);
    ASSERT_EQ(head.node_count(), 4) << node.name;
    EXPECT_EQ(head.node(2).op, "select_token");
    EXPECT_EQ(head.node(3).output_shape, (kernels::Shape{bert.batch_size(), classes}));
    ++heads;
  }
  EXPECT_GT(heads, 0);
  // A language model's heads stay per token.
  EXPECT_EQ(aux_head_graph(sequence_graph(), 1).node(2).output_shape, (kernels::Shape{2, 8, 100}));
}

TEST(AuxHeads, CostsAreTheRooflineOfItsLayers) {
  const Graph seq = sequence_graph();
  const Graph head = aux_head_graph(seq, 1);
  const CostModel model({"dev", 1e9, 1e9, 1'000'000'000}, {});
  const AuxHeadCosts costs = aux_head_costs(head, model);
  const NodeCosts nodes = model.node_costs(head);
  // The input is the stage's own tensor: neither time nor activation is the head's.
  EXPECT_DOUBLE_EQ(costs.forward_s, nodes.forward_s[1] + nodes.forward_s[2]);
  EXPECT_DOUBLE_EQ(costs.backward_s, nodes.backward_s[1] + nodes.backward_s[2]);
  EXPECT_EQ(costs.parameter_count, head.total_parameter_count());
  EXPECT_EQ(costs.activation_bytes, 2 * (2 * 8 * 16 * 4) - 2 * 8 * 16 * 4 + 2 * 8 * 100 * 4);
}

// With a profile, a head's roofline time is scaled per op by how far the profiled nodes of
// that op are from their roofline (the machine's efficiency), falling back to the ratio
// over all nodes for an op the model lacks; without one the roofline is used as it is.
TEST(AuxHeads, ProfiledCostsScaleTheRooflinePerOp) {
  const Graph seq = sequence_graph();
  const DeviceSpec device{"dev", 1e9, 1e9, 1'000'000'000};
  const CostModel roofline(device, {});
  const NodeCosts ideal = roofline.node_costs(seq);
  Profile profile;
  profile.device_name = "dev";
  profile.batch_size = 2;
  for (const Node& node : seq.nodes()) {
    // Linear layers run at a third of the roofline forward, half backward.
    const double f = node.op == "input" ? 0.0 : 3.0, b = node.op == "input" ? 0.0 : 2.0;
    profile.nodes.push_back(
        {node.name, f * ideal.forward_s[node.id], b * ideal.backward_s[node.id]});
  }
  const auto measured = CostModel::from_profile(profile, device);
  const HeadCalibration calibration = head_calibration(seq, measured.node_costs(seq), measured);
  ASSERT_EQ(calibration.by_kind.count("linear"), 1u);
  const Graph head = aux_head_graph(seq, 1);  // layer norm, linear
  ASSERT_EQ(head.node(2).op, "linear");
  EXPECT_DOUBLE_EQ(calibration.of(head.node(2)).forward, 3.0);
  EXPECT_DOUBLE_EQ(calibration.of(head.node(2)).backward, 2.0);
  EXPECT_DOUBLE_EQ(calibration.of(head.node(1)).forward, 3.0);  // the overall ratio
  const AuxHeadCosts plain = aux_head_costs(head, measured);
  const AuxHeadCosts scaled = aux_head_costs(head, measured, calibration);
  EXPECT_DOUBLE_EQ(scaled.forward_s, 3.0 * plain.forward_s);
  EXPECT_DOUBLE_EQ(scaled.backward_s, 2.0 * plain.backward_s);
  EXPECT_TRUE(head_calibration(seq, ideal, roofline).by_kind.empty());
}

// A head's dense 3x3 convolutions take the ratio of the model's dense convolutions, not
// that of its depthwise (grouped) ones, which run much further below their roofline.
TEST(AuxHeads, GroupedConvolutionsCalibrateApart) {
  const Graph mobilenet = build_model("mobilenet_v2-small");
  const DeviceSpec device{"dev", 1e9, 1e9, 1'000'000'000};
  const NodeCosts ideal = CostModel(device, {}).node_costs(mobilenet);
  Profile profile;
  profile.device_name = "dev";
  profile.batch_size = mobilenet.batch_size();
  bool grouped = false;
  for (const Node& node : mobilenet.nodes()) {
    const bool is_grouped = node.attributes.count("groups") > 0;
    grouped = grouped || is_grouped;
    const double ratio = node.op == "input" ? 0.0 : is_grouped ? 10.0 : 2.0;
    profile.nodes.push_back(
        {node.name, ratio * ideal.forward_s[node.id], ratio * ideal.backward_s[node.id]});
  }
  ASSERT_TRUE(grouped);
  const auto measured = CostModel::from_profile(profile, device);
  const HeadCalibration calibration =
      head_calibration(mobilenet, measured.node_costs(mobilenet), measured);
  EXPECT_DOUBLE_EQ(calibration.by_kind.at("conv2d").forward, 2.0);
  EXPECT_DOUBLE_EQ(calibration.by_kind.at("conv2d/grouped").backward, 10.0);
  const Graph head = aux_head_graph(mobilenet, mobilenet.node_count() / 2);
  ASSERT_EQ(head.node(1).op, "conv2d");
  EXPECT_DOUBLE_EQ(calibration.of(head.node(1)).forward, 2.0);
}

// A head the profile timed costs what was measured; another (a capped head here, whose key
// differs) falls back to the calibrated roofline. resnet20's boundaries give one head per
// distinct boundary tensor: its three stage widths, the stem's 16 channels included.
TEST(AuxHeads, ProfiledHeadsAreTakenAsMeasured) {
  const Graph resnet = build_model("resnet20");
  const std::map<std::string, Graph> heads = distinct_aux_heads(resnet, {});
  EXPECT_GE(heads.size(), 3u);
  for (const auto& [key, head] : heads) EXPECT_EQ(aux_head_key(head), key);
  const NodeId boundary = resnet.node_count() / 2;
  const Graph head = aux_head_graph(resnet, boundary);
  const std::string key = aux_head_key(head);
  ASSERT_EQ(heads.count(key), 1u) << key;
  EXPECT_EQ(key.rfind("conv2d 1x128x", 0), 0u) << key;  // batch 1, 128 channels
  const Graph capped = aux_head_graph(resnet, boundary, {.width = AuxHeadWidth::capped});
  EXPECT_NE(aux_head_key(capped), key);

  const DeviceSpec device{"dev", 1e9, 1e9, 1'000'000'000};
  Profile profile;
  profile.device_name = "dev";
  profile.batch_size = resnet.batch_size();
  for (const Node& node : resnet.nodes()) profile.nodes.push_back({node.name, 1e-3, 2e-3});
  profile.aux_heads[key] = {0.25, 0.5};
  const auto measured = CostModel::from_profile(profile, device);
  const AuxHeadCosts timed = aux_head_costs(head, measured);
  EXPECT_EQ(timed.forward_s, 0.25);
  EXPECT_EQ(timed.backward_s, 0.5);
  EXPECT_EQ(timed.parameter_count, head.total_parameter_count());
  const AuxHeadCosts other = aux_head_costs(capped, measured);
  EXPECT_NE(other.forward_s, 0.25);
  EXPECT_GT(other.forward_s, 0.0);
}

}  // namespace
}  // namespace interplace::placement
