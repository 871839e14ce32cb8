// Row-wise operations of the CUDA backend (layer norm, softmax, cross-entropy, column
// sums, norms) and the embedding: the CPU backend's argument checks, scratch buffers from
// the caching allocator, then the kernels of cuda_rows.cu and cuda_layout.cu.
#include <climits>

#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "cuda_kernels.hpp"
#include "cuda_validate.hpp"
#include "shape_checks.hpp"

namespace interplace::kernels::cuda {

namespace {

// Row kernels run one block per row; the grid's x extent bounds the row count.
void require_row_count(int64_t rows, const char* op) {
  if (rows > INT_MAX) {
    throw_invalid(std::string(op) + ": " + std::to_string(rows) + " rows exceed the " +
                  std::to_string(INT_MAX) + " a launch allows");
  }
}

// Scratch of `count` elements of T from the caching allocator (as floats).
template <class T>
Tensor scratch_of(int64_t count) {
  const auto floats = static_cast<int64_t>((count * sizeof(T) + sizeof(float) - 1) / sizeof(float));
  return Tensor({floats > 0 ? floats : 1}, Device::cuda);
}

detail::RowsOf check_layer_norm(const char* op, const Tensor& x, const Tensor& gamma,
                                const Tensor& y, const Tensor& mean, const Tensor& variance) {
  const detail::RowsOf dims = detail::check_layer_norm(op, x, gamma, y, mean, variance);
  require_row_count(dims.rows, op);
  return dims;
}

detail::LossDims check_loss(const char* op, const Tensor& logits, const Tensor& labels,
                            const Tensor& other) {
  const detail::LossDims dims = detail::check_loss(op, logits, labels, other);
  require_row_count(dims.rows, op);
  return dims;
}

using detail::check_embedding;

}  // namespace

void CudaBackend::sum_rows(const Tensor& x, Tensor& y, bool accumulate) {
  require_cuda({&x, &y}, "sum_rows");
  const int64_t cols = y.numel();
  if (cols == 0 || x.numel() % cols != 0) {
    throw_invalid("sum_rows: " + to_string(x.shape()) + " is not rows of " + std::to_string(cols) +
                  " columns");
  }
  const int64_t rows = x.numel() / cols;
  Tensor scratch = scratch_of<float>(column_sum_scratch_floats(rows, cols));
  check_cuda(launch_sum_rows(x.data(), y.data(), rows, cols, accumulate, scratch.data(), stream_),
             "sum_rows kernels");
}

double CudaBackend::squared_norm(const Tensor& x) {
  require_cuda({&x}, "squared_norm");
  Tensor scratch = scratch_of<double>(squared_norm_scratch_doubles(x.numel()) + 1);
  auto* partial = reinterpret_cast<double*>(scratch.data());
  double* result = partial + squared_norm_scratch_doubles(x.numel());
  check_cuda(launch_squared_norm(x.data(), x.numel(), partial, result, stream_),
             "squared_norm kernels");
  double value = 0.0;
  read_back(&value, result, sizeof value);
  return value;
}

void CudaBackend::layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                     float epsilon, Tensor& y, Tensor& mean, Tensor& variance) {
  require_cuda({&x, &gamma, &beta, &y, &mean, &variance}, "layer_norm_forward");
  const detail::RowsOf dims = check_layer_norm("layer_norm_forward", x, gamma, y, mean, variance);
  if (beta.numel() != dims.features) {
    throw_invalid("layer_norm_forward: beta has " + std::to_string(beta.numel()) +
                  " elements for " + std::to_string(dims.features) + " features");
  }
  check_cuda(launch_layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                                       variance.data(), dims.rows, dims.features, epsilon, stream_),
             "layer_norm forward kernel");
}

void CudaBackend::layer_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                      const Tensor& mean, const Tensor& variance, float epsilon,
                                      Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  require_cuda({&x, &dy, &gamma, &mean, &variance, &dx, &dgamma, &dbeta}, "layer_norm_backward");
  const detail::RowsOf dims = check_layer_norm("layer_norm_backward", x, gamma, dx, mean, variance);
  if (dy.numel() != x.numel() || dgamma.numel() != dims.features ||
      dbeta.numel() != dims.features) {
    throw_invalid("layer_norm_backward: dy " + to_string(dy.shape()) + ", dgamma " +
                  to_string(dgamma.shape()) + ", dbeta " + to_string(dbeta.shape()) +
                  " do not match input " + to_string(x.shape()));
  }
  check_cuda(
      launch_layer_norm_backward(x.data(), dy.data(), gamma.data(), mean.data(), variance.data(),
                                 dx.data(), dims.rows, dims.features, epsilon, stream_),
      "layer_norm backward kernel");
  Tensor scratch = scratch_of<float>(2 * column_sum_scratch_floats(dims.rows, dims.features));
  check_cuda(launch_layer_norm_parameter_grads(x.data(), dy.data(), mean.data(), variance.data(),
                                               dgamma.data(), dbeta.data(), dims.rows,
                                               dims.features, epsilon, scratch.data(), stream_),
             "layer_norm parameter-gradient kernels");
}

