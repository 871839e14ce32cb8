#include <gtest/gtest.h>

#include <limits>

#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layers/embedding.hpp"

namespace interplace::kernels {
namespace {

using testing::all_close;
using testing::check_gradients;
using testing::throws_invalid;

// Ids [2, 4] with a repeated token (3), so the gradient scatter must add, not overwrite.
Tensor sample_ids() {
  return Tensor::from_vector({2, 4}, std::vector<float>{3, 0, 3, 4, 1, 3, 2, 0});
}

TEST(Embedding, ForwardMatchesNaiveReference) {
  Embedding layer(5, 6, 3);
  Rng rng(1);
  layer.init_parameters(rng);
  const Tensor ids = sample_ids();
  Context ctx;
  const Tensor y = layer.forward(ids, ctx);
  ASSERT_EQ(y.shape(), (Shape{2, 4, 3}));
  std::vector<double> expected;
  for (int64_t r = 0; r < 8; ++r) {
    const auto id = static_cast<int64_t>(ids.data()[r]);
    for (int64_t d = 0; d < 3; ++d) {
      expected.push_back(double(layer.token_table().value.data()[id * 3 + d]) +
                         layer.position_table().value.data()[(r % 4) * 3 + d]);
    }
  }
  EXPECT_TRUE(all_close(y, expected));
}

TEST(Embedding, TableGradientsMatchFiniteDifferences) {
  Embedding layer(5, 6, 3);
  Rng rng(2);
  layer.init_parameters(rng);
  testing::GradCheckOptions options;
  options.differentiable = {false};
  EXPECT_TRUE(check_gradients(layer, {sample_ids()}, options));
}

TEST(Embedding, IdsGetNoGradientAndTablesAccumulate) {
  Embedding layer(5, 6, 3);
  const Tensor dy = testing::random_tensor({2, 4, 3}, 3);
  Context ctx;
  layer.forward(sample_ids(), ctx);
  layer.zero_grad();
  const std::vector<Tensor> grads = layer.backward(dy, ctx);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_FALSE(grads[0].defined());
  // Token 3 occurs at rows 0, 2 and 5.
  for (int64_t d = 0; d < 3; ++d) {
    const float expected = dy.data()[0 * 3 + d] + dy.data()[2 * 3 + d] + dy.data()[5 * 3 + d];
    EXPECT_FLOAT_EQ(layer.token_table().grad.data()[3 * 3 + d], expected);
  }
  const Tensor token_once = layer.token_table().grad.clone();
  const Tensor position_once = layer.position_table().grad.clone();
  layer.backward(dy, ctx);
  for (int64_t i = 0; i < token_once.numel(); ++i) {
    EXPECT_FLOAT_EQ(layer.token_table().grad.data()[i], 2 * token_once.data()[i]);
  }
  for (int64_t i = 0; i < position_once.numel(); ++i) {
    EXPECT_FLOAT_EQ(layer.position_table().grad.data()[i], 2 * position_once.data()[i]);
  }
  // Positions 4 and 5 are never used (T = 4): their gradient is zero, not garbage.
  for (int64_t i = 4 * 3; i < 6 * 3; ++i) EXPECT_EQ(layer.position_table().grad.data()[i], 0.0f);
}

TEST(Embedding, CountsParametersAndFlops) {
  Embedding gpt2(50257, 1024, 768);
  EXPECT_EQ(gpt2.parameter_count(), (50257 + 1024) * 768);
  std::vector<std::string> names;
  for (Parameter* p : gpt2.parameters()) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"token_table", "position_table"}));
  const FlopCount f = gpt2.flops(Shape{2, 8});
  EXPECT_EQ(f.forward_flops, 2 * 8 * 768);
  EXPECT_EQ(f.backward_flops, 2 * 2 * 8 * 768);
}

TEST(Embedding, RejectsBadIdsAndShapes) {
  EXPECT_TRUE(throws_invalid([] { Embedding(0, 4, 4); }, {"must be positive"}));
  EXPECT_TRUE(throws_invalid([] { Embedding(int64_t{1} << 25, 4, 4); }, {"33554432"}));
  Embedding layer(5, 4, 2);
  Context ctx;
  const auto forward_ids = [&](std::vector<float> ids) {
    return [&layer, &ctx, ids] { layer.forward(Tensor::from_vector({1, 2}, ids), ctx); };
  };
  EXPECT_TRUE(throws_invalid(forward_ids({1, 5}), {"token id 5 at index 1", "[0, 5)"}));
  EXPECT_TRUE(throws_invalid(forward_ids({-1, 0}), {"token id -1 at index 0"}));
  EXPECT_TRUE(throws_invalid(forward_ids({1.5f, 0}), {"token id 1.5"}));
  EXPECT_TRUE(
      throws_invalid(forward_ids({std::numeric_limits<float>::quiet_NaN(), 0}), {"token id nan"}));
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(Tensor::zeros({1, 5}), ctx);
      },
      {"sequence length 5", "max_positions 4"}));
  EXPECT_TRUE(
      throws_invalid([&] { layer.forward(Tensor::zeros({4}), ctx); }, {"[batch, time]", "[4]"}));
}

