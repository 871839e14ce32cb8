#include "interplace/kernels/layers/attention.hpp"

#include <cmath>

#include "init.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/linear.hpp"

namespace interplace::kernels {

namespace {

// Indices into Context::saved.
enum Saved { kInput, kQuery, kKey, kValue, kProbabilities, kMerged };

}  // namespace

SelfAttention::SelfAttention(int64_t dim, int64_t heads, bool causal)
    : dim_(dim), heads_(heads), causal_(causal) {
  // type() is virtual, so the constructor names the layer itself.
  const std::string name = causal ? "CausalSelfAttention" : "SelfAttention";
  if (dim < 1 || heads < 1) {
    throw_invalid(name + ": dim and heads must be positive, got dim=" + std::to_string(dim) +
                  " heads=" + std::to_string(heads));
  }
  if (dim % heads != 0) {
    throw_invalid(name + ": dim " + std::to_string(dim) + " is not divisible by heads " +
                  std::to_string(heads));
  }
  head_dim_ = dim / heads;
  qkv_weight_ = {"qkv.weight", Tensor::zeros({3 * dim, dim}), Tensor(), true};
  qkv_bias_ = {"qkv.bias", Tensor::zeros({3 * dim}), Tensor(), false};
  proj_weight_ = {"proj.weight", Tensor::zeros({dim, dim}), Tensor(), true};
  proj_bias_ = {"proj.bias", Tensor::zeros({dim}), Tensor(), false};
}

void SelfAttention::init_parameters(Rng& rng) {
  for (Parameter* p : {&qkv_weight_, &proj_weight_}) {
    fill_normal(p->value, rng, 0.0f, 0.02f);
  }
  qkv_bias_.value.fill(0.0f);
  proj_bias_.value.fill(0.0f);
}

Shape SelfAttention::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (in.size() != 3 || in[2] != dim_) {
    throw_invalid(type() + "(dim=" + std::to_string(dim_) + "): input must be [batch, time, " +
                  std::to_string(dim_) + "], got " + to_string(in));
  }
  return in;
}

FlopCount SelfAttention::count_flops(std::span<const Shape> /*inputs*/, const Shape& output) const {
  const int64_t batch = output[0], time = output[1], rows = batch * time;
  const int64_t projections = 2 * rows * dim_ * (3 * dim_) + 2 * rows * dim_ * dim_;
  const int64_t biases = rows * 4 * dim_;
  const int64_t scores_and_mix = 2 * (2 * batch * time * time * dim_);
  const int64_t unmasked =
      causal_ ? batch * heads_ * time * (time + 1) / 2 : batch * heads_ * time * time;
  return {projections + biases + scores_and_mix + 5 * unmasked,
          2 * projections + biases + 2 * scores_and_mix + 4 * unmasked, projections + biases};
}

Tensor SelfAttention::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) {
  const Tensor& x = inputs[0];
  const Device device = x.device();
  const int64_t batch = x.dim(0), time = x.dim(1), rows = batch * time;
  const int64_t groups = batch * heads_;  // one matrix product per (sample, head)

  Tensor qkv({rows, 3 * dim_}, device);
  backend.matmul({1, rows, 3 * dim_, dim_, false, true}, x, qkv_weight_.value, qkv);
  backend.add_row_bias(qkv_bias_.value, qkv);

  // [B, T, 3H, hd] -> [B, 3H, T, hd]; q, k, v are channel blocks 0, H, 2H of axis 1.
  Tensor heads({batch, 3 * heads_, time, head_dim_}, device);
  backend.swap_axes_12(qkv.reshaped({batch, time, 3 * heads_, head_dim_}), heads);
  Tensor heads_flat = heads.reshaped({batch, 3 * heads_, time * head_dim_});
  Tensor qkv_split[3];
  for (int64_t i = 0; i < 3; ++i) {
    qkv_split[i] = Tensor({batch, heads_, time * head_dim_}, device);
    backend.copy_channels(qkv_split[i], heads_flat, i * heads_, false);
  }
  const Tensor& q = qkv_split[0];
  const Tensor& k = qkv_split[1];
  const Tensor& v = qkv_split[2];

  const float alpha = 1.0f / std::sqrt(static_cast<float>(head_dim_));
  Tensor scores({groups, time, time}, device);
  backend.matmul({groups, time, time, head_dim_, false, true, alpha}, q, k, scores);
  Tensor probabilities({groups, time, time}, device);
  backend.softmax_forward(scores, causal_, probabilities);

  Tensor attended({batch, heads_, time, head_dim_}, device);
  backend.matmul({groups, time, head_dim_, time}, probabilities, v, attended);
  Tensor merged({batch, time, heads_, head_dim_}, device);
  backend.swap_axes_12(attended, merged);

  Tensor y({batch, time, dim_}, device);
  backend.matmul({1, rows, dim_, dim_, false, true}, merged, proj_weight_.value, y);
  backend.add_row_bias(proj_bias_.value, y);
  ctx.saved = {x, q, k, v, probabilities, merged};
  return y;
}

