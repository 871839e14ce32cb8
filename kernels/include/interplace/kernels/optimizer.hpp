// Optimisers over a fixed list of parameters. Updates match PyTorch's:
//   SGD:   d = g + wd*p; v = mu*v + d; p -= lr * (nesterov ? d + mu*v : v)   (v starts at 0)
//   AdamW: p *= 1 - lr*wd; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2;
//          p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
// Weight decay applies only to parameters with Parameter::weight_decay set; parameters
// that received no gradient since zero_grad() are left untouched.
#pragma once

#include <cstdint>
#include <vector>

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Parameter*> parameters);
  virtual ~Optimizer() = default;
  virtual void step() = 0;
  void zero_grad();
  float learning_rate() const { return learning_rate_; }
  void set_learning_rate(float lr);

 protected:
  std::vector<Parameter*> parameters_;
  float learning_rate_ = 0.0f;
};

struct SgdOptions {
  float learning_rate = 0.1f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

class Sgd final : public Optimizer {
 public:
  Sgd(std::vector<Parameter*> parameters, const SgdOptions& options);
  void step() override;

 private:
  SgdOptions options_;
  std::vector<Tensor> velocity_;
};

struct AdamWOptions {
  float learning_rate = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  float weight_decay = 0.01f;
};

class AdamW final : public Optimizer {
 public:
  AdamW(std::vector<Parameter*> parameters, const AdamWOptions& options);
  void step() override;

 private:
  AdamWOptions options_;
  std::vector<Tensor> first_moment_, second_moment_;
  std::vector<int64_t> steps_;
};

}  // namespace interplace::kernels
