#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "graph_executor.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/loss.hpp"
#include "interplace/kernels/optimizer.hpp"
#include "interplace/placement/layer_factory.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::placement {
namespace {

using kernels::Tensor;

const Node& node(const Graph& g, std::string_view name) {
  return g.node(g.id_of(name));
}

// Parameter counts from the architectures' formulas (every block: two LayerNorms 4d,
// attention 4d^2 + 4d, MLP 8d^2 + 5d).
int64_t gpt_parameters(int64_t layers, int64_t d, int64_t vocab, int64_t positions) {
  return (vocab + positions) * d + layers * (12 * d * d + 13 * d) + 2 * d;
}
int64_t bert_parameters(int64_t layers, int64_t d, int64_t vocab, int64_t positions) {
  return (vocab + positions + 2) * d + 2 * d + layers * (12 * d * d + 13 * d) + d * d + d;
}

TEST(ZooTransformer, CatalogCountsFollowTheFormulas) {
  EXPECT_EQ(gpt_parameters(12, 768, 50257, 1024), 124439808);
  EXPECT_EQ(bert_parameters(12, 768, 30522, 512), 109482240);
  EXPECT_EQ(build_model("gpt-mini").total_parameter_count(), gpt_parameters(4, 128, 256, 256));
  EXPECT_EQ(build_model("bert-mini").total_parameter_count(), bert_parameters(4, 128, 256, 256));
  const ModelOptions custom{
      .layers = 3, .dim = 48, .heads = 6, .vocab_size = 100, .max_positions = 40};
  EXPECT_EQ(build_model("gpt", custom).total_parameter_count(), gpt_parameters(3, 48, 100, 40));
  EXPECT_EQ(build_model("bert_base", custom).total_parameter_count(),
            bert_parameters(3, 48, 100, 40));
}

TEST(ZooTransformer, Gpt2SmallShapesAndTiedHead) {
  const Graph g = build_model("gpt2-small", {.batch_size = 2});
  EXPECT_EQ(g.node_count(), 2 + 12 * 8 + 2);
  EXPECT_EQ(node(g, "input_ids").output_shape, (Shape{2, 1024}));
  EXPECT_EQ(node(g, "embed").output_shape, (Shape{2, 1024, 768}));
  EXPECT_EQ(node(g, "embed").parameter_count, (50257 + 1024) * 768);
  EXPECT_EQ(node(g, "h.3.attn").op, "causal_self_attention");
  EXPECT_EQ(node(g, "h.3.attn").output_shape, (Shape{2, 1024, 768}));
  EXPECT_EQ(node(g, "h.0.mlp.fc").output_shape, (Shape{2, 1024, 3072}));
  EXPECT_EQ(node(g, "h.3.add_1").inputs,
            (std::vector<NodeId>{g.id_of("h.2.add_2"), g.id_of("h.3.attn")}));
  EXPECT_EQ(node(g, "h.3.ln_1").inputs, (std::vector<NodeId>{g.id_of("h.2.add_2")}));
  const Node& head = node(g, "lm_head");
  EXPECT_EQ(head.id, g.node_count() - 1);
  EXPECT_EQ(head.op, "tied_linear");
  EXPECT_EQ(head.output_shape, (Shape{2, 1024, 50257}));
  EXPECT_EQ(head.parameter_count, 0);
  EXPECT_EQ(std::get<std::string>(head.attributes.at("tied_to")), "embed");
  EXPECT_EQ(std::get<std::string>(head.attributes.at("tied_parameter")), "token_table");
  EXPECT_EQ(head.forward_flops, 2LL * 2 * 1024 * 768 * 50257);
  // `gpt` at its defaults is the same network.
  const Graph gpt = build_model("gpt", {.batch_size = 2});
  EXPECT_EQ(gpt.node_count(), g.node_count());
  EXPECT_EQ(gpt.total_forward_flops(), g.total_forward_flops());
}

TEST(ZooTransformer, BertBaseShapesAndPooler) {
  const Graph g = build_model("bert_base", {.batch_size = 2});
  EXPECT_EQ(g.node_count(), 3 + 12 * 8 + 3);
  EXPECT_EQ(node(g, "embeddings").parameter_count, (30522 + 512 + 2) * 768);
  EXPECT_EQ(std::get<int64_t>(node(g, "embeddings").attributes.at("token_types")), 2);
  EXPECT_EQ(std::get<double>(node(g, "embeddings.LayerNorm").attributes.at("epsilon")), 1e-12);
  EXPECT_EQ(node(g, "encoder.layer.5.attention").op, "self_attention");
  EXPECT_EQ(node(g, "encoder.layer.5.attention").output_shape, (Shape{2, 512, 768}));
  EXPECT_EQ(node(g, "encoder.layer.5.intermediate").output_shape, (Shape{2, 512, 3072}));
  // Post-LN: the residual adds the layer's input, and the norm follows the add.
  EXPECT_EQ(node(g, "encoder.layer.5.attention_add").inputs,
            (std::vector<NodeId>{g.id_of("encoder.layer.4.output_norm"),
                                 g.id_of("encoder.layer.5.attention")}));
  EXPECT_EQ(node(g, "encoder.layer.5.output_add").inputs,
            (std::vector<NodeId>{g.id_of("encoder.layer.5.attention_norm"),
                                 g.id_of("encoder.layer.5.output")}));
  EXPECT_EQ(node(g, "pooler.select").output_shape, (Shape{2, 768}));
  EXPECT_EQ(node(g, "pooler.dense").parameter_count, 768 * 768 + 768);
  EXPECT_EQ(node(g, "pooler.activation").op, "tanh");
  EXPECT_EQ(g.sinks(), std::vector<NodeId>{g.id_of("pooler.activation")});

  const Graph classifier = build_model("bert_base", {.classes = 3});
  EXPECT_EQ(node(classifier, "classifier").output_shape, (Shape{1, 3}));
  EXPECT_EQ(classifier.total_parameter_count(), 109482240 + 768 * 3 + 3);
}

TEST(ZooTransformer, NodesInstantiateAsKernelLayersWithTheSameCounts) {
  for (const char* model : {"gpt2-small", "gpt-mini", "bert_base", "bert-mini"}) {
    const Graph g = build_model(model);
    for (const Node& n : g.nodes()) {
      if (n.op == "input") continue;
      const auto layer = make_layer(n);
      EXPECT_EQ(layer->parameter_count(), n.parameter_count) << model << " " << n.name;
      if (n.op == "self_attention") {
        EXPECT_EQ(layer->type(), "SelfAttention") << n.name;
      } else if (n.op == "causal_self_attention") {
        EXPECT_EQ(layer->type(), "CausalSelfAttention") << n.name;
      }
    }
  }
}

TEST(ZooTransformer, OptionsResizeAndScale) {
  const Graph g = build_model("gpt-mini", {.batch_size = 3, .sequence_length = 64});
  EXPECT_EQ(node(g, "lm_head").output_shape, (Shape{3, 64, 256}));
  const Graph small = build_model("gpt-mini", {.width_multiplier = 0.5, .depth_multiplier = 0.5});
  EXPECT_EQ(small.node_count(), 2 + 2 * 8 + 2);
  EXPECT_EQ(small.total_parameter_count(), gpt_parameters(2, 64, 256, 256));
  const Graph bert = build_model("bert-mini", {.sequence_length = 32, .layers = 2});
  EXPECT_EQ(node(bert, "encoder.layer.1.output_norm").output_shape, (Shape{1, 32, 128}));
  EXPECT_FALSE(bert.find("encoder.layer.2.attention").has_value());
}

TEST(ZooTransformer, RejectsOptionsThatDoNotFit) {
  const auto message = [](std::string_view model, const ModelOptions& options) {
    try {
      build_model(model, options);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("gpt-mini", {.sequence_length = 257}),
            "model gpt-mini: sequence length 257 exceeds max_positions 256");
  EXPECT_EQ(message("bert_base", {.dim = 100}),
            "model bert_base: dim 100 (after the width multiplier) is not divisible by 12 heads");
  EXPECT_NE(message("gpt2-small", {.classes = 10}).find("takes no classes"), std::string::npos);
  EXPECT_NE(message("bert-mini", {.image_size = 32}).find("no in_channels or image_size"),
            std::string::npos);
  EXPECT_NE(message("gpt", {.heads = -1})
                .find("heads must be in 1..4096 (0: the model's default), got -1"),
            std::string::npos);
}

TEST(ZooTransformer, FactoryRejectsTiedLayersThatDoNotSayWhatTheyShare) {
  const Attributes sizes{{"in_features", int64_t{4}}, {"out_features", int64_t{8}}};
  EXPECT_THROW(make_layer("tied_linear", sizes), Error);
  Attributes numeric = sizes;
  numeric["tied_to"] = int64_t{1};
  numeric["tied_parameter"] = std::string("token_table");
  try {
    make_layer("tied_linear", numeric);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'tied_to' must be a string"), std::string::npos);
  }
  Attributes complete = sizes;
  complete["tied_to"] = std::string("embed");
  complete["tied_parameter"] = std::string("token_table");
  EXPECT_EQ(make_layer("tied_linear", complete)->parameter_count(), 0);
}

// --- Training through the real kernel layers -------------------------------------------

// Byte-level text, as the suite's corpus: `count` bytes from `offset`.
Tensor text_bytes(int64_t batch, int64_t time, int64_t offset) {
  const std::string text =
      "interplace trains transformers on bytes; the quick brown fox jumps over the lazy dog. ";
  Tensor t({batch, time});
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data()[i] = static_cast<float>(static_cast<unsigned char>(
        text[static_cast<size_t>((i / time) * 7 + i % time + offset) % text.size()]));
  }
  return t;
}

struct LossAndGradient {
  double loss;
  Tensor dlogits;
};

LossAndGradient cross_entropy(const Tensor& logits, const Tensor& labels) {
  kernels::SoftmaxCrossEntropy loss;
  kernels::Context ctx;
  const Tensor value = loss.forward(std::vector<Tensor>{logits, labels}, ctx);
  return {value.data()[0], loss.backward(Tensor::full({1}, 1.0f), ctx)[0]};
}

// Forward, loss, backward; returns the loss before the step.
double train_step(testing::GraphExecutor& net, kernels::Optimizer& optimizer, const Tensor& x,
                  const Tensor& labels) {
  const LossAndGradient l = cross_entropy(net.forward({{"input_ids", x}}), labels);
  optimizer.zero_grad();
  net.backward(l.dlogits);
  optimizer.step();
  return l.loss;
}

TEST(ZooTransformer, GptMiniTrainsOnAFixedBatch) {
  const int64_t batch = 2, time = 16;
  testing::GraphExecutor net(
      build_model("gpt-mini", {.batch_size = batch, .sequence_length = time}), 1);
  // The tied weight is one parameter: the executor's parameters are the graph's count.
  int64_t elements = 0;
  for (kernels::Parameter* p : net.parameters()) elements += p->value.numel();
  EXPECT_EQ(elements, net.graph().total_parameter_count());

  const Tensor x = text_bytes(batch, time, 0);
  const Tensor next = text_bytes(batch, time, 1);  // next-byte targets
  kernels::AdamW optimizer(net.parameters(), {.learning_rate = 3e-3f, .weight_decay = 0.0f});
  const double first = train_step(net, optimizer, x, next);
  EXPECT_NEAR(first, std::log(256.0), 0.3);  // small initial logits: close to uniform
  double last = first;
  for (int step = 0; step < 8; ++step) last = train_step(net, optimizer, x, next);
  EXPECT_LT(last, first - 1.0) << "first " << first << ", last " << last;
}

TEST(ZooTransformer, BertMiniClassifierTrainsOnAFixedBatch) {
  const int64_t batch = 4, time = 16;
  testing::GraphExecutor net(
      build_model("bert-mini", {.batch_size = batch, .classes = 3, .sequence_length = time}), 2);
  const Tensor x = text_bytes(batch, time, 3);
  const Tensor labels = Tensor::from_vector({batch}, std::vector<float>{2, 0, 1, 2});
  kernels::AdamW optimizer(net.parameters(), {.learning_rate = 3e-3f, .weight_decay = 0.0f});
  const double first = train_step(net, optimizer, x, labels);
  double last = first;
  for (int step = 0; step < 8; ++step) last = train_step(net, optimizer, x, labels);
  EXPECT_LT(last, 0.5 * first) << "first " << first << ", last " << last;
}

// The tied table's gradient through the whole graph (head and embedding) against central
// finite differences of the loss.
TEST(ZooTransformer, TiedTableGradientMatchesFiniteDifferences) {
  const int64_t batch = 2, time = 5;
  testing::GraphExecutor net(build_model("gpt", {.batch_size = batch,
                                                 .sequence_length = time,
                                                 .layers = 1,
                                                 .dim = 8,
                                                 .heads = 2,
                                                 .vocab_size = 13,
                                                 .max_positions = 8}),
                             3);
  Tensor x({batch, time}), labels({batch, time});
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data()[i] = static_cast<float>((3 * i + 1) % 13);
    labels.data()[i] = static_cast<float>((5 * i + 2) % 13);
  }
  kernels::Parameter& table = *net.layer("embed").parameters().at(0);
  ASSERT_EQ(table.name, "token_table");
  for (int64_t i = 0; i < table.value.numel(); ++i) table.value.data()[i] *= 20.0f;  // O(0.4)
  const auto loss = [&] { return cross_entropy(net.forward({{"input_ids", x}}), labels).loss; };
  const LossAndGradient l = cross_entropy(net.forward({{"input_ids", x}}), labels);
  net.zero_grad();
  net.backward(l.dlogits);
  const Tensor analytic = table.grad.clone();

  double diff2 = 0, norm2 = 0;
  const float step = 1e-2f;
  for (int64_t i = 0; i < table.value.numel(); i += 3) {
    float& v = table.value.data()[i];
    const float original = v;
    v = original + step;
    const double plus = loss();
    v = original - step;
    const double minus = loss();
    v = original;
    const double numeric = (plus - minus) / (2.0 * step);
    diff2 += (numeric - analytic.data()[i]) * (numeric - analytic.data()[i]);
    norm2 += numeric * numeric;
  }
  ASSERT_GT(norm2, 0.0);
  EXPECT_LT(std::sqrt(diff2 / norm2), 2e-2);
}

}  // namespace
}  // namespace interplace::placement
