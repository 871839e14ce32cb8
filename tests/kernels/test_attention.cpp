#include <gtest/gtest.h>

#include <cmath>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/layers/attention.hpp"
#include "scoped_threads.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::check_gradients;
using testing::random_tensor;
using testing::throws_invalid;

// Parameters large enough that attention is far from uniform, biases included.
void randomize(SelfAttention& layer, uint64_t seed) {
  for (Parameter* p : layer.parameters()) {
    p->value.copy_from(random_tensor(p->value.shape(), seed++, 0.5f));
  }
}

// Direct loops over (sample, head, query, key) in double, from the layer's parameters.
std::vector<double> reference_attention(SelfAttention& layer, const Tensor& x) {
  const int64_t batch = x.dim(0), time = x.dim(1), dim = x.dim(2);
  const int64_t heads = layer.heads(), head_dim = dim / heads;
  const float* wqkv = layer.qkv_weight().value.data();
  const float* bqkv = layer.qkv_bias().value.data();
  const float* wproj = layer.proj_weight().value.data();
  const float* bproj = layer.proj_bias().value.data();
  std::vector<double> y;
  for (int64_t b = 0; b < batch; ++b) {
    // qkv[t][j] for j in [0, 3 dim): q = [0, dim), k = [dim, 2 dim), v = [2 dim, 3 dim).
    std::vector<std::vector<double>> qkv(time, std::vector<double>(3 * dim));
    for (int64_t t = 0; t < time; ++t) {
      for (int64_t j = 0; j < 3 * dim; ++j) {
        double sum = bqkv[j];
        for (int64_t i = 0; i < dim; ++i)
          sum += double(x.data()[(b * time + t) * dim + i]) * wqkv[j * dim + i];
        qkv[t][j] = sum;
      }
    }
    std::vector<std::vector<double>> merged(time, std::vector<double>(dim, 0.0));
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t t = 0; t < time; ++t) {
        std::vector<double> weights;
        double max = -1e300;
        const int64_t keys = layer.causal() ? t + 1 : time;  // causal: up to the query
        for (int64_t s = 0; s < keys; ++s) {
          double score = 0;
          for (int64_t d = 0; d < head_dim; ++d) {
            score += qkv[t][h * head_dim + d] * qkv[s][dim + h * head_dim + d];
          }
          weights.push_back(score / std::sqrt(double(head_dim)));
          max = std::max(max, weights.back());
        }
        double total = 0;
        for (double& w : weights) total += (w = std::exp(w - max));
        for (int64_t s = 0; s < keys; ++s) {
          for (int64_t d = 0; d < head_dim; ++d) {
            merged[t][h * head_dim + d] += weights[s] / total * qkv[s][2 * dim + h * head_dim + d];
          }
        }
      }
    }
    for (int64_t t = 0; t < time; ++t) {
      for (int64_t o = 0; o < dim; ++o) {
        double sum = bproj[o];
        for (int64_t i = 0; i < dim; ++i) sum += merged[t][i] * wproj[o * dim + i];
        y.push_back(sum);
      }
    }
  }
  return y;
}

struct AttentionCase {
  int64_t batch, time, dim, heads;
  bool causal;
};
void PrintTo(const AttentionCase& c, std::ostream* out) {
  *out << (c.causal ? "causal_" : "bidirectional_") << "B" << c.batch << "_T" << c.time << "_D"
       << c.dim << "_H" << c.heads;
}

class AttentionShapes : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionShapes, ForwardMatchesNaiveReference) {
  const AttentionCase c = GetParam();
  SelfAttention layer(c.dim, c.heads, c.causal);
  randomize(layer, 1);
  const Tensor x = random_tensor({c.batch, c.time, c.dim}, 2);
  Context ctx;
  const Tensor y = layer.forward(x, ctx);
  ASSERT_EQ(y.shape(), x.shape());
  EXPECT_TRUE(all_close(y, reference_attention(layer, x), 1e-4, 1e-4));
}

TEST_P(AttentionShapes, GradientsMatchFiniteDifferences) {
  const AttentionCase c = GetParam();
  SelfAttention layer(c.dim, c.heads, c.causal);
  randomize(layer, 3);
  // Hundreds of tiny forwards: on a loaded machine every two-thread region of the batched
  // matmul can wait a scheduler tick for its second thread, so the check runs on one.
  const testing::ScopedThreads one_thread(1);
  EXPECT_TRUE(check_gradients(layer, {random_tensor({c.batch, c.time, c.dim}, 4)}));
}

INSTANTIATE_TEST_SUITE_P(Attention, AttentionShapes,
                         ::testing::Values(AttentionCase{2, 5, 6, 2, true},
                                           AttentionCase{1, 7, 9, 3, true},
                                           AttentionCase{3, 3, 6, 3, true},
                                           AttentionCase{2, 5, 6, 2, false},
                                           AttentionCase{1, 7, 9, 3, false}),
                         [](const auto& test) { return ::testing::PrintToString(test.param); });

