// Structure of the ImageNet CNNs of the zoo: output shapes of key nodes against the
// published architectures, the attributes that carry their peculiarities (rectangular
// kernels, padding counted in averages, NASNet's asymmetric padding), presets and options.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <variant>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/pooling.hpp"
#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/layer_factory.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/stage_chain.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::placement {
namespace {

Shape shape_of(const Graph& graph, const std::string& node) {
  return graph.node(graph.id_of(node)).output_shape;
}

int64_t attribute(const Graph& graph, const std::string& node, const std::string& key) {
  return std::get<int64_t>(graph.node(graph.id_of(node)).attributes.at(key));
}

int64_t count_op(const Graph& graph, const std::string& op) {
  return std::count_if(graph.nodes().begin(), graph.nodes().end(),
                       [&](const Node& n) { return n.op == op; });
}

const ModelInfo& info_of(const std::string& name) {
  const auto& catalog = model_catalog();
  const auto it = std::find_if(catalog.begin(), catalog.end(),
                               [&](const ModelInfo& m) { return m.name == name; });
  if (it == catalog.end()) throw std::out_of_range("no catalog entry " + name);
  return *it;
}

// The interlocking-backprop study's ResNet. PyTorch's count of the same network at
// 3x32x32 and 10 classes (sum of p.numel() over model.parameters(): convolutions without
// bias, BN scale and shift, the classifier's weight and bias) is 21282122, computed here
// by the formula since this machine has no torch; 1152 fewer with a 1-channel stem.
TEST(ZooCnn, StudyResnetLayoutAndPyTorchCount) {
  int64_t pytorch = 3 * 64 * 9 + 2 * 64;  // stem conv + BN
  int64_t in = 64;
  for (const auto& [c, n] : {std::pair<int64_t, int64_t>{64, 3}, {128, 4}, {256, 6}, {512, 3}}) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t from = i == 0 ? in : c;
      pytorch += 9 * from * c + 2 * c + 9 * c * c + 2 * c;  // conv1, bn1, conv2, bn2
      if (from != c) pytorch += from * c + 2 * c;           // 1x1 conv + BN shortcut
    }
    in = c;
  }
  pytorch += 512 * 10 + 10;      // fc
  EXPECT_EQ(pytorch, 21282122);  // as torch's sum(p.numel() for p in model.parameters())
  const Graph cifar = build_model("resnet34-cifar", {.in_channels = 3, .image_size = 32});
  EXPECT_EQ(cifar.total_parameter_count(), 21282122);
  EXPECT_EQ(build_model("resnet34-cifar").total_parameter_count(), 21282122 - 2 * 64 * 9);
  EXPECT_EQ(info_of("resnet34-cifar").reference_parameters, 21282122 - 2 * 64 * 9);

  EXPECT_EQ(shape_of(cifar, "relu1"), (Shape{1, 64, 32, 32}));  // no max-pool
  EXPECT_EQ(shape_of(cifar, "layer1.2.relu2"), (Shape{1, 64, 32, 32}));
  EXPECT_EQ(shape_of(cifar, "layer2.3.relu2"), (Shape{1, 128, 16, 16}));
  EXPECT_EQ(shape_of(cifar, "layer3.5.relu2"), (Shape{1, 256, 8, 8}));
  EXPECT_EQ(shape_of(cifar, "layer4.2.relu2"), (Shape{1, 512, 4, 4}));
  EXPECT_FALSE(cifar.find("layer4.3.add").has_value());
  EXPECT_FALSE(cifar.find("layer1.0.shortcut.conv").has_value());
  EXPECT_TRUE(cifar.find("layer2.0.shortcut.conv").has_value());
  const Graph fashion = build_model("resnet34-cifar");
  EXPECT_EQ(shape_of(fashion, "layer4.2.relu2"), (Shape{1, 512, 4, 4}));  // 28 -> 14 -> 7 -> 4
  EXPECT_EQ(shape_of(fashion, "fc"), (Shape{1, 10}));
}

