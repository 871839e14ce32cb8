// Token plus position embedding lookup and its scatter-add gradient; the row gather and
// scatter of extra tables (token types).
#include <algorithm>

#include "cpu_backend.hpp"
#include "cpu_indices.hpp"
#include "interplace/kernels/error.hpp"
#include "shape_checks.hpp"

namespace interplace::kernels::cpu {

namespace {

constexpr int64_t kParallelElements = 32768;
constexpr int64_t kColumnBlock = 64;  // columns per task of the gradient scatter

detail::EmbeddingDims check_embedding(const char* op, const Tensor& ids, const Tensor& token_table,
                                      const Tensor& position_table, const Tensor& y) {
  const detail::EmbeddingDims d = detail::check_embedding(op, ids, token_table, position_table, y);
  check_indices(ids, d.vocab, std::string(op) + ": token id", "the vocabulary size");
  return d;
}

// Returns the table width after checking shapes and ids.
int64_t check_rows(const char* op, const Tensor& ids, const Tensor& table, const Tensor& rows) {
  if (table.rank() != 2 || rows.numel() != ids.numel() * table.dim(1)) {
    throw_invalid(std::string(op) + ": expected a table [V, D] and " + std::to_string(ids.numel()) +
                  " rows of D values (one per id), got table " + to_string(table.shape()) +
                  " and rows " + to_string(rows.shape()));
  }
  check_indices(ids, table.dim(0), std::string(op) + ": id", "the table's rows");
  return table.dim(1);
}

}  // namespace

void CpuBackend::embedding_forward(const Tensor& ids, const Tensor& token_table,
                                   const Tensor& position_table, Tensor& y) {
  const detail::EmbeddingDims d =
      check_embedding("embedding_forward", ids, token_table, position_table, y);
  const float* pid = ids.data();
  const float* tok = token_table.data();
  const float* pos = position_table.data();
  float* py = y.data();
  const int64_t rows = d.batch * d.time;
#pragma omp parallel for if (y.numel() > kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const float* tr = tok + static_cast<int64_t>(pid[r]) * d.dim;
    const float* pr = pos + (r % d.time) * d.dim;
    float* yr = py + r * d.dim;
#pragma omp simd
    for (int64_t c = 0; c < d.dim; ++c) yr[c] = tr[c] + pr[c];
  }
}

void CpuBackend::embedding_backward(const Tensor& ids, const Tensor& dy, Tensor& dtoken_table,
                                    Tensor& dposition_table) {
  const detail::EmbeddingDims d =
      check_embedding("embedding_backward", ids, dtoken_table, dposition_table, dy);
  const float* pid = ids.data();
  const float* pdy = dy.data();
  float* dtok = dtoken_table.data();
  float* dpos = dposition_table.data();
  const int64_t rows = d.batch * d.time;
  // Repeated ids make row-parallel scatter racy; instead each task owns a block of
  // columns of both tables and walks the rows in order (deterministic, no atomics).
  const int64_t blocks = (d.dim + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for if (dy.numel() > kParallelElements)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c0 = b * kColumnBlock;
    const int64_t width = std::min(kColumnBlock, d.dim - c0);
    for (int64_t r = 0; r < rows; ++r) {
      const float* g = pdy + r * d.dim + c0;
      float* tr = dtok + static_cast<int64_t>(pid[r]) * d.dim + c0;
      float* pr = dpos + (r % d.time) * d.dim + c0;
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) {
        tr[c] += g[c];
        pr[c] += g[c];
      }
    }
  }
}

void CpuBackend::gather_rows_add(const Tensor& ids, const Tensor& table, Tensor& y) {
  const int64_t width = check_rows("gather_rows_add", ids, table, y);
  const float* pid = ids.data();
  const float* pt = table.data();
  float* py = y.data();
  const int64_t rows = ids.numel();
#pragma omp parallel for if (y.numel() > kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const float* tr = pt + static_cast<int64_t>(pid[r]) * width;
    float* yr = py + r * width;
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) yr[c] += tr[c];
  }
}

void CpuBackend::scatter_rows_add(const Tensor& ids, const Tensor& dy, Tensor& dtable) {
  const int64_t width = check_rows("scatter_rows_add", ids, dtable, dy);
  const float* pid = ids.data();
  const float* pdy = dy.data();
  float* pt = dtable.data();
  const int64_t rows = ids.numel();
  // As in embedding_backward: tasks own column blocks, so repeated ids never race.
  const int64_t blocks = (width + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for if (dy.numel() > kParallelElements)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c0 = b * kColumnBlock;
    const int64_t block_width = std::min(kColumnBlock, width - c0);
    for (int64_t r = 0; r < rows; ++r) {
      const float* g = pdy + r * width + c0;
      float* tr = pt + static_cast<int64_t>(pid[r]) * width + c0;
#pragma omp simd
      for (int64_t c = 0; c < block_width; ++c) tr[c] += g[c];
    }
  }
}

}  // namespace interplace::kernels::cpu
