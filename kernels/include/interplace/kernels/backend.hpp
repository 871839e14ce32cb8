// The compute interface every device implements. Layers describe *what* to compute
// (shapes, geometry) and a backend decides *how* (oneDNN on CPU, cuDNN/cuBLAS on CUDA),
// caching its plans per geometry so repeated calls cost only the kernels.
// All tensors passed to one call live on the backend's device; outputs are preallocated
// by the caller with the documented shapes.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "interplace/kernels/tensor.hpp"

namespace interplace::kernels {

// Zero padding is symmetric per axis: padding_h rows above and below, padding_w columns
// left and right.
struct Conv2dGeometry {
  int64_t batch, in_channels, in_height, in_width;
  int64_t out_channels, kernel_h, kernel_w;
  int64_t stride, padding_h, padding_w, groups;
  int64_t out_height() const { return (in_height + 2 * padding_h - kernel_h) / stride + 1; }
  int64_t out_width() const { return (in_width + 2 * padding_w - kernel_w) / stride + 1; }
  std::string key() const;
};

enum class PoolKind { max, average };
struct Pool2dGeometry {
  PoolKind kind;
  int64_t batch, channels, in_height, in_width;
  int64_t kernel, stride, padding;
  // Average pooling divides by the window's in-bounds elements unless this is set, in
  // which case it divides by kernel^2 (PyTorch's count_include_pad=True).
  bool count_include_pad = false;
  int64_t out_height() const { return (in_height + 2 * padding - kernel) / stride + 1; }
  int64_t out_width() const { return (in_width + 2 * padding - kernel) / stride + 1; }
  std::string key() const;
};

// Per-side zero padding of the spatial axes of [N, C, H, W]; a negative amount crops
// that many rows or columns from that side instead.
struct Pad2dGeometry {
  int64_t batch, channels, in_height, in_width;
  int64_t top, bottom, left, right;
  int64_t out_height() const { return in_height + top + bottom; }
  int64_t out_width() const { return in_width + left + right; }
  std::string key() const;
};

enum class Activation { relu, relu6, gelu /* tanh approximation, as GPT-2 */, tanh, sigmoid };

// C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b] for b in [0, batch), row-major,
// op(X) = X or X^T. A is [batch, M, K] (or [batch, K, M] when transposed), etc.
// beta is 0 (overwrite) or 1 (accumulate).
struct MatmulGeometry {
  int64_t batch, m, n, k;
  bool transpose_a = false, transpose_b = false;
  float alpha = 1.0f, beta = 0.0f;
  std::string key() const;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual std::string name() const = 0;

  // --- convolution: x [N,Cin,H,W], w [Cout,Cin/groups,kh,kw], bias [Cout] or undefined.
  virtual void conv2d_forward(const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
                              const Tensor& bias, Tensor& y) = 0;
  virtual void conv2d_backward_data(const Conv2dGeometry& g, const Tensor& dy, const Tensor& w,
                                    Tensor& dx) = 0;
  // Writes dw (and dbias when defined); they are overwritten, not accumulated.
  virtual void conv2d_backward_weights(const Conv2dGeometry& g, const Tensor& x, const Tensor& dy,
                                       Tensor& dw, Tensor& dbias) = 0;