std::vector<Tensor> SelfAttention::run_backward(Backend& backend, const Tensor& grad_output,
                                                Context& ctx, Gradients which) {
  const Tensor& x = ctx.saved[kInput];
  const Tensor& q = ctx.saved[kQuery];
  const Tensor& k = ctx.saved[kKey];
  const Tensor& v = ctx.saved[kValue];
  const Tensor& probabilities = ctx.saved[kProbabilities];
  const Device device = x.device();
  const int64_t batch = x.dim(0), time = x.dim(1), rows = batch * time;
  const int64_t groups = batch * heads_;

  // Output projection.
  const bool parameters = which == Gradients::inputs_and_parameters;
  if (parameters) {
    Linear::parameter_gradients(backend, grad_output, ctx.saved[kMerged], proj_weight_,
                                &proj_bias_);
  }
  Tensor dmerged({batch, time, heads_, head_dim_}, device);
  backend.matmul({1, rows, dim_, dim_}, grad_output, proj_weight_.value, dmerged);
  Tensor dattended({batch, heads_, time, head_dim_}, device);
  backend.swap_axes_12(dmerged, dattended);

  // attended = P v: dP = dA v^T, dv = P^T dA.
  Tensor dprobabilities({groups, time, time}, device);
  backend.matmul({groups, time, time, head_dim_, false, true}, dattended, v, dprobabilities);
  Tensor dqkv_split[3];
  for (Tensor& t : dqkv_split) t = Tensor({batch, heads_, time * head_dim_}, device);
  backend.matmul({groups, time, head_dim_, time, true, false}, probabilities, dattended,
                 dqkv_split[2]);

  // scores = alpha q k^T: dq = alpha dS k, dk = alpha dS^T q.
  Tensor dscores({groups, time, time}, device);
  backend.softmax_backward(probabilities, dprobabilities, dscores);
  const float alpha = 1.0f / std::sqrt(static_cast<float>(head_dim_));
  backend.matmul({groups, time, head_dim_, time, false, false, alpha}, dscores, k, dqkv_split[0]);
  backend.matmul({groups, time, head_dim_, time, true, false, alpha}, dscores, q, dqkv_split[1]);

  // Reassemble [B, 3H, T, hd] and swap back to [B, T, 3 dim].
  Tensor dheads({batch, 3 * heads_, time * head_dim_}, device);
  for (int64_t i = 0; i < 3; ++i) {
    backend.copy_channels(dqkv_split[i], dheads, i * heads_, true);
  }
  Tensor dqkv({batch, time, 3 * heads_, head_dim_}, device);
  backend.swap_axes_12(dheads.reshaped({batch, 3 * heads_, time, head_dim_}), dqkv);

  // Input projection.
  if (parameters) Linear::parameter_gradients(backend, dqkv, x, qkv_weight_, &qkv_bias_);
  Tensor dx({batch, time, dim_}, device);
  backend.matmul({1, rows, dim_, 3 * dim_}, dqkv, qkv_weight_.value, dx);
  // The projections' weight gradients need the gradients at their outputs.
  if (which == Gradients::inputs_deferring_parameters) ctx.deferred = {grad_output, dqkv};
  return {dx};
}

void SelfAttention::run_backward_parameters(Context& ctx) {
  const Tensor& grad_output = ctx.deferred[0];
  Backend& backend = backend_for(grad_output.device());
  Linear::parameter_gradients(backend, grad_output, ctx.saved[kMerged], proj_weight_, &proj_bias_);
  Linear::parameter_gradients(backend, ctx.deferred[1], ctx.saved[kInput], qkv_weight_, &qkv_bias_);
}

}  // namespace interplace::kernels
