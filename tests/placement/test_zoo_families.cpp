// The seeded families (docs/models.md): names and sets, determinism by seed, the search
// spaces' structure, weights shared across time steps, and real training of the recurrent
// graphs through the kernel layers.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "graph_executor.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/loss.hpp"
#include "interplace/kernels/optimizer.hpp"
#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/placement.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::placement {
namespace {

using kernels::Tensor;

// Everything a graph is made of, as text: equal for equal graphs.
std::string fingerprint(const Graph& g) {
  std::string out;
  for (const Node& n : g.nodes()) {
    out += n.name + " " + n.op + " " + kernels::to_string(n.output_shape);
    for (NodeId in : n.inputs) {
      out += ' ';
      out += std::to_string(in);
    }
    out += "\n";
  }
  return out;
}

// "family:seed", built by appending (GCC 12 warns falsely on "literal" + std::string).
std::string seeded(std::string_view family, int seed) {
  std::string name(family);
  name += ':';
  name += std::to_string(seed);
  return name;
}

bool throws_with(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind() == ErrorKind::invalid_input &&
           std::string(e.what()).find(fragment) != std::string::npos;
  }
  return false;
}

const char* const kFamilies[] = {"enas-cnn", "enas-cnn-small", "enas-rnn", "enas-rnn-small",
                                 "nmt",      "nmt-small"};

TEST(ZooFamilies, SameSeedSameGraphOtherSeedsOtherGraphs) {
  for (const char* family : kFamilies) {
    const std::string name = seeded(family, 3);
    const Graph a = build_model(name), b = build_model(name);
    EXPECT_EQ(a.name(), name);
    EXPECT_EQ(fingerprint(a), fingerprint(b)) << name;
    EXPECT_EQ(fingerprint(build_model(family)), fingerprint(build_model(seeded(family, 0))))
        << family;
    if (std::string(family) == "nmt-small") continue;  // every drawn option is preset
    std::set<std::string> shapes;
    for (int seed = 0; seed < 4; ++seed) {
      shapes.insert(fingerprint(build_model(seeded(family, seed))));
    }
    EXPECT_GE(shapes.size(), 3u) << family;
  }
}

TEST(ZooFamilies, NamesSetsAndErrors) {
  EXPECT_TRUE(find_model("enas-rnn:12").seeded);
  EXPECT_EQ(find_model("nmt:4294967295").family, "nmt");
  EXPECT_FALSE(find_model("resnet20").seeded);
  const std::vector<std::string> set = expand_model_names("enas-cnn:0..31");
  ASSERT_EQ(set.size(), 32u);
  EXPECT_EQ(set.front(), "enas-cnn:0");
  EXPECT_EQ(set.back(), "enas-cnn:31");
  EXPECT_EQ(expand_model_names("gpt-mini"), std::vector<std::string>{"gpt-mini"});
  EXPECT_TRUE(throws_with([] { find_model("resnet20:1"); }, "no seeded family"));
  EXPECT_TRUE(throws_with([] { find_model("enas-cnn:x"); }, "must be a decimal integer"));
  EXPECT_TRUE(throws_with([] { find_model("enas-cnn:-1"); }, "must be a decimal integer"));
  EXPECT_TRUE(throws_with([] { find_model("enas-cnn:4294967296"); }, "0..4294967295"));
  EXPECT_TRUE(throws_with([] { find_model("enas-cnn:"); }, "must be a decimal integer"));
  EXPECT_TRUE(throws_with([] { build_model("enas-lstm:1"); }, "valid: resnet20"));
  EXPECT_TRUE(throws_with([] { expand_model_names("enas-cnn:5..2"); }, "ascending"));
  EXPECT_TRUE(throws_with([] { expand_model_names("enas-cnn:0..5000"); }, "at most 4096"));
  EXPECT_TRUE(throws_with([] { expand_model_names("resnet20:0..3"); }, "no seeded family"));
  EXPECT_TRUE(throws_with([] { expand_model_names("enas-cnn..3"); }, "NAME:FIRST..LAST"));
  EXPECT_TRUE(throws_with([] { build_model("enas-rnn", {.classes = 10}); }, "takes no classes"));
  EXPECT_TRUE(throws_with([] { build_model("enas-cnn", {.dim = 10}); }, "takes no"));
}

// The micro search space: 8 cells (6 normal, 2 reduction) of 5 nodes, each node the sum
// of two operations, 10 classes at the end.
TEST(ZooFamilies, EnasCnnStructure) {
  const Graph g = build_model("enas-cnn:5", {.batch_size = 2});
  int cells = 0, node_sums = 0;
  for (const Node& n : g.nodes()) {
    if (n.name.ends_with(".out.bn")) ++cells;
    if (n.name.find(".node") != std::string::npos && n.name.ends_with(".add")) ++node_sums;
  }
  EXPECT_EQ(cells, 8);
  EXPECT_EQ(node_sums, 8 * 5);
  EXPECT_EQ(g.node(g.sinks().front()).output_shape, (Shape{2, 10}));
  EXPECT_TRUE(g.find("cell2_reduce.in0.concat").has_value());
  const Graph small = build_model("enas-cnn-small:5");
  EXPECT_EQ(small.node(small.sources().front()).output_shape, (Shape{1, 1, 28, 28}));
}

