// Batched matrix products through cublasSgemmStridedBatched. cuBLAS is column-major; a
// row-major [r, c] matrix is the column-major [c, r] matrix of its transpose, so
// C = op(A) op(B) in row-major is C^T = op(B)^T op(A)^T in column-major: the call swaps
// the operands and passes m and n exchanged, and no operand is ever copied.
#include <climits>

#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels::cuda {

namespace {

int as_int(int64_t value, const MatmulGeometry& g) {
  if (value > INT_MAX) {
    throw_invalid("matmul " + g.key() + ": extent " + std::to_string(value) +
                  " exceeds cuBLAS's 32-bit limit");
  }
  return static_cast<int>(value);
}

}  // namespace

void CudaBackend::matmul(const MatmulGeometry& g, const Tensor& a, const Tensor& b, Tensor& c) {
  if (g.batch < 1 || g.m < 1 || g.n < 1 || g.k < 1) {
    throw_invalid("matmul: extents must be positive, got " + g.key());
  }
  if (a.numel() != g.batch * g.m * g.k || b.numel() != g.batch * g.k * g.n ||
      c.numel() != g.batch * g.m * g.n) {
    throw_invalid("matmul " + g.key() + ": operand sizes " + to_string(a.shape()) + ", " +
                  to_string(b.shape()) + ", " + to_string(c.shape()) + " do not match");
  }
  if (g.beta != 0.0f && g.beta != 1.0f) throw_invalid("matmul: beta must be 0 or 1");
  const int m = as_int(g.m, g), n = as_int(g.n, g), k = as_int(g.k, g);
  const int batch = as_int(g.batch, g);
  // Stored row-major, A is [m, k] ([k, m] when transposed) and B is [k, n] ([n, k]); the
  // leading dimension of each is its stored row length.
  const int lda = g.transpose_a ? m : k;
  const int ldb = g.transpose_b ? k : n;
  const cublasOperation_t op_a = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const float alpha = g.alpha, beta = g.beta;  // with beta 0, C is not read
  INTERPLACE_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas_, op_b, op_a, n, m, k, &alpha, b.data(),
                                                    ldb, g.k * g.n, a.data(), lda, g.m * g.k, &beta,
                                                    c.data(), n, g.m * g.n, batch));
}

}  // namespace interplace::kernels::cuda
