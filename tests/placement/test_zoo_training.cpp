// Every CNN family of the zoo really trains: a small variant runs forward and backward
// through the kernel layers (GraphExecutor) and a few SGD steps on one fixed batch lower
// the loss. Also checks the executor itself on a graph with a known gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "graph_executor.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layers/loss.hpp"
#include "interplace/kernels/optimizer.hpp"
#include "interplace/kernels/random.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::placement {
namespace {

using kernels::Tensor;
using testing::GraphExecutor;

Tensor normal_tensor(const Shape& shape, uint64_t seed) {
  Tensor t(shape);
  kernels::Rng rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = rng.normal(0.0f, 1.0f);
  return t;
}

// y = relu(x) + x: x feeds two consumers, so dy/dx = [x > 0] + 1 needs both summed.
TEST(GraphExecutor, SumsTheGradientsOfAllConsumers) {
  Graph graph("skip", 1);
  const auto add_node = [&](const std::string& name, const std::string& op,
                            std::vector<NodeId> inputs) {
    NodeSpec spec;
    spec.name = name;
    spec.op = op;
    spec.inputs = std::move(inputs);
    spec.output_shape = {1, 4};
    graph.add_node(std::move(spec));
  };
  add_node("x", "input", {});
  add_node("relu", "relu", {0});
  add_node("add", "add", {1, 0});
  GraphExecutor net(graph, 1);
  const Tensor x = Tensor::from_vector({1, 4}, std::vector<float>{-2, -0.5f, 0.5f, 3});
  const Tensor y = net.forward({x});
  EXPECT_EQ(y.to_vector(), (std::vector<float>{-2, -0.5f, 1, 6}));
  net.backward(Tensor::from_vector({1, 4}, std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(net.input_gradient(0).to_vector(), (std::vector<float>{1, 2, 6, 8}));
}

// Trains `model` at batch 4 on one fixed batch of random images with labels 0..3 by plain
// SGD (dropout active, batch norm on batch statistics) and expects the loss to fall by a
// third or more within `steps` steps, with finite, non-zero gradients throughout.
void expect_trains(const std::string& model, int steps, float learning_rate) {
  SCOPED_TRACE(model);
  constexpr int64_t kBatch = 4;
  const Graph graph = build_model(model, {.batch_size = kBatch});
  GraphExecutor net(graph, 7);
  const Tensor images = normal_tensor(graph.node(graph.sources().at(0)).output_shape, 11);
  const Tensor labels = Tensor::from_vector({kBatch}, std::vector<float>{0, 1, 2, 3});
  kernels::Sgd sgd(net.parameters(), {.learning_rate = learning_rate});
  kernels::SoftmaxCrossEntropy loss_layer;
  kernels::Backend& backend = kernels::backend_for(kernels::Device::cpu);
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    sgd.zero_grad();
    const Tensor logits = net.forward({images});
    ASSERT_EQ(logits.shape(), (Shape{kBatch, 10}));
    kernels::Context loss_ctx;
    const std::vector<Tensor> loss_inputs = {logits, labels};
    losses.push_back(loss_layer.forward(loss_inputs, loss_ctx).data()[0]);
    net.backward(loss_layer.backward(Tensor::full({1}, 1.0f), loss_ctx)[0]);
    double squared = 0.0;
    for (const kernels::Parameter* p : net.parameters()) {
      ASSERT_TRUE(p->grad.defined()) << p->name;
      squared += backend.squared_norm(p->grad);
    }
    ASSERT_TRUE(std::isfinite(squared));
    ASSERT_GT(squared, 0.0);
    sgd.step();
  }
  std::string trajectory;
  for (double loss : losses) trajectory += std::to_string(loss) + " ";
  EXPECT_LT(losses.back(), 0.7 * losses.front()) << "losses: " << trajectory;
}

TEST(ZooTraining, Resnet50SmallLearnsAFixedBatch) {
  expect_trains("resnet50-small", 8, 0.02f);
}
// No batch norm, and PyTorch's default initialisation leaves VGG's gradients small at the
// start: it needs a larger step.
TEST(ZooTraining, Vgg16SmallLearnsAFixedBatch) {
  expect_trains("vgg16-small", 8, 0.5f);
}
TEST(ZooTraining, MobilenetV2SmallLearnsAFixedBatch) {
  expect_trains("mobilenet_v2-small", 8, 0.02f);
}
TEST(ZooTraining, InceptionV3SmallLearnsAFixedBatch) {
  expect_trains("inception_v3-small", 8, 0.02f);
}
TEST(ZooTraining, NasnetMobileSmallLearnsAFixedBatch) {
  expect_trains("nasnet_a_mobile-small", 8, 0.02f);
}

}  // namespace
}  // namespace interplace::placement
