#include "interplace/kernels/layers/embedding.hpp"

#include "init.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

namespace {
constexpr int64_t kLargestExactId = int64_t{1} << 24;  // floats hold integers exactly up to here
}  // namespace

Embedding::Embedding(int64_t vocab_size, int64_t max_positions, int64_t dim, int64_t token_types)
    : vocab_size_(vocab_size), max_positions_(max_positions), dim_(dim), token_types_(token_types) {
  if (vocab_size < 1 || max_positions < 1 || dim < 1) {
    throw_invalid("Embedding: vocab_size, max_positions and dim must be positive, got " +
                  std::to_string(vocab_size) + ", " + std::to_string(max_positions) + ", " +
                  std::to_string(dim));
  }
  if (token_types < 0) {
    throw_invalid("Embedding: token_types must be >= 0 (0 = no token types), got " +
                  std::to_string(token_types));
  }
  for (int64_t count : {vocab_size, token_types}) {
    if (count > kLargestExactId) {
      throw_invalid("Embedding: table size " + std::to_string(count) + " exceeds " +
                    std::to_string(kLargestExactId) + ", the largest id a float holds exactly");
    }
  }
  token_table_ = {"token_table", Tensor::zeros({vocab_size, dim}), Tensor(), true};
  position_table_ = {"position_table", Tensor::zeros({max_positions, dim}), Tensor(), true};
  if (token_types > 0) {
    token_type_table_ = {"token_type_table", Tensor::zeros({token_types, dim}), Tensor(), true};
  }
}

std::vector<Parameter*> Embedding::parameters() {
  if (token_types_ > 0) return {&token_table_, &position_table_, &token_type_table_};
  return {&token_table_, &position_table_};
}

void Embedding::init_parameters(Rng& rng) {
  for (Parameter* p : parameters()) {
    fill_normal(p->value, rng, 0.0f, 0.02f);
  }
}

Shape Embedding::infer_output_shape(std::span<const Shape> inputs) const {
  if (inputs.size() > 2) {
    throw_invalid("Embedding takes token ids and optionally token type ids, got " +
                  std::to_string(inputs.size()) + " inputs");
  }
  const Shape& in = inputs[0];
  if (in.size() != 2) {
    throw_invalid("Embedding: input must be token ids [batch, time], got " + to_string(in));
  }
  if (in[1] > max_positions_) {
    throw_invalid("Embedding: sequence length " + std::to_string(in[1]) + " (input " +
                  to_string(in) + ") exceeds max_positions " + std::to_string(max_positions_));
  }
  if (inputs.size() == 2 && inputs[1] != in) {
    throw_invalid("Embedding: token type ids " + to_string(inputs[1]) +
                  " must have the shape of the token ids " + to_string(in));
  }
  return {in[0], in[1], dim_};
}

FlopCount Embedding::count_flops(std::span<const Shape> /*inputs*/, const Shape& output) const {
  const int64_t n = numel(output);
  const int64_t tables = token_types_ > 0 ? 3 : 2;
  return {(tables - 1) * n, tables * n, tables * n};  // token ids have no gradient
}

Tensor Embedding::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) {
  const Tensor& ids = inputs[0];
  Tensor y({ids.dim(0), ids.dim(1), dim_}, ids.device());
  backend.embedding_forward(ids, token_table_.value, position_table_.value, y);
  ctx.saved = {ids};
  if (token_types_ > 0) {
    Tensor type_ids = inputs.size() == 2 ? inputs[1] : Tensor(ids.shape(), ids.device());
    if (inputs.size() == 1) backend.fill(type_ids, 0.0f);
    try {
      backend.gather_rows_add(type_ids, token_type_table_.value, y);
    } catch (const Error& e) {
      throw Error(e.kind(), std::string("Embedding: token type ids: ") + e.what());
    }
    ctx.saved.push_back(type_ids);
  }
  return y;
}

std::vector<Tensor> Embedding::run_backward(Backend& backend, const Tensor& grad_output,
                                            Context& ctx, Gradients which) {
  // Token ids have no gradient: a pass for the inputs alone has nothing to compute.
  if (which == Gradients::inputs_only) return std::vector<Tensor>(ctx.input_shapes.size());
  // The kernels accumulate, so fresh gradients start from zero.
  for (Parameter* p : parameters()) {
    if (!begin_grad(*p)) backend.fill(p->grad, 0.0f);
  }
  backend.embedding_backward(ctx.saved[0], grad_output, token_table_.grad, position_table_.grad);
  if (token_types_ > 0) {
    backend.scatter_rows_add(ctx.saved[1], grad_output, token_type_table_.grad);
  }
  for (Parameter* p : parameters()) p->grad_is_zero = false;
  return std::vector<Tensor>(ctx.input_shapes.size());
}

}  // namespace interplace::kernels
