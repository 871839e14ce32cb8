// Embedding, softmax, loss and dropout on CUDA against the CPU backend.
#include <cmath>

#include <gtest/gtest.h>

#include "cuda_compare.hpp"
#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layers/dropout.hpp"
#include "interplace/kernels/layers/embedding.hpp"
#include "interplace/kernels/layers/loss.hpp"

namespace interplace::kernels {
namespace {

using testing::close_to;
using testing::CompareOptions;
using testing::CudaTest;
using testing::maker;
using testing::matches_cpu;
using testing::random_integers;
using testing::random_tensor;

using CudaSequence = CudaTest;

// A small vocabulary, so that ids repeat and the token gradient's atomics collide.
TEST_F(CudaSequence, EmbeddingWithRepeatedIds) {
  EXPECT_TRUE(matches_cpu(maker<Embedding>(7, 16, 12), {random_integers({4, 10}, 7, 1)}));
}

TEST_F(CudaSequence, EmbeddingRejectsBadIds) {
  Embedding layer(5, 8, 4);
  layer.to(Device::cuda);
  Tensor ids = random_integers({2, 3}, 5, 2);
  ids.data()[4] = 5.0f;
  Context ctx;
  testing::expect_invalid([&] { layer.forward(ids.to(Device::cuda), ctx); },
                          "token id 5 at index 4 is not an integer in [0, 5)");
  ids.data()[4] = 1.5f;
  testing::expect_invalid([&] { layer.forward(ids.to(Device::cuda), ctx); }, "1.5 at index 4");
}

TEST_F(CudaSequence, SoftmaxPlainAndCausal) {
  Backend& cpu = backend_for(Device::cpu);
  Backend& cuda = backend_for(Device::cuda);
  for (const bool causal : {false, true}) {
    // Rows of 300 columns: more than one block of threads per row.
    const Shape shape = causal ? Shape{2, 3, 300, 300} : Shape{5, 300};
    const Tensor x = random_tensor(shape, 3, 3.0f);
    Tensor y(shape), gy(shape, Device::cuda);
    cpu.softmax_forward(x, causal, y);
    cuda.softmax_forward(x.to(Device::cuda), causal, gy);
    EXPECT_TRUE(close_to(gy, y, 1e-6, causal ? "causal softmax" : "softmax"));
    const Tensor dy = random_tensor(shape, 4);
    Tensor dx(shape), gdx(shape, Device::cuda);
    cpu.softmax_backward(y, dy, dx);
    cuda.softmax_backward(gy, dy.to(Device::cuda), gdx);
    EXPECT_TRUE(close_to(gdx, dx, 1e-5, causal ? "causal softmax gradient" : "softmax gradient"));
  }
}

// The loss layer on both devices: gradients (matches_cpu), the value and the count of
// rows whose first arg-max is the label agree. Returns that count.
int64_t loss_agrees_with_cpu(const Tensor& logits, const Tensor& labels) {
  EXPECT_TRUE(matches_cpu(maker<SoftmaxCrossEntropy>(), {logits, labels}));
  SoftmaxCrossEntropy loss;
  Context cpu_ctx, gpu_ctx;
  const Tensor inputs[] = {logits, labels};
  const Tensor gpu_inputs[] = {logits.to(Device::cuda), labels.to(Device::cuda)};
  const Tensor value = loss.forward(inputs, cpu_ctx);
  const Tensor gpu_value = loss.forward(gpu_inputs, gpu_ctx);
  EXPECT_TRUE(close_to(gpu_value, value, 1e-6, "loss"));
  EXPECT_EQ(SoftmaxCrossEntropy::correct_count(gpu_ctx),
            SoftmaxCrossEntropy::correct_count(cpu_ctx));
  return SoftmaxCrossEntropy::correct_count(gpu_ctx);
}

TEST_F(CudaSequence, CrossEntropyLossGradientAndCorrectCount) {
  // Logits [B, T, classes] with labels [B, T]; a wide class axis as language models have.
  const Tensor logits = random_tensor({3, 4, 1000}, 5, 2.0f);
  Tensor labels = random_integers({3, 4}, 1000, 6);
  // Make some rows right: label = arg-max.
  for (int64_t r = 0; r < 12; r += 3) {
    int64_t best = 0;
    for (int64_t c = 1; c < 1000; ++c) {
      if (logits.data()[r * 1000 + c] > logits.data()[r * 1000 + best]) best = c;
    }
    labels.data()[r] = static_cast<float>(best);
  }
  EXPECT_GE(loss_agrees_with_cpu(logits, labels), 4);
}

// A GPT-wide class axis, where each thread sees many columns: ties for the maximum (the
// first column counts), a maximum that keeps growing along the row (the running sum is
// rescaled at every column), large logits and -inf logits.
TEST_F(CudaSequence, CrossEntropyWideRowsTiesAndGrowingMaxima) {
  const int64_t classes = 50257;
  Tensor logits = random_tensor({5, classes}, 8, 3.0f);
  float* z = logits.data();
  const float labels_data[] = {7.0f, 40000.0f, static_cast<float>(classes - 1), 3.0f, 11.0f};
  z[7] = z[40000] = 50.0f;                      // row 0: tie, label the first
  z[classes + 7] = z[classes + 40000] = 50.0f;  // row 1: tie, label the second
  for (int64_t c = 0; c < classes; ++c) {
    z[2 * classes + c] = 0.001f * static_cast<float>(c);  // row 2: maximum grows to the end
    z[3 * classes + c] = 80.0f * std::sin(static_cast<float>(c));  // row 3: large logits
  }
  for (int64_t c = 0; c < classes; c += 2) z[4 * classes + c] = -INFINITY;  // row 4
  const Tensor labels = Tensor::from_vector({5}, labels_data);
  EXPECT_EQ(loss_agrees_with_cpu(logits, labels), 2);  // rows 0 and 2
}

TEST_F(CudaSequence, CrossEntropyRejectsBadLabels) {
  SoftmaxCrossEntropy loss;
  Context ctx;
  const float bad[] = {0.0f, 3.0f};
  const Tensor inputs[] = {random_tensor({2, 3}, 7).to(Device::cuda),
                           Tensor::from_vector({2}, bad).to(Device::cuda)};
  testing::expect_invalid([&] { loss.forward(inputs, ctx); },
                          "label 3 at index 1 is not an integer in [0, 3)");
}

// Counter-based masks: the GPU draws the very same mask as the CPU for a seed.
TEST_F(CudaSequence, DropoutMaskEqualsTheCpuMask) {
  for (const float p : {0.1f, 0.5f, 0.9f}) {
    Tensor mask({100003});
    Tensor gpu_mask({100003}, Device::cuda);
    backend_for(Device::cpu).dropout_mask(1234, p, mask);
    backend_for(Device::cuda).dropout_mask(1234, p, gpu_mask);
    EXPECT_TRUE(close_to(gpu_mask, mask, 0.0, "dropout mask"));
  }
}

TEST_F(CudaSequence, DropoutLayerTrainingAndEvaluation) {
  const auto make = maker<Dropout>(0.3f, uint64_t{99});
  EXPECT_TRUE(matches_cpu(make, {random_tensor({4, 50}, 8)}));
  CompareOptions eval;
  eval.training = false;
  EXPECT_TRUE(matches_cpu(make, {random_tensor({4, 50}, 9)}, eval));
}

}  // namespace
}  // namespace interplace::kernels
