// Interlocking strategies against gradients composed by hand in one process, on a tiny
// chain network: input -> lin0 -> lin1 -> lin2 (logits), one linear per stage.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "interplace/kernels/layers/linear.hpp"
#include "interplace/kernels/layers/loss.hpp"
#include "interplace/kernels/optimizer.hpp"
#include "interplace/placement/aux_heads.hpp"
#include "interplace/placement/layer_factory.hpp"
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
  parse_choices(plan);
  plan_schedule(plan, training_cost_model(plan.config));
  return plan;
}

std::unique_ptr<kernels::Layer> seeded(const placement::Node& node, uint64_t salt) {
  auto layer = placement::make_layer(node);
  kernels::Rng rng(node_seed(kSeed, node.id, salt));
  layer->init_parameters(rng);
  return layer;
}

struct Reference {
  double loss = 0.0;                   // of step 1, after one update
  std::vector<double> aux_loss{0, 0};  // stages 0 and 1 (0 where there is no head)
};

// One process, by hand, after one SGD step:
//   global    lin0, lin1, lin2 trained by the network's loss;
//   pairwise  lin0 by the auxiliary loss of stage 1 (its gradient passes lin1 without
//             updating it), lin1 and lin2 by the network's loss;
//   local     lin0 by stage 0's auxiliary loss, lin1 by stage 1's (on the detached h0),
//             lin2 by the network's loss (on the detached h1).
Reference reference(const std::string& strategy) {
  const placement::Graph g = tiny_chain();
  std::vector<std::unique_ptr<kernels::Layer>> lin;
  for (int i = 1; i <= 3; ++i) lin.push_back(seeded(g.node(i), 0));
  // Every non-last stage has a head but under global; pairwise's head on stage 0 trains
  // only itself (its gradient stops at its detached input).
  std::vector<bool> has_head = {strategy != "global", strategy != "global"};
  std::vector<std::unique_ptr<kernels::Layer>> heads;
  for (int k = 0; k < 2; ++k) {
    const placement::Graph head_graph = placement::aux_head_graph(g, k + 1);
    EXPECT_EQ(head_graph.node_count(), 2) << "an [N, F] head is one linear layer";
    heads.push_back(seeded(head_graph.node(1), aux_head_salt(k)));
  }
  std::vector<kernels::Parameter*> params;
  for (auto& l : lin) {
    for (auto* p : l->parameters()) params.push_back(p);
  }
  for (int k = 0; k < 2; ++k) {
    if (!has_head[static_cast<size_t>(k)]) continue;
    for (auto* p : heads[static_cast<size_t>(k)]->parameters()) params.push_back(p);
  }
  kernels::Sgd sgd(params, {.learning_rate = 0.5f, .momentum = 0.9f});
  SampleShape shape{.input = {kWidth}, .classes = 2};
  auto data = open_dataset("synthetic", "", shape, kSeed);
  kernels::SoftmaxCrossEntropy ce;
  const Tensor one = Tensor::full({1}, 1.0f);
  Reference out;
  for (int step = 0; step < 2; ++step) {
    const Batch batch = data->train_batch(step, kBatch);
    std::vector<Context> ctx(3), head_ctx(2), aux_ctx(2);
    Context loss_ctx;
    std::vector<Tensor> h(2);
    h[0] = lin[0]->forward(batch.inputs, ctx[0]);
    h[1] = lin[1]->forward(h[0], ctx[1]);
    const Tensor z = lin[2]->forward(h[1], ctx[2]);
    const Tensor loss = ce.forward(std::vector<Tensor>{z, batch.labels}, loss_ctx);
    std::vector<Tensor> head_grad(2);
    for (int k = 0; k < 2; ++k) {
      if (!has_head[static_cast<size_t>(k)]) continue;
      const auto i = static_cast<size_t>(k);
      const Tensor a = heads[i]->forward(h[i], head_ctx[i]);
      const Tensor aux = ce.forward(std::vector<Tensor>{a, batch.labels}, aux_ctx[i]);
      out.aux_loss[i] = aux.to_vector()[0];
      if (step == 0)
        head_grad[i] = heads[i]->backward(ce.backward(one, aux_ctx[i])[0], head_ctx[i])[0];
    }
    if (step == 1) {
      out.loss = loss.to_vector()[0];
      break;
    }
    const Tensor gz = ce.backward(one, loss_ctx)[0];
    const Tensor g1 = lin[2]->backward(gz, ctx[2])[0];
    if (strategy == "local") {
      lin[1]->backward(head_grad[1], ctx[1]);
      lin[0]->backward(head_grad[0], ctx[0]);
    } else {
      const Tensor g0 = lin[1]->backward(g1, ctx[1])[0];
      if (strategy == "global") {
        lin[0]->backward(g0, ctx[0]);
      } else {  // pairwise: the aux flow through lin1, its weight gradient discarded
        Context pass = ctx[1];
        std::vector<Tensor> kept;
        for (auto* p : lin[1]->parameters()) kept.push_back(p->grad.clone());
        const Tensor a0 = lin[1]->backward(head_grad[1], pass)[0];
        size_t i = 0;
        for (auto* p : lin[1]->parameters()) p->grad.copy_from(kept[i++]);
        lin[0]->backward(a0, ctx[0]);
      }
    }
    sgd.step();
    sgd.zero_grad();
  }
  return out;
}

// Every strategy's step-1 losses (after one update) equal the hand-composed ones, and
// the check tells the strategies apart.
TEST(Runtime, StrategiesMatchHandComputedGradients) {
  if (testing::world_size() < 3) GTEST_SKIP() << "needs 3 ranks";
  std::map<std::string, TrainResult> runs;
  for (const char* strategy : {"global", "pairwise", "local"}) {
    runs[strategy] = testing::train_plan_on(tiny_plan(strategy));
  }
  if (testing::world_rank() != 0) return;
  std::map<std::string, Reference> want;
  for (const auto& [strategy, r] : runs) {
    want[strategy] = reference(strategy);
    ASSERT_EQ(r.steps.size(), 2u);
    const Reference& w = want[strategy];
    EXPECT_NEAR(r.steps[1].loss, w.loss, 1e-5 * w.loss) << strategy;
    for (size_t k = 0; k < 2; ++k) {
      if (w.aux_loss[k] == 0.0) {
        EXPECT_TRUE(std::isnan(r.steps[1].aux_loss[k])) << strategy << " stage " << k;
      } else {
        EXPECT_NEAR(r.steps[1].aux_loss[k], w.aux_loss[k], 1e-5 * w.aux_loss[k])
            << strategy << " stage " << k;
      }
    }
  }
  EXPECT_GT(std::abs(want["global"].loss - want["pairwise"].loss), 1e-4);
  EXPECT_GT(std::abs(want["local"].loss - want["pairwise"].loss), 1e-4);
}

}  // namespace
}  // namespace interplace::runs
