#include "interplace/kernels/layers/select_token.hpp"

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

SelectToken::SelectToken(int64_t index) : index_(index) {
  if (index < 0) {
    throw_invalid("SelectToken: index must be >= 0, got " + std::to_string(index));
  }
}

Shape SelectToken::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (in.size() != 3) {
    throw_invalid("SelectToken: input must be [batch, time, features], got " + to_string(in));
  }
  if (index_ >= in[1]) {
    throw_invalid("SelectToken: index " + std::to_string(index_) + " is outside the " +
                  std::to_string(in[1]) + " positions of input " + to_string(in));
  }
  return {in[0], in[2]};
}

FlopCount SelectToken::count_flops(std::span<const Shape> /*inputs*/,
                                   const Shape& /*output*/) const {
  return {0, 0};
}

Tensor SelectToken::run_forward(Backend& backend, std::span<const Tensor> inputs,
                                Context& /*ctx*/) {
  const Tensor& x = inputs[0];
  const int64_t batch = x.dim(0), features = x.dim(2);
  // Positions are the channel axis of [B, T, D]: the copy takes channel `index`.
  Tensor y({batch, 1, features}, x.device());
  Tensor whole = x;  // copy_channels takes the whole by reference; it is only read here
  backend.copy_channels(y, whole, index_, /*slice_to_whole=*/false);
  return y.reshaped({batch, features});
}

std::vector<Tensor> SelectToken::run_backward(Backend& backend, const Tensor& grad_output,
                                              Context& ctx, Gradients /*which*/) {
  const Shape& in = ctx.input_shapes[0];
  Tensor dx(in, grad_output.device());
  backend.fill(dx, 0.0f);
  Tensor slice = grad_output.reshaped({in[0], 1, in[2]});
  backend.copy_channels(slice, dx, index_, /*slice_to_whole=*/true);
  return {dx};
}

}  // namespace interplace::kernels