// The `stages` placer splits it into 4 components at single-tensor boundaries (between
// blocks), each rank a contiguous stage, so local and interlocking strategies can run.
TEST(ZooCnn, StudyResnetSplitsIntoFourStages) {
  const Graph graph = build_model("resnet34-cifar", {.batch_size = 8});
  const DeviceSpec device{.name = "test",
                          .peak_flops_per_s = 1e12,
                          .memory_bandwidth_bytes_per_s = 1e11,
                          .memory_capacity_bytes = int64_t{1} << 40};
  const PlacementRequest request{.device_count = 4, .cost_model = CostModel(device, {})};
  const Placement placement =
      placer_by_name("stages")(graph, compute_order(graph, OrderKind::topo), request);
  EXPECT_TRUE(is_stage_chain(graph, placement));
  EXPECT_FALSE(local_strategy_ineligibility(graph, placement).has_value());
  std::vector<int> nodes(4, 0);
  for (const int d : placement.device_of_node) ++nodes[static_cast<size_t>(d)];
  for (const int n : nodes) EXPECT_GT(n, 10);
}

TEST(ZooCnn, Resnet50StagesAndBottlenecks) {
  const Graph g = build_model("resnet50", {.batch_size = 2});
  EXPECT_EQ(shape_of(g, "conv1"), (Shape{2, 64, 112, 112}));
  EXPECT_EQ(shape_of(g, "maxpool"), (Shape{2, 64, 56, 56}));
  EXPECT_EQ(shape_of(g, "layer1.2.relu3"), (Shape{2, 256, 56, 56}));
  EXPECT_EQ(shape_of(g, "layer2.0.conv2"), (Shape{2, 128, 28, 28}));  // stride on the 3x3
  EXPECT_EQ(shape_of(g, "layer2.0.conv1"), (Shape{2, 128, 56, 56}));
  EXPECT_EQ(shape_of(g, "layer2.0.downsample.1"), (Shape{2, 512, 28, 28}));
  EXPECT_EQ(shape_of(g, "layer4.2.relu3"), (Shape{2, 2048, 7, 7}));
  EXPECT_EQ(shape_of(g, "fc"), (Shape{2, 1000}));
  EXPECT_TRUE(g.find("layer1.0.downsample.0").has_value());  // 64 -> 256 channels
  EXPECT_FALSE(g.find("layer1.1.downsample.0").has_value());
  EXPECT_TRUE(g.find("layer4.2.conv3").has_value());
  EXPECT_FALSE(g.find("layer4.3.conv1").has_value());
  EXPECT_EQ(count_op(g, "conv2d"), 53);  // 1 + 16 * 3 + 4 projections
  // 7x7 stem: 2 * N * 64 * 112 * 112 * 3 * 49 multiply-adds.
  EXPECT_EQ(g.node(g.id_of("conv1")).forward_flops, 2LL * 2 * 64 * 112 * 112 * 3 * 49);
}

TEST(ZooCnn, Vgg16FeaturesAndClassifier) {
  const Graph g = build_model("vgg16");
  EXPECT_EQ(count_op(g, "conv2d"), 13);
  EXPECT_EQ(count_op(g, "linear"), 3);
  EXPECT_EQ(count_op(g, "dropout"), 2);
  EXPECT_EQ(shape_of(g, "features.28"), (Shape{1, 512, 14, 14}));  // the last conv
  EXPECT_EQ(shape_of(g, "features.30"), (Shape{1, 512, 7, 7}));    // the last pool
  EXPECT_EQ(attribute(g, "classifier.0", "in_features"), 512 * 7 * 7);
  EXPECT_EQ(shape_of(g, "classifier.6"), (Shape{1, 1000}));
  EXPECT_EQ(g.node(g.id_of("features.0")).parameter_count, 64 * 3 * 9 + 64);  // with bias
  // Away from 224x224 the classifier's first layer follows the feature map.
  const Graph small = build_model("vgg16", {.image_size = 64, .classes = 10});
  EXPECT_EQ(attribute(small, "classifier.0", "in_features"), 512 * 2 * 2);
}

