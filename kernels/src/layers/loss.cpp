#include "interplace/kernels/layers/loss.hpp"

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

namespace {

// Indices into Context::saved.
enum Saved { kProbabilities, kLabels, kCorrect, kSavedCount };

}  // namespace

int64_t SoftmaxCrossEntropy::correct_count(const Context& ctx) {
  if (ctx.saved.size() != kSavedCount || ctx.saved[kCorrect].numel() != 1) {
    throw_invalid(
        "SoftmaxCrossEntropy::correct_count: the context holds no forward call of "
        "a SoftmaxCrossEntropy layer");
  }
  return static_cast<int64_t>(ctx.saved[kCorrect].at(0));
}

Shape SoftmaxCrossEntropy::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& logits = inputs[0];
  const Shape& labels = inputs[1];
  if (logits.size() < 2) {
    throw_invalid(
        "SoftmaxCrossEntropy: logits must be [rows, classes] or [batch, time, "
        "classes], got " +
        to_string(logits));
  }
  const Shape rows_shape(logits.begin(), logits.end() - 1);
  const int64_t rows = numel(rows_shape);
  if (labels != rows_shape && labels != Shape{rows}) {
    std::string expected = to_string(rows_shape);
    if (rows_shape.size() > 1) expected += " or [" + std::to_string(rows) + "]";
    throw_invalid("SoftmaxCrossEntropy: labels " + to_string(labels) + " do not match logits " +
                  to_string(logits) + "; expected " + expected);
  }
  return {1};
}

FlopCount SoftmaxCrossEntropy::count_flops(std::span<const Shape> inputs,
                                           const Shape& /*output*/) const {
  const int64_t logits = numel(inputs[0]);
  const int64_t rows = logits / inputs[0].back();
  return {5 * logits + 2 * rows, logits + rows};
}

Tensor SoftmaxCrossEntropy::run_forward(Backend& backend, std::span<const Tensor> inputs,
                                        Context& ctx) {
  const Tensor& logits = inputs[0];
  const int64_t classes = logits.dim(-1);
  const int64_t rows = logits.numel() / classes;
  const Tensor logits_2d = logits.reshaped({rows, classes});
  const Tensor labels = inputs[1].reshaped({rows});
  Tensor probabilities({rows, classes}, logits.device());
  const Backend::LossResult result =
      backend.softmax_cross_entropy_forward(logits_2d, labels, probabilities);
  Tensor loss({1}, logits.device());
  backend.fill(loss, static_cast<float>(result.loss));
  // A host tensor, so that correct_count can read it whatever the device.
  ctx.saved = {probabilities, labels, Tensor::full({1}, static_cast<float>(result.correct))};
  return loss;
}

std::vector<Tensor> SoftmaxCrossEntropy::run_backward(Backend& backend, const Tensor& grad_output,
                                                      Context& ctx, Gradients /*which*/) {
  const Tensor& probabilities = ctx.saved[kProbabilities];
  const int64_t rows = probabilities.dim(0);
  // The scale is a kernel argument, so the [1] gradient is read on the host (a one-float
  // copy when it lives on a device).
  const float g = grad_output.to(Device::cpu).at(0);
  Tensor dlogits(ctx.input_shapes[0], probabilities.device());
  Tensor dlogits_2d = dlogits.reshaped(probabilities.shape());
  backend.softmax_cross_entropy_backward(probabilities, ctx.saved[kLabels],
                                         g / static_cast<float>(rows), dlogits_2d);
  return {dlogits, Tensor()};
}

}  // namespace interplace::kernels