void CudaBackend::softmax_forward(const Tensor& x, bool causal, Tensor& y) {
  require_cuda({&x, &y}, "softmax_forward");
  if (x.rank() < 1 || x.numel() == 0 || y.numel() != x.numel()) {
    throw_invalid("softmax_forward: input " + to_string(x.shape()) + " and output " +
                  to_string(y.shape()) + " must be non-empty and of equal size");
  }
  const int64_t cols = x.dim(-1);
  const int64_t rows = x.numel() / cols;
  if (causal && rows % cols != 0) {
    throw_invalid("softmax_forward: the causal mask needs [..., T, T] blocks, got " +
                  to_string(x.shape()));
  }
  require_row_count(rows, "softmax_forward");
  check_cuda(launch_softmax_forward(x.data(), y.data(), rows, cols, causal, stream_),
             "softmax forward kernel");
}

void CudaBackend::softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  require_cuda({&y, &dy, &dx}, "softmax_backward");
  if (y.rank() < 1 || y.numel() == 0 || dy.numel() != y.numel() || dx.numel() != y.numel()) {
    throw_invalid("softmax_backward: y " + to_string(y.shape()) + ", dy " + to_string(dy.shape()) +
                  " and dx " + to_string(dx.shape()) + " must be non-empty and of equal size");
  }
  const int64_t cols = y.dim(-1);
  const int64_t rows = y.numel() / cols;
  require_row_count(rows, "softmax_backward");
  check_cuda(launch_softmax_backward(y.data(), dy.data(), dx.data(), rows, cols, stream_),
             "softmax backward kernel");
}

Backend::LossResult CudaBackend::softmax_cross_entropy_forward(const Tensor& logits,
                                                               const Tensor& labels,
                                                               Tensor& probabilities) {
  const char* op = "softmax_cross_entropy_forward";
  require_cuda({&logits, &labels, &probabilities}, op);
  const detail::LossDims dims = check_loss(op, logits, labels, probabilities);
  check_indices(labels, dims.classes, std::string(op) + ": label", "the number of classes");
  // Per-row losses (double) and hits (int), then the sums, all in one scratch tensor.
  const int64_t rows = dims.rows;
  Tensor scratch = scratch_of<double>(rows + 1 + (rows + 1) / 2 + 1);
  auto* row_loss = reinterpret_cast<double*>(scratch.data());
  auto* sums = reinterpret_cast<CrossEntropySums*>(row_loss + rows);
  auto* row_correct = reinterpret_cast<int*>(sums + 1);
  check_cuda(launch_cross_entropy_forward(logits.data(), labels.data(), probabilities.data(), rows,
                                          dims.classes, row_loss, row_correct, sums, stream_),
             "cross-entropy forward kernels");
  CrossEntropySums result{};
  read_back(&result, sums, sizeof result);
  return {result.loss / static_cast<double>(rows), static_cast<int64_t>(result.correct)};
}

void CudaBackend::softmax_cross_entropy_backward(const Tensor& probabilities, const Tensor& labels,
                                                 float scale, Tensor& dlogits) {
  const char* op = "softmax_cross_entropy_backward";
  require_cuda({&probabilities, &labels, &dlogits}, op);
  const detail::LossDims dims = check_loss(op, probabilities, labels, dlogits);
  check_indices(labels, dims.classes, std::string(op) + ": label", "the number of classes");
  check_cuda(launch_cross_entropy_backward(probabilities.data(), labels.data(), scale,
                                           dlogits.data(), dims.rows, dims.classes, stream_),
             "cross-entropy backward kernel");
}

void CudaBackend::embedding_forward(const Tensor& ids, const Tensor& token_table,
                                    const Tensor& position_table, Tensor& y) {
  const char* op = "embedding_forward";
  require_cuda({&ids, &token_table, &position_table, &y}, op);
  const detail::EmbeddingDims d = check_embedding(op, ids, token_table, position_table, y);
  check_indices(ids, d.vocab, std::string(op) + ": token id", "the vocabulary size");
  check_cuda(launch_embedding_forward(ids.data(), token_table.data(), position_table.data(),
                                      y.data(), d.batch * d.time, d.time, d.dim, stream_),
             "embedding forward kernel");
}

void CudaBackend::embedding_backward(const Tensor& ids, const Tensor& dy, Tensor& dtoken_table,
                                     Tensor& dposition_table) {
  const char* op = "embedding_backward";
  require_cuda({&ids, &dy, &dtoken_table, &dposition_table}, op);
  const detail::EmbeddingDims d = check_embedding(op, ids, dtoken_table, dposition_table, dy);
  check_indices(ids, d.vocab, std::string(op) + ": token id", "the vocabulary size");
  check_cuda(launch_embedding_backward(ids.data(), dy.data(), dtoken_table.data(),
                                       dposition_table.data(), d.batch, d.time, d.dim, stream_),
             "embedding backward kernels");
}

}  // namespace interplace::kernels::cuda
