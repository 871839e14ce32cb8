// Launchers of our own CUDA kernels (the .cu files). They take raw device pointers and
// extents already validated by the backend, queue the kernel on `stream` and return the
// launch status (cudaGetLastError), which the caller checks. Nothing is launched for
// empty extents. Semantics match the CPU backend's functions of the same names.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace interplace::kernels::cuda {

// --- elementwise (cuda_elementwise.cu)
cudaError_t launch_fill(float* x, int64_t n, float value, cudaStream_t stream);
cudaError_t launch_add(const float* a, const float* b, float* y, int64_t n, cudaStream_t stream);
cudaError_t launch_multiply(const float* a, const float* b, float* y, int64_t n,
                            cudaStream_t stream);
cudaError_t launch_axpy(float alpha, const float* x, float* y, int64_t n, cudaStream_t stream);
cudaError_t launch_scale(float alpha, float* x, int64_t n, cudaStream_t stream);

enum class ActivationKind { relu, relu6, gelu, tanh, sigmoid };
cudaError_t launch_activation_forward(ActivationKind kind, const float* x, float* y, int64_t n,
                                      cudaStream_t stream);
cudaError_t launch_activation_backward(ActivationKind kind, const float* x, const float* dy,
                                       float* dx, int64_t n, cudaStream_t stream);

// mask[i] = (uniform(key, i) >= p) ? keep : 0 with the CPU backend's counter-based stream
// (key = mix64(seed), keep = 1 / (1 - p) computed by the caller in float).
cudaError_t launch_dropout_mask(uint64_t key, float p, float keep, float* mask, int64_t n,
                                cudaStream_t stream);

// velocity may be null when momentum is 0.
// One parameter of a fused SGD step (launch_sgd_step_many); velocity null without momentum.
struct SgdPointers {
  float* param;
  const float* grad;
  float* velocity;
  int64_t n;
  float weight_decay;
};
// sgd_step on `count` tensors in ceil(count / 32) launches (a multi-tensor kernel: the
// pointers travel as a kernel parameter, one block row per tensor).
cudaError_t launch_sgd_step_many(const SgdPointers* tensors, int count, float lr, float momentum,
                                 bool nesterov, cudaStream_t stream);
// Batch norm's running statistics, both in one launch (Backend::update_running_statistics).
cudaError_t launch_running_statistics(const float* mean, const float* variance, int64_t n,
                                      float momentum, float unbias, float* running_mean,
                                      float* running_var, cudaStream_t stream);
// inv_std[i] = 1 / sqrt(variance[i] + epsilon): the saved inverse deviation cuDNN's
// batch-norm backward takes.
cudaError_t launch_inverse_std(const float* variance, int64_t n, float epsilon, float* inv_std,
                               cudaStream_t stream);
cudaError_t launch_sgd_step(float* param, const float* grad, float* velocity, int64_t n, float lr,
                            float momentum, float weight_decay, bool nesterov, cudaStream_t stream);
// decay = 1 - lr * wd, step_size = lr / (1 - beta1^t), sqrt_correction2 = sqrt(1 - beta2^t).
cudaError_t launch_adamw_step(float* param, const float* grad, float* m, float* v, int64_t n,
                              float beta1, float beta2, float epsilon, float decay, float step_size,
                              float sqrt_correction2, cudaStream_t stream);

// --- layout (cuda_layout.cu)
// y[a, c, b, d] = x[a, b, c, d].
cudaError_t launch_swap_axes_12(const float* x, float* y, int64_t a, int64_t b, int64_t c,
                                int64_t d, cudaStream_t stream);
// slice [outer, slice_channels, inner] <-> channels [offset, offset + slice_channels) of
// whole [outer, whole_channels, inner].
cudaError_t launch_copy_channels(float* slice, float* whole, int64_t outer, int64_t slice_channels,
                                 int64_t whole_channels, int64_t offset, int64_t inner,
                                 bool slice_to_whole, cudaStream_t stream);
// dst[p, i, j] = src[p, i - shift_h, j - shift_w], or 0 outside src, for every plane p
// (pad2d forward with shift (top, left), backward with (-top, -left)).
cudaError_t launch_shifted_copy(const float* src, int64_t src_h, int64_t src_w, float* dst,
                                int64_t dst_h, int64_t dst_w, int64_t planes, int64_t shift_h,
                                int64_t shift_w, cudaStream_t stream);
// y[r, c] += bias[c].
cudaError_t launch_add_row_bias(const float* bias, float* y, int64_t rows, int64_t cols,
                                cudaStream_t stream);