TEST(ZooCnn, MobilenetV2InvertedResiduals) {
  const Graph g = build_model("mobilenet_v2");
  EXPECT_EQ(shape_of(g, "features.0.2"), (Shape{1, 32, 112, 112}));
  // Block 1 (t = 1) has no expansion: its conv.0 is the depthwise conv.
  EXPECT_EQ(attribute(g, "features.1.conv.0.0", "groups"), 32);
  EXPECT_EQ(shape_of(g, "features.1.conv.2"), (Shape{1, 16, 112, 112}));
  EXPECT_EQ(shape_of(g, "features.2.conv.0.0"), (Shape{1, 96, 112, 112}));  // 16 * 6
  EXPECT_EQ(attribute(g, "features.2.conv.1.0", "groups"), 96);
  EXPECT_EQ(shape_of(g, "features.2.conv.3"), (Shape{1, 24, 56, 56}));
  EXPECT_EQ(g.node(g.id_of("features.2.conv.1.2")).op, "relu6");
  EXPECT_EQ(g.node(g.id_of("features.2.conv.2")).op, "conv2d");  // linear projection
  EXPECT_EQ(shape_of(g, "features.17.conv.3"), (Shape{1, 320, 7, 7}));
  EXPECT_EQ(shape_of(g, "features.18.2"), (Shape{1, 1280, 7, 7}));
  EXPECT_EQ(count_op(g, "add"), 10);  // stride 1 and unchanged width
  EXPECT_FALSE(g.find("features.2.add").has_value());
  EXPECT_TRUE(g.find("features.3.add").has_value());
  // Widths round to multiples of 8 (torchvision's _make_divisible); 1280 never shrinks.
  const Graph narrow = build_model("mobilenet_v2", {.width_multiplier = 0.35});
  EXPECT_EQ(shape_of(narrow, "features.0.0").at(1), 16);      // 32 * 0.35 = 11.2 -> 16
  EXPECT_EQ(shape_of(narrow, "features.1.conv.2").at(1), 8);  // 16 * 0.35 = 5.6 -> 8
  EXPECT_EQ(shape_of(narrow, "features.18.0").at(1), 1280);
}

TEST(ZooCnn, InceptionV3ModulesAndFactorisedKernels) {
  const Graph g = build_model("inception_v3");
  EXPECT_EQ(shape_of(g, "Conv2d_1a_3x3.relu"), (Shape{1, 32, 149, 149}));
  EXPECT_EQ(shape_of(g, "maxpool2"), (Shape{1, 192, 35, 35}));
  EXPECT_EQ(shape_of(g, "Mixed_5b.concat"), (Shape{1, 256, 35, 35}));
  EXPECT_EQ(shape_of(g, "Mixed_5d.concat"), (Shape{1, 288, 35, 35}));
  EXPECT_EQ(shape_of(g, "Mixed_6a.concat"), (Shape{1, 768, 17, 17}));
  EXPECT_EQ(shape_of(g, "Mixed_6e.concat"), (Shape{1, 768, 17, 17}));
  EXPECT_EQ(shape_of(g, "Mixed_7a.concat"), (Shape{1, 1280, 8, 8}));
  EXPECT_EQ(shape_of(g, "Mixed_7c.concat"), (Shape{1, 2048, 8, 8}));
  EXPECT_EQ(shape_of(g, "fc"), (Shape{1, 1000}));
  EXPECT_FALSE(g.find("Mixed_5e.concat").has_value());
  EXPECT_FALSE(g.find("AuxLogits.fc").has_value());
  // Mixed_6b: channels_7x7 = 128 with a 1x7 (padding 0x3) then a 7x1 (padding 3x0).
  EXPECT_EQ(shape_of(g, "Mixed_6b.branch7x7_1.conv").at(1), 128);
  EXPECT_EQ(attribute(g, "Mixed_6b.branch7x7_2.conv", "kernel_h"), 1);
  EXPECT_EQ(attribute(g, "Mixed_6b.branch7x7_2.conv", "kernel_w"), 7);
  EXPECT_EQ(attribute(g, "Mixed_6b.branch7x7_2.conv", "padding_w"), 3);
  EXPECT_EQ(attribute(g, "Mixed_6b.branch7x7_3.conv", "kernel_h"), 7);
  EXPECT_EQ(g.node(g.id_of("Mixed_6b.branch7x7_2.conv")).parameter_count, 128 * 128 * 7);
  EXPECT_EQ(shape_of(g, "Mixed_6e.branch7x7_1.conv").at(1), 192);
  EXPECT_EQ(shape_of(g, "Mixed_7b.branch3x3_concat"), (Shape{1, 768, 8, 8}));
  // Branch pools count padding (F.avg_pool2d's default); BN epsilon is 0.001.
  EXPECT_EQ(attribute(g, "Mixed_5b.avg_pool", "count_include_pad"), 1);
  const Node& bn = g.node(g.id_of("Mixed_5b.branch1x1.bn"));
  EXPECT_DOUBLE_EQ(std::get<double>(bn.attributes.at("epsilon")), 0.001);
  EXPECT_EQ(count_op(g, "conv2d"), 94);
}

