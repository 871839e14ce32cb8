#include "interplace/kernels/layers/attend.hpp"

#include <cmath>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

namespace {

struct Sizes {
  int64_t batch, queries, memory, dim;
};

Sizes sizes_of(const Shape& q, const Shape& m) {
  return {q[0], q[1], m[1], q[2]};
}

}  // namespace

Shape Attend::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& q = inputs[0];
  const Shape& m = inputs[1];
  if (q.size() != 3 || m.size() != 3 || q[0] != m[0] || q[2] != m[2]) {
    throw_invalid("Attend: queries " + to_string(q) + " and memory " + to_string(m) +
                  " must be [B, Tq, D] and [B, S, D] with the same B and D");
  }
  return q;
}

FlopCount Attend::count_flops(std::span<const Shape> inputs, const Shape& /*output*/) const {
  const Sizes s = sizes_of(inputs[0], inputs[1]);
  const int64_t scores = s.batch * s.queries * s.memory;
  return {4 * scores * s.dim + 5 * scores, 8 * scores * s.dim + 4 * scores};
}

Tensor Attend::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) {
  const Tensor& q = inputs[0];
  const Tensor& m = inputs[1];
  const Sizes s = sizes_of(q.shape(), m.shape());
  const float alpha = 1.0f / std::sqrt(static_cast<float>(s.dim));
  Tensor scores({s.batch, s.queries, s.memory}, q.device());
  backend.matmul({s.batch, s.queries, s.memory, s.dim, false, true, alpha}, q, m, scores);
  Tensor probabilities(scores.shape(), q.device());
  backend.softmax_forward(scores, /*causal=*/false, probabilities);
  Tensor y(q.shape(), q.device());
  backend.matmul({s.batch, s.queries, s.dim, s.memory}, probabilities, m, y);
  ctx.saved = {q, m, probabilities};
  return y;
}

std::vector<Tensor> Attend::run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                         Gradients /*which*/) {
  const Tensor& q = ctx.saved[0];
  const Tensor& m = ctx.saved[1];
  const Tensor& p = ctx.saved[2];
  const Sizes s = sizes_of(q.shape(), m.shape());
  const float alpha = 1.0f / std::sqrt(static_cast<float>(s.dim));
  Tensor dp(p.shape(), q.device());
  backend.matmul({s.batch, s.queries, s.memory, s.dim, false, true}, grad_output, m, dp);
  Tensor dm(m.shape(), m.device());
  backend.matmul({s.batch, s.memory, s.dim, s.queries, true, false}, p, grad_output, dm);
  Tensor dscores(p.shape(), q.device());
  backend.softmax_backward(p, dp, dscores);
  Tensor dq(q.shape(), q.device());
  backend.matmul({s.batch, s.queries, s.dim, s.memory, false, false, alpha}, dscores, m, dq);
  backend.matmul({s.batch, s.memory, s.dim, s.queries, true, false, alpha, 1.0f}, dscores, q, dm);
  return {dq, dm};
}

}  // namespace interplace::kernels
