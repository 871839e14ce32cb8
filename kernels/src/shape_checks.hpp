// Shape checks shared by every backend for the row-wise ops (layer norm, softmax
// cross-entropy, embedding): the same errors whichever device runs them. Index range
// checks and device limits stay with each backend.
#pragma once

#include <cstdint>

#include "interplace/kernels/tensor.hpp"

namespace interplace::kernels::detail {

struct RowsOf {
  int64_t rows, features;
};
// x [..., features] with gamma [features], y like x, mean and variance [rows].
RowsOf check_layer_norm(const char* op, const Tensor& x, const Tensor& gamma, const Tensor& y,
                        const Tensor& mean, const Tensor& variance);

struct LossDims {
  int64_t rows, classes;
};
// logits [..., classes], labels [rows], `other` (probabilities or gradient) like logits.
LossDims check_loss(const char* op, const Tensor& logits, const Tensor& labels,
                    const Tensor& other);

struct EmbeddingDims {
  int64_t batch, time, vocab, positions, dim;
};
// ids [B, T], token table [V, D], position table [P, D] with T <= P, y [B, T, D].
EmbeddingDims check_embedding(const char* op, const Tensor& ids, const Tensor& token_table,
                              const Tensor& position_table, const Tensor& y);

}  // namespace interplace::kernels::detail