TEST(ZooCnn, NasnetMobileCellsAndAdjustPaths) {
  const Graph g = build_model("nasnet_a_mobile");
  EXPECT_EQ(shape_of(g, "stem_bn1"), (Shape{1, 32, 111, 111}));
  EXPECT_EQ(shape_of(g, "stem_1.pad_1"), (Shape{1, 11, 113, 113}));  // odd: 1 on each side
  EXPECT_EQ(shape_of(g, "stem_1.concat"), (Shape{1, 44, 56, 56}));
  EXPECT_EQ(shape_of(g, "stem_2.pad_1"), (Shape{1, 22, 57, 57}));  // even: bottom/right only
  EXPECT_EQ(shape_of(g, "stem_2.concat"), (Shape{1, 88, 28, 28}));
  EXPECT_EQ(shape_of(g, "normal_0.concat"), (Shape{1, 264, 28, 28}));
  EXPECT_EQ(shape_of(g, "normal_3.concat"), (Shape{1, 264, 28, 28}));
  EXPECT_EQ(shape_of(g, "reduce_4.concat"), (Shape{1, 352, 14, 14}));
  EXPECT_EQ(shape_of(g, "normal_5.concat"), (Shape{1, 528, 14, 14}));
  EXPECT_EQ(shape_of(g, "reduce_8.concat"), (Shape{1, 704, 7, 7}));
  EXPECT_EQ(shape_of(g, "normal_12.concat"), (Shape{1, 1056, 7, 7}));
  EXPECT_EQ(shape_of(g, "predictions"), (Shape{1, 1000}));
  EXPECT_FALSE(g.find("normal_4.concat").has_value());
  // Factorized reductions where p is larger than ip: pad bottom/right, crop top/left.
  EXPECT_FALSE(g.find("stem_1.adjust.relu").has_value());
  EXPECT_EQ(shape_of(g, "stem_2.adjust.pad"), (Shape{1, 32, 112, 112}));
  EXPECT_EQ(shape_of(g, "stem_2.adjust.crop"), (Shape{1, 32, 111, 111}));
  EXPECT_EQ(attribute(g, "stem_2.adjust.crop", "top"), -1);
  EXPECT_EQ(shape_of(g, "stem_2.adjust.bn"), (Shape{1, 22, 56, 56}));
  EXPECT_TRUE(g.find("normal_0.adjust.crop").has_value());
  EXPECT_TRUE(g.find("normal_5.adjust.crop").has_value());
  EXPECT_TRUE(g.find("normal_9.adjust.crop").has_value());
  // Projections where only the width differs.
  EXPECT_TRUE(g.find("normal_1.adjust.conv_projection").has_value());
  EXPECT_TRUE(g.find("reduce_4.adjust.conv_projection").has_value());
  // A stride-2 separable block pads as correct_pad: 28 (even), 7x7 kernel -> 2 + 3. Its
  // input is p after the projection to the cell's 88 filters.
  EXPECT_EQ(shape_of(g, "reduce_4.right1.separable_conv_1_pad"), (Shape{1, 88, 33, 33}));
  EXPECT_EQ(attribute(g, "reduce_4.right1.separable_conv_1.depthwise", "groups"), 88);
  EXPECT_EQ(shape_of(g, "reduce_4.left1.separable_conv_1_pad"), (Shape{1, 88, 31, 31}));
  // Keras' trainable count and its batch-norm statistics (non-trainable).
  EXPECT_EQ(g.total_parameter_count(), 5289978);
  int64_t statistics = 0;
  for (const Node& n : g.nodes()) {
    if (n.op == "batch_norm") statistics += 2 * std::get<int64_t>(n.attributes.at("channels"));
  }
  EXPECT_EQ(statistics, 36738);
  EXPECT_TRUE(info_of("nasnet_a_mobile").reference_counts_batch_norm_statistics);
  EXPECT_FALSE(info_of("resnet50").reference_counts_batch_norm_statistics);
}

