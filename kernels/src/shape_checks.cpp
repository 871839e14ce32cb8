#include "shape_checks.hpp"

#include <string>

#include "interplace/kernels/error.hpp"

namespace interplace::kernels::detail {

RowsOf check_layer_norm(const char* op, const Tensor& x, const Tensor& gamma, const Tensor& y,
                        const Tensor& mean, const Tensor& variance) {
  if (x.rank() < 1 || x.numel() == 0) {
    throw_invalid(std::string(op) + ": input " + to_string(x.shape()) + " is empty");
  }
  const int64_t features = x.dim(-1);
  const int64_t rows = x.numel() / features;
  if (gamma.numel() != features) {
    throw_invalid(std::string(op) + ": gamma has " + std::to_string(gamma.numel()) +
                  " elements for " + std::to_string(features) + " features (input " +
                  to_string(x.shape()) + ")");
  }
  if (y.numel() != x.numel() || mean.numel() != rows || variance.numel() != rows) {
    throw_invalid(std::string(op) + ": outputs " + to_string(y.shape()) + ", mean " +
                  to_string(mean.shape()) + ", variance " + to_string(variance.shape()) +
                  " do not match input " + to_string(x.shape()) + " (" + std::to_string(rows) +
                  " rows)");
  }
  return {rows, features};
}

LossDims check_loss(const char* op, const Tensor& logits, const Tensor& labels,
                    const Tensor& other) {
  if (logits.rank() < 1 || logits.numel() == 0 || other.numel() != logits.numel()) {
    throw_invalid(std::string(op) + ": logits " + to_string(logits.shape()) + " and " +
                  to_string(other.shape()) + " must be non-empty and of equal size");
  }
  const int64_t classes = logits.dim(-1);
  const int64_t rows = logits.numel() / classes;
  if (labels.numel() != rows) {
    throw_invalid(std::string(op) + ": " + std::to_string(labels.numel()) + " labels " +
                  to_string(labels.shape()) + " for " + std::to_string(rows) + " rows of logits " +
                  to_string(logits.shape()));
  }
  return {rows, classes};
}

EmbeddingDims check_embedding(const char* op, const Tensor& ids, const Tensor& token_table,
                              const Tensor& position_table, const Tensor& y) {
  if (ids.rank() != 2 || token_table.rank() != 2 || position_table.rank() != 2 ||
      token_table.dim(1) != position_table.dim(1)) {
    throw_invalid(std::string(op) + ": expected ids [B, T], token table [V, D] and position " +
                  "table [P, D], got " + to_string(ids.shape()) + ", " +
                  to_string(token_table.shape()) + ", " + to_string(position_table.shape()));
  }
  const EmbeddingDims d{ids.dim(0), ids.dim(1), token_table.dim(0), position_table.dim(0),
                        token_table.dim(1)};
  if (d.time > d.positions) {
    throw_invalid(std::string(op) + ": sequence length " + std::to_string(d.time) +
                  " exceeds the " + std::to_string(d.positions) + " rows of the position table");
  }
  if (y.numel() != d.batch * d.time * d.dim) {
    throw_invalid(std::string(op) + ": output/gradient " + to_string(y.shape()) + " is not [" +
                  std::to_string(d.batch) + ", " + std::to_string(d.time) + ", " +
                  std::to_string(d.dim) + "]");
  }
  return d;
}

}  // namespace interplace::kernels::detail