TEST(CausalSelfAttention, EarlierOutputsIgnoreLaterTokens) {
  const int64_t batch = 2, time = 5, dim = 6;
  CausalSelfAttention layer(dim, 2);
  randomize(layer, 5);
  const Tensor x = random_tensor({batch, time, dim}, 6);
  Context ctx;
  const std::vector<float> before = layer.forward(x, ctx).to_vector();
  Tensor changed = x.clone();
  for (int64_t i = 0; i < dim; ++i)
    changed.data()[(time - 1) * dim + i] += 1.0f;  // sample 0, last token
  const Tensor after = layer.forward(changed, ctx);
  for (int64_t i = 0; i < after.numel(); ++i) {
    const bool last_token_of_sample_0 = i / dim == time - 1;
    if (last_token_of_sample_0) {
      EXPECT_NE(after.data()[i], before[static_cast<size_t>(i)]) << "element " << i;
    } else {
      EXPECT_EQ(after.data()[i], before[static_cast<size_t>(i)]) << "element " << i;
    }
  }
}

TEST(SelfAttention, BidirectionalOutputsSeeLaterTokens) {
  const int64_t time = 5, dim = 6;
  SelfAttention layer(dim, 2, /*causal=*/false);
  randomize(layer, 5);
  const Tensor x = random_tensor({2, time, dim}, 6);
  Context ctx;
  const std::vector<float> before = layer.forward(x, ctx).to_vector();
  Tensor changed = x.clone();
  for (int64_t i = 0; i < dim; ++i)
    changed.data()[(time - 1) * dim + i] += 1.0f;  // sample 0, last token
  const Tensor after = layer.forward(changed, ctx);
  for (int64_t i = 0; i < after.numel(); ++i) {
    const bool sample_0 = i < time * dim;  // every token of sample 0 sees the change
    if (sample_0) {
      EXPECT_NE(after.data()[i], before[static_cast<size_t>(i)]) << "element " << i;
    } else {
      EXPECT_EQ(after.data()[i], before[static_cast<size_t>(i)]) << "element " << i;
    }
  }
}

TEST(SelfAttention, NamesAndFlopsFollowTheMask) {
  SelfAttention bidirectional(8, 2, false);
  SelfAttention causal(8, 2, true);
  CausalSelfAttention alias(8, 2);
  EXPECT_EQ(bidirectional.type(), "SelfAttention");
  EXPECT_EQ(causal.type(), "CausalSelfAttention");
  EXPECT_EQ(alias.type(), "CausalSelfAttention");
  EXPECT_FALSE(bidirectional.causal());
  EXPECT_TRUE(alias.causal());
  EXPECT_EQ(bidirectional.parameter_count(), alias.parameter_count());
  const int64_t b = 3, t = 5, d = 8, n = b * t;
  const int64_t scores = b * 2 * t * t;  // nothing masked
  const FlopCount f = bidirectional.flops(Shape{b, t, d});
  EXPECT_EQ(f.forward_flops, 8 * n * d * d + 4 * n * d + 4 * b * t * t * d + 5 * scores);
  EXPECT_EQ(f.backward_flops, 16 * n * d * d + 4 * n * d + 8 * b * t * t * d + 4 * scores);
  EXPECT_GT(f.forward_flops, causal.flops(Shape{b, t, d}).forward_flops);
}

TEST(SelfAttention, RejectsBadShapesAndArguments) {
  EXPECT_TRUE(throws_invalid([] { SelfAttention(10, 4, false); },
                             {"SelfAttention: dim 10", "not divisible by heads 4"}));
  EXPECT_TRUE(throws_invalid([] { SelfAttention(0, 1, false); }, {"dim=0"}));
  SelfAttention layer(6, 3, false);
  Context ctx;
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(Tensor::zeros({2, 3, 5}), ctx);
      },
      {"SelfAttention(dim=6)", "[2, 3, 5]"}));
  Context fresh;
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.backward(Tensor::zeros({2, 3, 6}), fresh);
      },
      {"without a matching forward"}));
}

TEST(CausalSelfAttention, SecondBackwardAccumulatesParameterGradients) {
  CausalSelfAttention layer(4, 2);
  randomize(layer, 7);
  EXPECT_TRUE(testing::backward_accumulates(layer, random_tensor({2, 3, 4}, 8), 9));
}

TEST(CausalSelfAttention, CountsParametersAsGpt2AndFlops) {
  CausalSelfAttention gpt2_small(768, 12);
  EXPECT_EQ(gpt2_small.parameter_count(), 4 * 768 * 768 + 4 * 768);
  std::vector<std::string> names;
  for (Parameter* p : gpt2_small.parameters()) names.push_back(p->name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"qkv.weight", "qkv.bias", "proj.weight", "proj.bias"}));

  CausalSelfAttention layer(8, 2);
  const int64_t b = 3, t = 5, d = 8, n = b * t;
  const int64_t unmasked = b * 2 * t * (t + 1) / 2;
  const FlopCount f = layer.flops(Shape{b, t, d});
  EXPECT_EQ(f.forward_flops, 8 * n * d * d + 4 * n * d + 4 * b * t * t * d + 5 * unmasked);
  EXPECT_EQ(f.backward_flops, 16 * n * d * d + 4 * n * d + 8 * b * t * t * d + 4 * unmasked);
}

TEST(CausalSelfAttention, RejectsBadShapesAndArguments) {
  EXPECT_TRUE(
      throws_invalid([] { CausalSelfAttention(10, 3); }, {"dim 10", "not divisible by heads 3"}));
  EXPECT_TRUE(throws_invalid([] { CausalSelfAttention(8, 0); }, {"heads=0"}));
  CausalSelfAttention layer(6, 2);
  Context ctx;
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(Tensor::zeros({2, 3, 4}), ctx);
      },
      {"[batch, time, 6]", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_invalid([&] { layer.forward(Tensor::zeros({3, 6}), ctx); }, {"[3, 6]"}));
}

}  // namespace
}  // namespace interplace::kernels