TEST(ZooCnn, PresetsAreFamilyModelsAtOtherDefaults) {
  EXPECT_FALSE(info_of("vgg16-small").published_reference);
  EXPECT_TRUE(info_of("vgg16").published_reference);
  const Graph small = build_model("vgg16-small");
  EXPECT_EQ(small.name(), "vgg16-small");
  EXPECT_EQ(shape_of(small, "input"), (Shape{1, 3, 32, 32}));
  EXPECT_EQ(shape_of(small, "classifier.6"), (Shape{1, 10}));
  const Graph same =
      build_model("vgg16", {.image_size = 32, .classes = 10, .width_multiplier = 0.125});
  EXPECT_EQ(small.total_parameter_count(), same.total_parameter_count());
  // The caller's sizes win; multipliers multiply the preset's.
  const Graph bigger = build_model("vgg16-small", {.image_size = 64, .width_multiplier = 2});
  const Graph bigger_same =
      build_model("vgg16", {.image_size = 64, .classes = 10, .width_multiplier = 0.25});
  EXPECT_EQ(shape_of(bigger, "input"), (Shape{1, 3, 64, 64}));
  EXPECT_EQ(bigger.total_parameter_count(), bigger_same.total_parameter_count());
  EXPECT_EQ(shape_of(build_model("inception_v3-small"), "Mixed_7b.concat").at(2), 1);
  const Graph nasnet = build_model("nasnet_a_mobile-small");
  EXPECT_EQ(shape_of(nasnet, "normal_0.concat").at(1), 6 * 12);
  EXPECT_FALSE(nasnet.find("normal_1.concat").has_value());
  EXPECT_TRUE(nasnet.find("normal_2.concat").has_value());  // block 2 starts after reduce_1
}

TEST(ZooCnn, RejectsImagesTooSmallForTheDownsampling) {
  try {
    build_model("inception_v3", {.image_size = 74});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    EXPECT_NE(std::string(e.what()).find("inception_v3: node Mixed_7a"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(build_model("inception_v3", {.image_size = 75}));
  EXPECT_THROW(build_model("vgg16", {.image_size = 16}), Error);
  EXPECT_THROW(build_model("resnet50-small", {.depth_multiplier = -1}), Error);
}

TEST(ZooCnn, FactoryTakesPerAxisConvAndPoolingAttributes) {
  const auto conv = make_layer("conv2d", {{"in_channels", int64_t{4}},
                                          {"out_channels", int64_t{8}},
                                          {"kernel_h", int64_t{1}},
                                          {"kernel_w", int64_t{7}},
                                          {"padding_w", int64_t{3}}});
  EXPECT_EQ(conv->parameter_count(), 8 * 4 * 7);
  EXPECT_EQ(conv->output_shape(Shape{1, 4, 5, 9}), (Shape{1, 8, 5, 9}));
  // "kernel" applies to the axis without its own attribute.
  const auto mixed = make_layer("conv2d", {{"in_channels", int64_t{4}},
                                           {"out_channels", int64_t{8}},
                                           {"kernel", int64_t{3}},
                                           {"kernel_w", int64_t{1}},
                                           {"padding", int64_t{1}},
                                           {"padding_w", int64_t{0}}});
  EXPECT_EQ(mixed->output_shape(Shape{1, 4, 5, 9}), (Shape{1, 8, 5, 9}));
  EXPECT_EQ(mixed->parameter_count(), 8 * 4 * 3);
  EXPECT_THROW(make_layer("conv2d", {{"in_channels", int64_t{4}},
                                     {"out_channels", int64_t{8}},
                                     {"kernel_h", int64_t{3}}}),
               Error);  // kernel_w has no value
  const auto pad = make_layer("pad2d", {{"bottom", int64_t{1}}, {"left", int64_t{-1}}});
  EXPECT_EQ(pad->output_shape(Shape{1, 2, 4, 4}), (Shape{1, 2, 5, 3}));
  const auto pool = make_layer("avg_pool", {{"kernel", int64_t{3}},
                                            {"stride", int64_t{1}},
                                            {"padding", int64_t{1}},
                                            {"count_include_pad", int64_t{1}}});
  EXPECT_TRUE(dynamic_cast<kernels::AvgPool2d&>(*pool).count_include_pad());
}

}  // namespace
}  // namespace interplace::placement