// Type ids [2, 4] for sample_ids(): two segments per sample.
Tensor sample_type_ids() {
  return Tensor::from_vector({2, 4}, std::vector<float>{0, 0, 1, 1, 0, 1, 1, 1});
}

// token + position + token type, in double, from the layer's tables.
std::vector<double> reference_with_types(Embedding& layer, const Tensor& ids,
                                         const std::vector<float>& type_ids) {
  const int64_t dim = layer.token_table().value.dim(1), time = ids.dim(1);
  std::vector<double> expected;
  for (int64_t r = 0; r < ids.numel(); ++r) {
    const auto id = static_cast<int64_t>(ids.data()[r]);
    const auto type = static_cast<int64_t>(type_ids[static_cast<size_t>(r)]);
    for (int64_t d = 0; d < dim; ++d) {
      expected.push_back(double(layer.token_table().value.data()[id * dim + d]) +
                         layer.position_table().value.data()[(r % time) * dim + d] +
                         layer.token_type_table().value.data()[type * dim + d]);
    }
  }
  return expected;
}

TEST(EmbeddingTokenTypes, ForwardAddsTheTypeRowAndDefaultsToTypeZero) {
  Embedding layer(5, 6, 3, 2);
  Rng rng(4);
  layer.init_parameters(rng);
  const Tensor ids = sample_ids();
  Context ctx;
  const Tensor typed = layer.forward(std::vector<Tensor>{ids, sample_type_ids()}, ctx);
  ASSERT_EQ(typed.shape(), (Shape{2, 4, 3}));
  EXPECT_TRUE(all_close(typed, reference_with_types(layer, ids, sample_type_ids().to_vector())));
  const Tensor untyped = layer.forward(ids, ctx);
  EXPECT_TRUE(all_close(untyped, reference_with_types(layer, ids, std::vector<float>(8, 0.0f))));
}

TEST(EmbeddingTokenTypes, TableGradientsMatchFiniteDifferences) {
  Embedding layer(5, 6, 3, 2);
  Rng rng(5);
  layer.init_parameters(rng);
  testing::GradCheckOptions options;
  options.differentiable = {false, false};
  EXPECT_TRUE(check_gradients(layer, {sample_ids(), sample_type_ids()}, options));
  options.differentiable = {false};
  EXPECT_TRUE(check_gradients(layer, {sample_ids()}, options));
}

TEST(EmbeddingTokenTypes, TypeGradientSumsRowsOfEachTypeAndAccumulates) {
  Embedding layer(5, 6, 3, 2);
  const Tensor dy = testing::random_tensor({2, 4, 3}, 6);
  const std::vector<float> types = sample_type_ids().to_vector();
  Context ctx;
  layer.forward(std::vector<Tensor>{sample_ids(), sample_type_ids()}, ctx);
  layer.zero_grad();
  const std::vector<Tensor> grads = layer.backward(dy, ctx);
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_FALSE(grads[0].defined());
  EXPECT_FALSE(grads[1].defined());
  std::vector<double> expected(2 * 3, 0.0);
  for (int64_t r = 0; r < 8; ++r) {
    const auto type = static_cast<int64_t>(types[static_cast<size_t>(r)]);
    for (int64_t d = 0; d < 3; ++d) {
      expected[static_cast<size_t>(type * 3 + d)] += dy.data()[r * 3 + d];
    }
  }
  EXPECT_TRUE(all_close(layer.token_type_table().grad, expected));
  layer.backward(dy, ctx);
  for (double& e : expected) e *= 2;
  EXPECT_TRUE(all_close(layer.token_type_table().grad, expected));
}

TEST(EmbeddingTokenTypes, CountsParametersAndFlopsAsBert) {
  Embedding bert(30522, 512, 768, 2);
  EXPECT_EQ(bert.parameter_count(), (30522 + 512 + 2) * 768);
  std::vector<std::string> names;
  for (Parameter* p : bert.parameters()) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"token_table", "position_table", "token_type_table"}));
  const FlopCount f = bert.flops(std::vector<Shape>{{2, 8}, {2, 8}});
  EXPECT_EQ(f.forward_flops, 2 * 2 * 8 * 768);
  EXPECT_EQ(f.backward_flops, 3 * 2 * 8 * 768);
  EXPECT_EQ(bert.flops(Shape{2, 8}).forward_flops, f.forward_flops);
}

