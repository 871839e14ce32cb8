// Interlocking strategies against gradients composed by hand in one process, on a tiny
// chain network: input -> lin0 -> lin1 -> lin2 (logits), one linear per stage.
#include <gtest/gtest.h>

#include <cmath>

#include "interplace/kernels/layers/linear.hpp"
#include "interplace/kernels/layers/loss.hpp"
#include "interplace/kernels/optimizer.hpp"
#include "interplace/placement/layer_factory.hpp"
#include "interplace/runs/aux_heads.hpp"
#include "interplace/runs/datasets.hpp"
#include "interplace/runs/weight_seeds.hpp"
#include "mpi_test_support.hpp"

namespace interplace::runs {
namespace {

using kernels::Context;
using kernels::Tensor;

constexpr int64_t kBatch = 4;
constexpr int64_t kWidth = 3;
constexpr uint64_t kSeed = 5;

placement::Graph tiny_chain() {
  placement::Graph g("tiny", kBatch);
  placement::NodeSpec input;
  input.name = "input";
  input.op = "input";
  input.output_shape = {kBatch, kWidth};
  g.add_node(input);
  for (int i = 0; i < 3; ++i) {
    const int64_t out = i == 2 ? 2 : kWidth;  // two classes
    placement::NodeSpec spec;
    spec.name = "lin" + std::to_string(i);
    spec.op = "linear";
    spec.inputs = {i};
    spec.output_shape = {kBatch, out};
    spec.attributes = {{"in_features", kWidth}, {"out_features", out}};
    g.add_node(spec);
  }
  return g;
}

TrainPlan tiny_plan(const std::string& strategy) {
  TrainPlan plan;
  plan.config.model = "tiny";
  plan.config.devices = 3;
  plan.config.strategy = strategy;
  plan.config.pipeline = "1f1b";
  plan.config.batch_size = kBatch;
  plan.config.warmup_steps = 0;
  plan.config.steps = 2;
  plan.config.learning_rate = 0.5;
  plan.config.seed = kSeed;
  plan.config.threads_per_rank = 1;
  plan.graph = tiny_chain();
  plan.placement = {.device_count = 3, .device_of_node = {0, 0, 1, 2}};
  plan.reach = placement::strategy_reach(strategy, 3);
  return plan;
}

std::unique_ptr<kernels::Layer> seeded(const placement::Node& node, uint64_t salt) {
  auto layer = placement::make_layer(node);
  kernels::Rng rng(node_seed(kSeed, node.id, salt));
  layer->init_parameters(rng);
  return layer;
}

struct Reference {
  double loss = 0.0, aux_loss = 0.0;  // of step 1, after one update
};

// One process, by hand: pairwise trains lin0 by the auxiliary loss of stage 1 (its
// gradient passes lin1 without updating it) and lin1, lin2 by the network's loss; the
// global strategy trains all three by the network's loss.
Reference reference(bool pairwise) {
  const placement::Graph g = tiny_chain();
  std::vector<std::unique_ptr<kernels::Layer>> lin;
  for (int i = 1; i <= 3; ++i) lin.push_back(seeded(g.node(i), 0));
  const placement::Graph head_graph = aux_head_graph(g, 2);
  EXPECT_EQ(head_graph.node_count(), 2) << "an [N, F] head is one linear layer";
  auto head = seeded(head_graph.node(1), aux_head_salt(1));
  std::vector<kernels::Parameter*> params;
  for (auto& l : lin) {
    for (auto* p : l->parameters()) params.push_back(p);
  }
  for (auto* p : head->parameters()) params.push_back(p);
  kernels::Sgd sgd(params, {.learning_rate = 0.5f, .momentum = 0.9f});
  SampleShape shape{.input = {kWidth}, .classes = 2};
  auto data = open_dataset("synthetic", "", shape, kSeed);
  kernels::SoftmaxCrossEntropy ce;
  Reference out;
  for (int step = 0; step < 2; ++step) {
    const Batch batch = data->train_batch(step, kBatch);
    std::vector<Context> ctx(3);
    Context head_ctx, loss_ctx, aux_ctx;
    const Tensor h0 = lin[0]->forward(batch.inputs, ctx[0]);
    const Tensor h1 = lin[1]->forward(h0, ctx[1]);
    const Tensor z = lin[2]->forward(h1, ctx[2]);
    const Tensor a = head->forward(h1, head_ctx);
    const Tensor loss = ce.forward(std::vector<Tensor>{z, batch.labels}, loss_ctx);
    const Tensor aux = ce.forward(std::vector<Tensor>{a, batch.labels}, aux_ctx);
    if (step == 1) {
      out = {loss.to_vector()[0], aux.to_vector()[0]};
      break;
    }
    const Tensor one = Tensor::full({1}, 1.0f);
    const Tensor ga = head->backward(ce.backward(one, aux_ctx)[0], head_ctx)[0];
    if (pairwise) {
      // The aux flow: through lin1 (its weight gradient discarded) into lin0.
      Context pass = ctx[1];
      const Tensor g0 = lin[1]->backward(ga, pass)[0];
      lin[1]->zero_grad();
      lin[0]->backward(g0, ctx[0]);
    }
    const Tensor g1 = lin[2]->backward(ce.backward(one, loss_ctx)[0], ctx[2])[0];
    const Tensor g0 = lin[1]->backward(g1, ctx[1])[0];
    if (!pairwise) lin[0]->backward(g0, ctx[0]);
    sgd.step();
    sgd.zero_grad();
  }
  return out;
}

TEST(Runtime, PairwiseMatchesHandComputedGradients) {
  if (testing::world_size() < 3) GTEST_SKIP() << "needs 3 ranks";
  const TrainResult r = testing::train_plan_on(tiny_plan("pairwise"));
  const TrainResult g = testing::train_plan_on(tiny_plan("global"));
  if (testing::world_rank() != 0) return;
  const Reference want = reference(true), global = reference(false);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_NEAR(r.steps[1].loss, want.loss, 1e-5 * want.loss);
  EXPECT_NEAR(r.steps[1].aux_loss[1], want.aux_loss, 1e-5 * want.aux_loss);
  EXPECT_TRUE(std::isnan(r.steps[1].aux_loss[0]));  // pairwise: a head on stage 1 only
  // The check tells the strategies apart: global training would give another loss.
  EXPECT_GT(std::abs(global.loss - want.loss), 1e-4);
  EXPECT_NEAR(g.steps[1].loss, global.loss, 1e-5 * global.loss);
}

}  // namespace
}  // namespace interplace::runs
