// Softmax cross-entropy over logits [rows, classes]. The loss of a row is computed as
// log(sum exp(z - max)) - (z[label] - max), never as -log(probability), so it stays finite
// when the label's probability underflows.
#include <cmath>
#include <vector>

#include "cpu_backend.hpp"
#include "cpu_fast_exp.hpp"
#include "cpu_indices.hpp"
#include "interplace/kernels/error.hpp"
#include "shape_checks.hpp"

namespace interplace::kernels::cpu {

namespace {

constexpr int64_t kParallelElements = 32768;

detail::LossDims check_loss(const char* op, const Tensor& logits, const Tensor& labels,
                            const Tensor& other) {
  const detail::LossDims dims = detail::check_loss(op, logits, labels, other);
  check_indices(labels, dims.classes, std::string(op) + ": label", "the number of classes");
  return dims;
}

}  // namespace

Backend::LossResult CpuBackend::softmax_cross_entropy_forward(const Tensor& logits,
                                                              const Tensor& labels,
                                                              Tensor& probabilities) {
  const detail::LossDims dims =
      check_loss("softmax_cross_entropy_forward", logits, labels, probabilities);
  const int64_t rows = dims.rows, classes = dims.classes;
  const float* pz = logits.data();
  const float* pl = labels.data();
  float* pp = probabilities.data();
  // Per-row results, summed serially afterwards: the total does not depend on threads.
  std::vector<double> row_loss(static_cast<size_t>(rows));
  std::vector<char> row_correct(static_cast<size_t>(rows));
#pragma omp parallel for if (logits.numel() > kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const float* zr = pz + r * classes;
    float* pr = pp + r * classes;
    float max = zr[0];
#pragma omp simd reduction(max : max)
    for (int64_t c = 0; c < classes; ++c) max = zr[c] > max ? zr[c] : max;
    int64_t arg_max = 0;  // first index of the maximum
    while (arg_max + 1 < classes && !(zr[arg_max] == max)) ++arg_max;
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < classes; ++c) {
      pr[c] = exp_nonpositive(zr[c] - max);
      sum += pr[c];
    }
    const auto inv = static_cast<float>(1.0 / sum);
#pragma omp simd
    for (int64_t c = 0; c < classes; ++c) pr[c] *= inv;
    const auto label = static_cast<int64_t>(pl[r]);
    row_loss[static_cast<size_t>(r)] = std::log(sum) - (static_cast<double>(zr[label]) - max);
    row_correct[static_cast<size_t>(r)] = arg_max == label;
  }
  LossResult result{0.0, 0};
  for (int64_t r = 0; r < rows; ++r) {
    result.loss += row_loss[static_cast<size_t>(r)];
    result.correct += row_correct[static_cast<size_t>(r)];
  }
  result.loss /= static_cast<double>(rows);
  return result;
}

void CpuBackend::softmax_cross_entropy_backward(const Tensor& probabilities, const Tensor& labels,
                                                float scale, Tensor& dlogits) {
  const detail::LossDims dims =
      check_loss("softmax_cross_entropy_backward", probabilities, labels, dlogits);
  const int64_t rows = dims.rows, classes = dims.classes;
  const float* pp = probabilities.data();
  const float* pl = labels.data();
  float* pd = dlogits.data();
#pragma omp parallel for if (probabilities.numel() > kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const float* pr = pp + r * classes;
    float* dr = pd + r * classes;
#pragma omp simd
    for (int64_t c = 0; c < classes; ++c) dr[c] = pr[c] * scale;
    dr[static_cast<int64_t>(pl[r])] -= scale;
  }
}

}  // namespace interplace::kernels::cpu
