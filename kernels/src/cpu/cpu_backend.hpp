// The CPU backend: oneDNN primitives for convolution, normalisation, pooling, activations,
// matrix products and softmax; OpenMP loops for the rest. Primitives are created once per
// geometry and cached (creating one costs far more than running it on small shapes).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "interplace/kernels/backend.hpp"

namespace interplace::kernels::cpu {

// Type-erased cache of plans (primitives, descriptors, scratch buffers) keyed by geometry
// and by the thread count they were made for: oneDNN fixes a primitive's work split (and
// the OpenMP team it asks for) when it is created, so a plan made at 2 threads and run
// after set_cpu_threads(1) still runs 2 threads, in 2-thread summation order. In a sweep
// a K = 1 configuration (all the node's cores) followed by a K = 4 one (1 thread per rank)
// thus oversubscribed the node and computed other losses than a fresh process.
class PlanCache {
 public:
  template <class Plan, class Make>
  Plan& get(const std::string& key, Make&& make) {
    std::pair<int, std::string> threads_and_key{cpu_threads(), key};
    auto it = plans_.find(threads_and_key);
    if (it == plans_.end()) {
      it = plans_
               .emplace(std::move(threads_and_key),
                        std::shared_ptr<void>(std::make_shared<Plan>(make())))
               .first;
    }
    return *static_cast<Plan*>(it->second.get());
  }

 private:
  std::map<std::pair<int, std::string>, std::shared_ptr<void>> plans_;
};

class CpuBackend final : public Backend {
 public:
  CpuBackend();
  Device device() const override { return Device::cpu; }
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
  void gather_rows_add(const Tensor& ids, const Tensor& table, Tensor& y) override;
  void scatter_rows_add(const Tensor& ids, const Tensor& dy, Tensor& dtable) override;

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

  void sgd_step(Tensor& param, const Tensor& grad, Tensor& velocity, float lr, float momentum,
                float weight_decay, bool nesterov) override;
  void adamw_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, float lr, float beta1,
                  float beta2, float epsilon, float weight_decay, int64_t step) override;

  // oneDNN plumbing shared by the cpu_*.cpp files.
  dnnl::engine& engine() { return engine_; }
  dnnl::stream& stream() { return stream_; }
  PlanCache& plans() { return plans_; }
  dnnl::memory wrap(const dnnl::memory::desc& desc, const Tensor& t) const;
  dnnl::memory wrap(const dnnl::memory::desc& desc, void* ptr) const;

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  PlanCache plans_;
};

// Plain row-major memory descriptor for an fp32 tensor of these dims.
dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims);

}  // namespace interplace::kernels::cpu