// Every tied head names a bias-free linear owner of its shape; the graph counts each
// shared weight once: enas-rnn-small (D = 32, 6 nodes) holds the embedding, 4 D^2 for
// node 0, 2 D^2 for each other node and the head, whatever the number of steps.
TEST(ZooFamilies, RecurrentWeightsAreSharedAcrossSteps) {
  for (const char* family : {"enas-rnn-small:2", "nmt:1", "enas-rnn:0"}) {
    const Graph g = build_model(family);
    int heads = 0;
    for (const Node& n : g.nodes()) {
      if (n.op != "tied_linear") continue;
      ++heads;
      const Node& owner = g.node(g.id_of(std::get<std::string>(n.attributes.at("tied_to"))));
      EXPECT_EQ(owner.op, "linear") << n.name;
      EXPECT_EQ(std::get<int64_t>(owner.attributes.at("bias")), 0) << owner.name;
      EXPECT_EQ(owner.attributes.at("in_features"), n.attributes.at("in_features")) << n.name;
      EXPECT_EQ(owner.attributes.at("out_features"), n.attributes.at("out_features")) << n.name;
      EXPECT_EQ(n.parameter_count, 0);
    }
    EXPECT_GT(heads, 20) << family;
  }
  const int64_t d = 32;
  const int64_t expected = (256 + 8) * d + (4 + 2 * 5) * d * d + d * 256 + 256;
  EXPECT_EQ(build_model("enas-rnn-small:2").total_parameter_count(), expected);
  EXPECT_EQ(build_model("enas-rnn-small:2", {.sequence_length = 16}).total_parameter_count(),
            expected + 8 * d);  // only the position table grows
}

// The cost model charges a shared weight once on its owner's device (parameter_count)
// and one replica (values and gradient) on every other device holding heads of it,
// however many: enas-rnn-small's 14 D x D weights all have heads after step 0.
TEST(ZooFamilies, CostModelChargesOneReplicaPerDeviceAndWeight) {
  const Graph g = build_model("enas-rnn-small:2");
  const CostModel model({"d", 1e12, 1e11, int64_t{1} << 34}, {});
  const NodeCosts costs = model.node_costs(g);
  Placement heads_apart{2, std::vector<int>(static_cast<size_t>(g.node_count()), 0)};
  int64_t nodes_on_1 = 0;
  for (const Node& n : g.nodes()) {
    if (n.op != "tied_linear") continue;
    heads_apart.device_of_node[static_cast<size_t>(n.id)] = 1;
    nodes_on_1 += costs.memory_bytes(n.id, 1);
  }
  const int64_t d = 32, replicas = 14 * 2 * 4 * d * d;
  const std::vector<int64_t> apart = device_memory_bytes(heads_apart, costs, 1);
  EXPECT_EQ(apart[1], nodes_on_1 + replicas);
  int64_t all = 0;
  for (const Node& n : g.nodes()) all += costs.memory_bytes(n.id, 1);
  EXPECT_EQ(apart[0], all - nodes_on_1);
  const Placement together{2, std::vector<int>(static_cast<size_t>(g.node_count()), 0)};
  EXPECT_EQ(device_memory_bytes(together, costs, 1)[0], all);  // bound: no replica
}

TEST(ZooFamilies, NmtSeedsDrawShapesWithinTheirRanges) {
  std::set<int64_t> lengths;
  for (int seed = 0; seed < 32; ++seed) {
    const Graph g = build_model(seeded("nmt", seed));
    const Shape& logits = g.node(g.sinks().front()).output_shape;
    EXPECT_GE(logits[1], 8);
    EXPECT_LE(logits[1], 24);
    EXPECT_EQ(logits[2], 256);
    lengths.insert(logits[1]);
  }
  EXPECT_GE(lengths.size(), 5u);
  const Graph fixed = build_model("nmt:9", {.sequence_length = 5, .layers = 2, .dim = 16});
  EXPECT_EQ(fixed.node(fixed.sinks().front()).output_shape, (Shape{1, 5, 256}));
  EXPECT_TRUE(fixed.find("dec1.t4.h").has_value());
  EXPECT_FALSE(fixed.find("dec2.t0.h").has_value());
}

// --- Training through the real kernel layers (one process, tied heads bound) ----------

Tensor text_bytes(int64_t batch, int64_t time, int64_t offset) {
  const std::string text = "the quick brown fox jumps over the lazy dog; pack my box. ";
  Tensor t({batch, time});
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data()[i] = static_cast<float>(static_cast<unsigned char>(
        text[static_cast<size_t>((i / time) * 5 + i % time + offset) % text.size()]));
  }
  return t;
}

double train_step(testing::GraphExecutor& net, kernels::Optimizer& optimizer, const Tensor& x,
                  const Tensor& labels) {
  kernels::SoftmaxCrossEntropy loss;
  kernels::Context ctx;
  const Tensor logits = net.forward({{"input_ids", x}});
  const double value = loss.forward(std::vector<Tensor>{logits, labels}, ctx).data()[0];
  optimizer.zero_grad();
  net.backward(loss.backward(Tensor::full({1}, 1.0f), ctx)[0]);
  optimizer.step();
  return value;
}

TEST(ZooFamilies, RecurrentGraphsTrainOnAFixedBatch) {
  for (const char* family : {"enas-rnn-small:1", "nmt-small:0"}) {
    const int64_t batch = 4, time = 8;
    testing::GraphExecutor net(build_model(family, {.batch_size = batch}), 1);
    int64_t elements = 0;
    for (kernels::Parameter* p : net.parameters()) elements += p->value.numel();
    EXPECT_EQ(elements, net.graph().total_parameter_count()) << family;
    const Tensor x = text_bytes(batch, time, 0);
    const Tensor next = text_bytes(batch, time, 1);
    kernels::AdamW optimizer(net.parameters(), {.learning_rate = 1e-2f, .weight_decay = 0.0f});
    const double first = train_step(net, optimizer, x, next);
    double last = first;
    for (int step = 0; step < 15; ++step) last = train_step(net, optimizer, x, next);
    EXPECT_LT(last, first - 1.0) << family << ": first " << first << ", last " << last;
  }
}

}  // namespace
}  // namespace interplace::placement