// y[t, :] = token[ids[b, t]] + position[t] for rows r = b * time + t.
cudaError_t launch_embedding_forward(const float* ids, const float* token, const float* position,
                                     float* y, int64_t rows, int64_t time, int64_t dim,
                                     cudaStream_t stream);
// dtoken[ids[r]] += dy[r] (atomics), dposition[t] += sum over b of dy[b, t].
cudaError_t launch_embedding_backward(const float* ids, const float* dy, float* dtoken,
                                      float* dposition, int64_t batch, int64_t time, int64_t dim,
                                      cudaStream_t stream);
// *first_bad = the smallest i whose value is not an integer in [0, limit); the caller
// initialises it to UINT64_MAX.
cudaError_t launch_find_bad_index(const float* values, int64_t n, int64_t limit,
                                  unsigned long long* first_bad, cudaStream_t stream);

// --- reductions over rows and columns (cuda_rows.cu)
// Scratch sizes, in floats or doubles, the launchers below need from the caller.
int64_t column_sum_scratch_floats(int64_t rows, int64_t cols);
int64_t squared_norm_scratch_doubles(int64_t n);

// y[c] (+)= sum over r of x[r, c], in a fixed order (deterministic).
cudaError_t launch_sum_rows(const float* x, float* y, int64_t rows, int64_t cols, bool accumulate,
                            float* scratch, cudaStream_t stream);
// *result = sum of x[i]^2 in double, deterministic; scratch of squared_norm_scratch_doubles.
cudaError_t launch_squared_norm(const float* x, int64_t n, double* scratch, double* result,
                                cudaStream_t stream);

cudaError_t launch_layer_norm_forward(const float* x, const float* gamma, const float* beta,
                                      float* y, float* mean, float* variance, int64_t rows,
                                      int64_t features, float epsilon, cudaStream_t stream);
// dx only; dgamma/dbeta come from launch_layer_norm_parameter_grads.
cudaError_t launch_layer_norm_backward(const float* x, const float* dy, const float* gamma,
                                       const float* mean, const float* variance, float* dx,
                                       int64_t rows, int64_t features, float epsilon,
                                       cudaStream_t stream);
// dgamma = sum over rows of dy * xhat, dbeta = sum of dy (overwritten); scratch of
// 2 * column_sum_scratch_floats(rows, features).
cudaError_t launch_layer_norm_parameter_grads(const float* x, const float* dy, const float* mean,
                                              const float* variance, float* dgamma, float* dbeta,
                                              int64_t rows, int64_t features, float epsilon,
                                              float* scratch, cudaStream_t stream);

// Causal: row r of every cols x cols block keeps columns 0 .. r % cols.
cudaError_t launch_softmax_forward(const float* x, float* y, int64_t rows, int64_t cols,
                                   bool causal, cudaStream_t stream);
cudaError_t launch_softmax_backward(const float* y, const float* dy, float* dx, int64_t rows,
                                    int64_t cols, cudaStream_t stream);

// Writes the probabilities, and into `result` (device) the summed row losses (double)
// and the count of rows whose first arg-max equals the label. Labels are valid.
struct CrossEntropySums {
  double loss;
  long long correct;
};
cudaError_t launch_cross_entropy_forward(const float* logits, const float* labels, float* probs,
                                         int64_t rows, int64_t classes, double* row_loss,
                                         int* row_correct, CrossEntropySums* result,
                                         cudaStream_t stream);
cudaError_t launch_cross_entropy_backward(const float* probs, const float* labels, float scale,
                                          float* dlogits, int64_t rows, int64_t classes,
                                          cudaStream_t stream);

// --- pooling (cuda_pool.cu)
struct PoolShape {
  int64_t batch, channels, in_height, in_width, out_height, out_width;
  int64_t kernel, stride, padding;
  bool count_include_pad;  // average pooling divides by kernel^2 instead of the in-bounds count
};
// argmax[o] = the winning position h * in_width + w within its input plane.
cudaError_t launch_max_pool_forward(const PoolShape& s, const float* x, float* y, int* argmax,
                                    cudaStream_t stream);
cudaError_t launch_max_pool_backward(const PoolShape& s, const float* dy, const int* argmax,
                                     float* dx, cudaStream_t stream);
// Padding is excluded from the divisor unless s.count_include_pad.
cudaError_t launch_avg_pool_forward(const PoolShape& s, const float* x, float* y,
                                    cudaStream_t stream);
cudaError_t launch_avg_pool_backward(const PoolShape& s, const float* dy, float* dx,
                                     cudaStream_t stream);

}  // namespace interplace::kernels::cuda
