// The zero-bubble split of a backward (Gradients::inputs_deferring_parameters, then
// Layer::backward_parameters) against the full backward, on whole networks: micro-batches
// whose input passes run before any parameter pass, as a pipeline stage runs them. Each
// layer type alone is checked by check_gradients (gradcheck.hpp).
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/layers/activation.hpp"
#include "interplace/kernels/layers/attention.hpp"
#include "interplace/kernels/layers/batch_norm.hpp"
#include "interplace/kernels/layers/container.hpp"
#include "interplace/kernels/layers/conv2d.hpp"
#include "interplace/kernels/layers/embedding.hpp"
#include "interplace/kernels/layers/layer_norm.hpp"
#include "interplace/kernels/layers/linear.hpp"
#include "interplace/kernels/layers/pooling.hpp"
#include "interplace/kernels/layers/reshape.hpp"
#include "interplace/kernels/layers/tied_linear.hpp"

namespace interplace::kernels {
namespace {

using testing::random_tensor;
using testing::throws_invalid;

// A small ResNet-like network: every parameterised layer of the convolutional models.
std::unique_ptr<Sequential> conv_net() {
  auto net = std::make_unique<Sequential>();
  net->emplace<Conv2d>(3, 4, 3, 1, 1);
  net->emplace<BatchNorm2d>(4);
  net->emplace<ReLU>();
  auto branch = std::make_unique<Sequential>();
  branch->emplace<Conv2d>(4, 4, 3, 1, 1, 1, false);
  branch->emplace<BatchNorm2d>(4);
  net->emplace<Residual>(std::move(branch), std::make_unique<Conv2d>(4, 4, 1, 1, 0, 1, false));
  net->emplace<MaxPool2d>(2, 2);
  net->emplace<Flatten>();
  net->emplace<Linear>(4 * 3 * 3, 5);
  Rng rng(21);
  net->init_parameters(rng);
  return net;
}

// A GPT-like network: embedding, layer norm, causal attention, MLP, and an LM head tied to
// the token table (its gradient sums the head's and the embedding's).
struct TinyGpt {
  Sequential net;
  TinyGpt() {
    Embedding& embedding = net.emplace<Embedding>(7, 5, 8);
    net.emplace<LayerNorm>(8);
    net.emplace<CausalSelfAttention>(8, 2);
    net.emplace<Linear>(8, 16);
    net.emplace<GELU>();
    net.emplace<Linear>(16, 8);
    net.emplace<TiedLinear>(8, 7).bind(embedding.token_table());
    Rng rng(22);
    net.init_parameters(rng);
  }
};

Tensor token_ids(uint64_t seed) {
  Tensor ids({2, 5});
  Rng rng(seed);
  for (int64_t i = 0; i < ids.numel(); ++i) {
    ids.data()[i] = static_cast<float>(rng.next_u64() % 7);
  }
  return ids;
}

struct Pass {
  std::vector<std::vector<Tensor>> input_grads;  // per micro-batch
  std::vector<Tensor> parameter_grads;           // summed over the micro-batches
};

// Forwards every micro-batch, then backward. split: all input passes (deferring) in
// order, then all parameter passes in order, as ZB-H1's stages do; else full backwards.
Pass run(Layer& net, const std::vector<Tensor>& inputs, bool split) {
  std::vector<Context> contexts(inputs.size());
  std::vector<Tensor> outputs;
  for (size_t m = 0; m < inputs.size(); ++m) outputs.push_back(net.forward(inputs[m], contexts[m]));
  net.zero_grad();
  Pass pass;
  for (size_t m = 0; m < inputs.size(); ++m) {
    const Tensor dy = random_tensor(outputs[m].shape(), 100 + m);
    pass.input_grads.push_back(net.backward(
        dy, contexts[m],
        split ? Gradients::inputs_deferring_parameters : Gradients::inputs_and_parameters));
  }
  if (split) {
    for (Context& ctx : contexts) net.backward_parameters(ctx);
  }
  // zero_grad only marks a gradient stale: one that nothing wrote since reads as zero.
  for (Parameter* p : net.parameters()) {
    pass.parameter_grads.push_back(p->grad_is_zero ? Tensor::zeros(p->value.shape())
                                                   : p->grad.clone());
  }
  return pass;
}

void expect_same(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.defined(), expected.defined()) << what;
  if (!actual.defined()) return;
  ASSERT_EQ(actual.numel(), expected.numel()) << what;
  for (int64_t e = 0; e < actual.numel(); ++e) {
    ASSERT_NEAR(actual.data()[e], expected.data()[e], 1e-6 * std::abs(expected.data()[e]))
        << what << " element " << e;
  }
}

void expect_split_equals_full(Layer& net, const std::vector<Tensor>& inputs) {
  const Pass full = run(net, inputs, false);
  const Pass split = run(net, inputs, true);
  ASSERT_EQ(split.input_grads.size(), full.input_grads.size());
  for (size_t m = 0; m < full.input_grads.size(); ++m) {
    for (size_t i = 0; i < full.input_grads[m].size(); ++i) {
      expect_same(split.input_grads[m][i], full.input_grads[m][i],
                  "input gradient of micro-batch " + std::to_string(m));
    }
  }
  const std::vector<Parameter*> params = net.parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    expect_same(split.parameter_grads[k], full.parameter_grads[k], params[k]->name);
  }
}

