#include "interplace/kernels/layers/embedding.hpp"

#include "init.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

namespace {
constexpr int64_t kLargestExactId = int64_t{1} << 24;  // floats hold integers exactly up to here
}  // namespace

Embedding::Embedding(int64_t vocab_size, int64_t max_positions, int64_t dim)
    : vocab_size_(vocab_size), max_positions_(max_positions), dim_(dim) {
  if (vocab_size < 1 || max_positions < 1 || dim < 1) {
    throw_invalid("Embedding: vocab_size, max_positions and dim must be positive, got " +
                  std::to_string(vocab_size) + ", " + std::to_string(max_positions) + ", " +
                  std::to_string(dim));
  }
  if (vocab_size > kLargestExactId) {
    throw_invalid("Embedding: vocab_size " + std::to_string(vocab_size) + " exceeds " +
                  std::to_string(kLargestExactId) + ", the largest id a float holds exactly");
  }
  token_table_ = {"token_table", Tensor::zeros({vocab_size, dim}), Tensor(), true};
  position_table_ = {"position_table", Tensor::zeros({max_positions, dim}), Tensor(), true};
}

void Embedding::init_parameters(Rng& rng) {
  for (Parameter* p : parameters()) {
    fill_normal(p->value, rng, 0.0f, 0.02f);
  }
}

Shape Embedding::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (in.size() != 2) {
    throw_invalid("Embedding: input must be token ids [batch, time], got " + to_string(in));
  }
  if (in[1] > max_positions_) {
    throw_invalid("Embedding: sequence length " + std::to_string(in[1]) + " (input " +
                  to_string(in) + ") exceeds max_positions " + std::to_string(max_positions_));
  }
  return {in[0], in[1], dim_};
}

FlopCount Embedding::count_flops(std::span<const Shape> /*inputs*/, const Shape& output) const {
  const int64_t n = numel(output);
  return {n, 2 * n};
}

Tensor Embedding::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) {
  const Tensor& ids = inputs[0];
  Tensor y({ids.dim(0), ids.dim(1), dim_}, ids.device());
  backend.embedding_forward(ids, token_table_.value, position_table_.value, y);
  ctx.saved = {ids};
  return y;
}

std::vector<Tensor> Embedding::run_backward(Backend& backend, const Tensor& grad_output,
                                            Context& ctx) {
  // The kernel accumulates, so fresh gradients start from zero.
  for (Parameter* p : parameters()) {
    if (!begin_grad(*p)) backend.fill(p->grad, 0.0f);
  }
  backend.embedding_backward(ctx.saved[0], grad_output, token_table_.grad, position_table_.grad);
  token_table_.grad_is_zero = false;
  position_table_.grad_is_zero = false;
  return {Tensor()};
}

}  // namespace interplace::kernels