  // --- batch norm over [N,C,H,W] per channel. Training writes the batch mean and the
  // biased batch variance (used for normalising); inference uses the given statistics.
  virtual void batch_norm_forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                           float epsilon, Tensor& y, Tensor& batch_mean,
                                           Tensor& batch_variance) = 0;
  virtual void batch_norm_forward_inference(const Tensor& x, const Tensor& gamma,
                                            const Tensor& beta, const Tensor& mean,
                                            const Tensor& variance, float epsilon, Tensor& y) = 0;
  virtual void batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                   const Tensor& batch_mean, const Tensor& batch_variance,
                                   float epsilon, Tensor& dx, Tensor& dgamma, Tensor& dbeta) = 0;

  // --- layer norm over the last axis of x [rows, features].
  virtual void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                  float epsilon, Tensor& y, Tensor& mean, Tensor& variance) = 0;
  virtual void layer_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                   const Tensor& mean, const Tensor& variance, float epsilon,
                                   Tensor& dx, Tensor& dgamma, Tensor& dbeta) = 0;
  // (dgamma and dbeta are overwritten, not accumulated.)

  // --- pooling. `workspace` is backend-owned state for max-pool backward; the backend
  // (re)allocates it in forward, the caller keeps it until backward.
  virtual void pool2d_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y,
                              Tensor& workspace) = 0;
  virtual void pool2d_backward(const Pool2dGeometry& g, const Tensor& dy, const Tensor& workspace,
                               Tensor& dx) = 0;

  // --- padding / cropping (see Pad2dGeometry): y [N, C, Ho, Wo] is x shifted by (top,
  // left) with zeros where x has no element; backward writes dx [N, C, H, W] as the window
  // of dy that x landed in (cropped elements get zero gradient).
  virtual void pad2d_forward(const Pad2dGeometry& g, const Tensor& x, Tensor& y) = 0;
  virtual void pad2d_backward(const Pad2dGeometry& g, const Tensor& dy, Tensor& dx) = 0;

  // --- activations (elementwise); backward uses the forward input x.
  virtual void activation_forward(Activation a, const Tensor& x, Tensor& y) = 0;
  virtual void activation_backward(Activation a, const Tensor& x, const Tensor& dy, Tensor& dx) = 0;

  // --- matrix products (Linear layers, attention). See MatmulGeometry.
  virtual void matmul(const MatmulGeometry& g, const Tensor& a, const Tensor& b, Tensor& c) = 0;

  // --- softmax over the last axis of x [rows, cols]. With `causal`, x is viewed as
  // [..., T, T] and column j > row i (within each T x T block) is masked to probability 0.
  virtual void softmax_forward(const Tensor& x, bool causal, Tensor& y) = 0;
  virtual void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) = 0;

  // --- softmax cross-entropy over logits [rows, classes] with integer labels stored as
  // floats. Writes per-row probabilities; returns the mean loss and the count of rows
  // whose arg-max equals the label. dlogits = (probs - onehot) * scale.
  struct LossResult {
    double loss;
    int64_t correct;
  };
  virtual LossResult softmax_cross_entropy_forward(const Tensor& logits, const Tensor& labels,
                                                   Tensor& probabilities) = 0;
  virtual void softmax_cross_entropy_backward(const Tensor& probabilities, const Tensor& labels,
                                              float scale, Tensor& dlogits) = 0;

  // --- embedding: y[b,t,:] = token_table[ids[b,t]] + position_table[t]; ids stored as floats.
  virtual void embedding_forward(const Tensor& ids, const Tensor& token_table,
                                 const Tensor& position_table, Tensor& y) = 0;
  // Accumulates into dtoken_table and dposition_table.
  virtual void embedding_backward(const Tensor& ids, const Tensor& dy, Tensor& dtoken_table,
                                  Tensor& dposition_table) = 0;
  // Extra embedding tables (BERT's token types): for ids of any shape, rows = ids.numel(),
  // table [V, D] and y, dy holding rows x D values,
  //   gather_rows_add:  y[r, :] += table[ids[r], :]
  //   scatter_rows_add: dtable[ids[r], :] += dy[r, :]   (accumulates)
  // The defaults are built from embedding_forward/backward (a zero position row, one extra
  // pass), so every backend has them; a backend may override them with direct kernels.
  virtual void gather_rows_add(const Tensor& ids, const Tensor& table, Tensor& y);
  virtual void scatter_rows_add(const Tensor& ids, const Tensor& dy, Tensor& dtable);

  // --- dropout: mask[i] = (uniform(seed, i) >= p) / (1 - p); y = x * mask.
  virtual void dropout_mask(uint64_t seed, float p, Tensor& mask) = 0;

  // --- elementwise helpers.
  virtual void fill(Tensor& x, float value) = 0;
  virtual void copy(const Tensor& src, Tensor& dst) = 0;
  virtual void add(const Tensor& a, const Tensor& b, Tensor& y) = 0;       // y = a + b
  virtual void multiply(const Tensor& a, const Tensor& b, Tensor& y) = 0;  // y = a * b
  virtual void axpy(float alpha, const Tensor& x, Tensor& y) = 0;          // y += alpha * x
  virtual void scale(float alpha, Tensor& x) = 0;                          // x *= alpha
  // y[r, c] (+)= sum over rows of x[rows, c]; `accumulate` adds instead of overwriting.
  virtual void sum_rows(const Tensor& x, Tensor& y, bool accumulate) = 0;
  // Adds bias[c] to every row of y [rows, c].
  virtual void add_row_bias(const Tensor& bias, Tensor& y) = 0;
  // Concat/split along axis 1: `whole` is [outer, C, inner] and `slice` is
  // [outer, c, inner]; channels [offset, offset + c) of whole are copied from the slice
  // (slice_to_whole) or into it.
  virtual void copy_channels(Tensor& slice, Tensor& whole, int64_t offset, bool slice_to_whole) = 0;
  // Swaps the two middle axes: x [A, B, C, D] -> y [A, C, B, D] (splits and merges
  // attention heads: [batch, time, heads, head_dim] <-> [batch, heads, time, head_dim]).
  virtual void swap_axes_12(const Tensor& x, Tensor& y) = 0;
  // Sum of squares of x (for gradient-norm clipping and tests).
  virtual double squared_norm(const Tensor& x) = 0;

  // --- optimiser updates, in place. See optimizer.hpp for the exact formulas.
  virtual void sgd_step(Tensor& param, const Tensor& grad, Tensor& velocity, float lr,
                        float momentum, float weight_decay, bool nesterov) = 0;
  virtual void adamw_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, float lr,
                          float beta1, float beta2, float epsilon, float weight_decay,
                          int64_t step) = 0;
  // One SGD step of a whole parameter group: sgd_step on every tensor, each with its own
  // weight decay (velocity unused, may be undefined, when momentum is 0). The default loops
  // over sgd_step; the CUDA backend fuses the group into one multi-tensor launch per chunk
  // of tensors (a launch per parameter cost more than the arithmetic at resnet20's sizes).
  struct SgdTensor {
    Tensor* param;
    const Tensor* grad;
    Tensor* velocity;
    float weight_decay;
  };
  virtual void sgd_step_group(std::span<const SgdTensor> tensors, float lr, float momentum,
                              bool nesterov);
  // Batch norm's running statistics, in place (as PyTorch):
  //   running_mean = (1 - momentum) * running_mean + momentum * mean
  //   running_var  = (1 - momentum) * running_var  + momentum * unbias * variance
  // The default is scale and axpy on each; the CUDA backend does both in one launch.
  virtual void update_running_statistics(const Tensor& mean, const Tensor& variance, float momentum,
                                         float unbias, Tensor& running_mean, Tensor& running_var);

  // Blocks until queued work is done (a no-op on CPU).
  virtual void synchronize() {}
};

// The backend for a device. Throws (with the reason) when the device is not available.
Backend& backend_for(Device device);
// Installs the backend for a device (used by the CUDA backend at start-up).
void register_backend(Device device, Backend* backend);

// Threads used by CPU kernels (oneDNN and our own loops); default: all cores.
void set_cpu_threads(int threads);
int cpu_threads();

}  // namespace interplace::kernels