TEST(DeferredParameters, ConvolutionalNetworkMatchesTheFullBackward) {
  auto net = conv_net();
  expect_split_equals_full(*net, {random_tensor({2, 3, 6, 6}, 1)});
}

TEST(DeferredParameters, TwoMicroBatchesAccumulateAsTheFullBackwards) {
  auto net = conv_net();
  expect_split_equals_full(*net, {random_tensor({2, 3, 6, 6}, 2), random_tensor({2, 3, 6, 6}, 3),
                                  random_tensor({2, 3, 6, 6}, 4)});
}

TEST(DeferredParameters, TransformerWithATiedHeadMatchesTheFullBackward) {
  TinyGpt gpt;
  expect_split_equals_full(gpt.net, {token_ids(5), token_ids(6)});
}

TEST(DeferredParameters, EvalModeBatchNormMatchesTheFullBackward) {
  auto net = conv_net();
  net->set_training(false);
  expect_split_equals_full(*net, {random_tensor({2, 3, 6, 6}, 7)});
}

// The input pass leaves the parameters' gradients alone even when they hold a sum.
TEST(DeferredParameters, InputPassLeavesAccumulatedGradientsAlone) {
  auto net = conv_net();
  const Tensor x = random_tensor({2, 3, 6, 6}, 8);
  Context first, second;
  const Tensor y = net->forward(x, first);
  net->forward(x, second);
  net->zero_grad();
  const Tensor dy = random_tensor(y.shape(), 9);
  net->backward(dy, first);
  std::vector<Tensor> before;
  for (Parameter* p : net->parameters()) before.push_back(p->grad.clone());
  net->backward(dy, second, Gradients::inputs_deferring_parameters);
  const std::vector<Parameter*> params = net->parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    for (int64_t e = 0; e < before[k].numel(); ++e) {
      ASSERT_EQ(params[k]->grad.data()[e], before[k].data()[e]) << params[k]->name;
    }
  }
  net->backward_parameters(second);  // now twice the first's
  for (size_t k = 0; k < params.size(); ++k) {
    for (int64_t e = 0; e < before[k].numel(); ++e) {
      ASSERT_NEAR(params[k]->grad.data()[e], 2.0f * before[k].data()[e],
                  1e-6 * std::abs(before[k].data()[e]) + 1e-12)
          << params[k]->name;
    }
  }
}

TEST(DeferredParameters, RefusesAParameterPassWithoutAPendingInputPass) {
  auto net = conv_net();
  const Tensor x = random_tensor({2, 3, 6, 6}, 10);
  Context ctx;
  EXPECT_TRUE(throws_invalid([&] { net->backward_parameters(ctx); },
                             {"Sequential", "backward_parameters without a pending"}));
  const Tensor y = net->forward(x, ctx);
  const Tensor dy = random_tensor(y.shape(), 11);
  EXPECT_TRUE(throws_invalid([&] { net->backward_parameters(ctx); }, {"without a pending"}));
  net->backward(dy, ctx);  // a full backward leaves nothing pending
  EXPECT_TRUE(throws_invalid([&] { net->backward_parameters(ctx); }, {"without a pending"}));
  net->backward(dy, ctx, Gradients::inputs_deferring_parameters);
  EXPECT_TRUE(
      throws_invalid([&] { net->backward(dy, ctx, Gradients::inputs_deferring_parameters); },
                     {"again before backward_parameters"}));
  net->backward_parameters(ctx);
  EXPECT_TRUE(throws_invalid([&] { net->backward_parameters(ctx); }, {"without a pending"}));
  // A leaf refuses alike.
  Linear linear(3, 2);
  Context leaf;
  linear.forward(random_tensor({4, 3}, 12), leaf);
  EXPECT_TRUE(throws_invalid([&] { linear.backward_parameters(leaf); },
                             {"Linear: backward_parameters without a pending"}));
}

// The parameter pass frees what the input pass kept for it.
TEST(DeferredParameters, ParameterPassFreesWhatItKept) {
  Linear linear(3, 2);
  Context ctx;
  const Tensor y = linear.forward(random_tensor({4, 3}, 13), ctx);
  linear.backward(random_tensor(y.shape(), 14), ctx, Gradients::inputs_deferring_parameters);
  EXPECT_EQ(ctx.deferred.size(), 1u);
  EXPECT_TRUE(ctx.parameters_pending);
  linear.backward_parameters(ctx);
  EXPECT_TRUE(ctx.deferred.empty());
  EXPECT_FALSE(ctx.parameters_pending);
  EXPECT_EQ(ctx.saved.size(), 1u);  // the forward's state stays with the context
}

}  // namespace
}  // namespace interplace::kernels
