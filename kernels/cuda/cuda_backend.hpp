// The CUDA backend: cuDNN for convolution and batch norm, cuBLAS for matrix products, our
// own kernels (cuda_kernels.hpp) for everything else. All work is queued in order on one
// stream; convolution plans (descriptors and the algorithm found for them) are made once
// per geometry and direction and cached.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <memory>
#include <string>
#include <unordered_map>

#include "interplace/kernels/backend.hpp"

namespace interplace::kernels::cuda {

struct ConvPlan;  // cuda_conv.cpp
struct ConvPlanDeleter {
  void operator()(ConvPlan* plan) const;
};
enum class ConvDirection { forward, backward_data, backward_weights };

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  Device device() const override { return Device::cuda; }
  std::string name() const override;

  void conv2d_forward(const Conv2dGeometry& g, const Tensor& x, const Tensor& w, const Tensor& bias,
                      Tensor& y) override;
  void conv2d_backward_data(const Conv2dGeometry& g, const Tensor& dy, const Tensor& w,
                            Tensor& dx) override;
  void conv2d_backward_weights(const Conv2dGeometry& g, const Tensor& x, const Tensor& dy,
                               Tensor& dw, Tensor& dbias) override;

  void batch_norm_forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                   float epsilon, Tensor& y, Tensor& batch_mean,
                                   Tensor& batch_variance) override;
  void batch_norm_forward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                    const Tensor& mean, const Tensor& variance, float epsilon,
                                    Tensor& y) override;
  void batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                           const Tensor& batch_mean, const Tensor& batch_variance, float epsilon,
                           Tensor& dx, Tensor& dgamma, Tensor& dbeta) override;

  void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, float epsilon,
                          Tensor& y, Tensor& mean, Tensor& variance) override;
  void layer_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                           const Tensor& mean, const Tensor& variance, float epsilon, Tensor& dx,
                           Tensor& dgamma, Tensor& dbeta) override;

  void pool2d_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y,
                      Tensor& workspace) override;
  void pool2d_backward(const Pool2dGeometry& g, const Tensor& dy, const Tensor& workspace,
                       Tensor& dx) override;

  void pad2d_forward(const Pad2dGeometry& g, const Tensor& x, Tensor& y) override;
  void pad2d_backward(const Pad2dGeometry& g, const Tensor& dy, Tensor& dx) override;

  void activation_forward(Activation a, const Tensor& x, Tensor& y) override;
  void activation_backward(Activation a, const Tensor& x, const Tensor& dy, Tensor& dx) override;

  void matmul(const MatmulGeometry& g, const Tensor& a, const Tensor& b, Tensor& c) override;

  void softmax_forward(const Tensor& x, bool causal, Tensor& y) override;
  void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) override;

  LossResult softmax_cross_entropy_forward(const Tensor& logits, const Tensor& labels,
                                           Tensor& probabilities) override;
  void softmax_cross_entropy_backward(const Tensor& probabilities, const Tensor& labels,
                                      float scale, Tensor& dlogits) override;

  void embedding_forward(const Tensor& ids, const Tensor& token_table, const Tensor& position_table,
                         Tensor& y) override;
  void embedding_backward(const Tensor& ids, const Tensor& dy, Tensor& dtoken_table,
                          Tensor& dposition_table) override;

  void dropout_mask(uint64_t seed, float p, Tensor& mask) override;

  void fill(Tensor& x, float value) override;
  void copy(const Tensor& src, Tensor& dst) override;
  void add(const Tensor& a, const Tensor& b, Tensor& y) override;
  void multiply(const Tensor& a, const Tensor& b, Tensor& y) override;
  void axpy(float alpha, const Tensor& x, Tensor& y) override;
  void scale(float alpha, Tensor& x) override;
  void sum_rows(const Tensor& x, Tensor& y, bool accumulate) override;
  void add_row_bias(const Tensor& bias, Tensor& y) override;
  void copy_channels(Tensor& slice, Tensor& whole, int64_t offset, bool slice_to_whole) override;
  void swap_axes_12(const Tensor& x, Tensor& y) override;
  double squared_norm(const Tensor& x) override;

  void sgd_step_group(std::span<const SgdTensor> tensors, float lr, float momentum,
                      bool nesterov) override;
  void update_running_statistics(const Tensor& mean, const Tensor& variance, float momentum,
                                 float unbias, Tensor& running_mean, Tensor& running_var) override;
  void sgd_step(Tensor& param, const Tensor& grad, Tensor& velocity, float lr, float momentum,
                float weight_decay, bool nesterov) override;
  void adamw_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, float lr, float beta1,
                  float beta2, float epsilon, float weight_decay, int64_t step) override;

  void synchronize() override;

  // Plumbing shared by the cuda_*.cpp files.
  int device_index() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  void set_tf32(bool enabled);
  bool tf32() const { return tf32_; }
  // Scratch device memory of at least `bytes`, valid until the next call that asks for
  // scratch (work on the one stream is ordered, so reuse is safe).
  void* workspace(size_t bytes);
  // Copies `bytes` from device memory to the host once queued work is done.
  void read_back(void* host, const void* device_ptr, size_t bytes);
  // Throws invalid_input naming the first value of `indices` that is not an integer in
  // [0, limit), as the CPU backend does (one small read-back).
  void check_indices(const Tensor& indices, int64_t limit, const std::string& what,
                     const std::string& limit_name);

 private:
  // The plan for a geometry and direction, made on first use: cudnnFind times the
  // algorithms on these operands (x, w, y in forward terms; the output is overwritten).
  ConvPlan& conv_plan(ConvDirection direction, const Conv2dGeometry& g, const Tensor& x,
                      const Tensor& w, const Tensor& y);

  int device_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  bool tf32_ = false;
  Tensor workspace_;
  std::unordered_map<std::string, std::unique_ptr<ConvPlan, ConvPlanDeleter>> conv_plans_;
};

// The registered backend; throws a runtime error when init_cuda_backend has not succeeded.
CudaBackend& cuda_backend();

}  // namespace interplace::kernels::cuda
