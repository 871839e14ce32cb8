#include "interplace/kernels/layers/dropout.hpp"

#include <sstream>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

Dropout::Dropout(float p, uint64_t seed) : p_(p), seed_(seed) {
  if (!(p >= 0.0f && p < 1.0f)) {
    std::ostringstream message;
    message << "Dropout: probability p must be in [0, 1), got " << p;
    throw_invalid(message.str());
  }
}

FlopCount Dropout::count_flops(std::span<const Shape> /*inputs*/, const Shape& output) const {
  if (is_identity()) return {0, 0};
  return {numel(output), numel(output)};
}

Tensor Dropout::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) {
  const Tensor& x = inputs[0];
  if (is_identity()) return x;  // ctx.saved stays empty: backward is the identity too
  // Rng(seed + n * golden).next_u64() is the n-th output of splitmix64(seed).
  const uint64_t mask_seed = Rng(seed_ + call_counter_ * 0x9E3779B97F4A7C15ull).next_u64();
  ++call_counter_;
  Tensor mask(x.shape(), x.device());
  backend.dropout_mask(mask_seed, p_, mask);
  Tensor y(x.shape(), x.device());
  backend.multiply(x, mask, y);
  ctx.saved = {mask};
  return y;
}

std::vector<Tensor> Dropout::run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                          Gradients /*which*/) {
  if (ctx.saved.empty()) return {grad_output};
  Tensor dx(grad_output.shape(), grad_output.device());
  backend.multiply(grad_output, ctx.saved[0], dx);
  return {dx};
}

}  // namespace interplace::kernels