TEST(EmbeddingTokenTypes, RejectsBadTypeIdsAndInputs) {
  EXPECT_TRUE(throws_invalid([] { Embedding(5, 4, 2, -1); }, {"token_types must be >= 0"}));
  Embedding layer(5, 4, 2, 2);
  Context ctx;
  const Tensor ids = Tensor::from_vector({1, 2}, std::vector<float>{1, 2});
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(
            std::vector<Tensor>{ids, Tensor::from_vector({1, 2}, std::vector<float>{0, 2})}, ctx);
      },
      {"Embedding: token type ids", "id 2 at index 1", "[0, 2)"}));
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(std::vector<Tensor>{ids, Tensor::zeros({2, 1})}, ctx);
      },
      {"token type ids [2, 1]", "shape of the token ids [1, 2]"}));
  EXPECT_TRUE(throws_invalid(
      [&] {
        layer.forward(std::vector<Tensor>{ids, ids, ids}, ctx);
      },
      {"optionally token type ids", "got 3 inputs"}));
  Embedding untyped(5, 4, 2);
  EXPECT_TRUE(throws_invalid(
      [&] {
        untyped.forward(std::vector<Tensor>{ids, ids}, ctx);
      },
      {"takes 1 input(s), got 2"}));
}

// The portable defaults (built from embedding_forward/backward) and the CPU kernels agree.
TEST(BackendRowGather, DefaultsAndCpuKernelsAgree) {
  Backend& cpu = backend_for(Device::cpu);
  const Tensor ids = Tensor::from_vector({2, 3}, std::vector<float>{2, 0, 2, 1, 2, 0});
  const Tensor table = testing::random_tensor({3, 70}, 7);  // wider than one column block
  const Tensor start = testing::random_tensor({2, 3, 70}, 8);
  Tensor by_cpu = start.clone();
  Tensor by_default = start.clone();
  cpu.gather_rows_add(ids, table, by_cpu);
  cpu.Backend::gather_rows_add(ids, table, by_default);
  std::vector<double> expected;
  for (int64_t r = 0; r < 6; ++r) {
    const auto id = static_cast<int64_t>(ids.data()[r]);
    for (int64_t c = 0; c < 70; ++c) {
      expected.push_back(double(start.data()[r * 70 + c]) + table.data()[id * 70 + c]);
    }
  }
  EXPECT_TRUE(all_close(by_cpu, expected));
  EXPECT_TRUE(all_close(by_default, expected));

  const Tensor dy = testing::random_tensor({2, 3, 70}, 9);
  Tensor dtable_cpu = table.clone();
  Tensor dtable_default = table.clone();
  cpu.scatter_rows_add(ids, dy, dtable_cpu);
  cpu.Backend::scatter_rows_add(ids, dy, dtable_default);
  const std::vector<float> before = table.to_vector();
  std::vector<double> scattered(before.begin(), before.end());
  for (int64_t r = 0; r < 6; ++r) {
    const auto id = static_cast<int64_t>(ids.data()[r]);
    for (int64_t c = 0; c < 70; ++c) {
      scattered[static_cast<size_t>(id * 70 + c)] += dy.data()[r * 70 + c];
    }
  }
  EXPECT_TRUE(all_close(dtable_cpu, scattered));
  EXPECT_TRUE(all_close(dtable_default, scattered));
}

TEST(BackendRowGather, RejectsMismatchedShapesAndBadIds) {
  Backend& cpu = backend_for(Device::cpu);
  const Tensor table = Tensor::zeros({3, 4});
  Tensor y({2, 5});
  EXPECT_TRUE(throws_invalid([&] { cpu.gather_rows_add(Tensor::zeros({2}), table, y); },
                             {"gather_rows_add", "2 rows of D values", "[3, 4]", "[2, 5]"}));
  EXPECT_TRUE(throws_invalid([&] { cpu.Backend::gather_rows_add(Tensor::zeros({2}), table, y); },
                             {"gather_rows_add", "[2, 5]"}));
  Tensor dtable = Tensor::zeros({3, 4});
  EXPECT_TRUE(throws_invalid(
      [&] {
        cpu.scatter_rows_add(Tensor::full({2}, 3.0f), Tensor::zeros({2, 4}), dtable);
      },
      {"scatter_rows_add: id 3 at index 0", "[0, 3)"}));
}

}  // namespace
}  // namespace interplace::kernels
