#include "interplace/kernels/optimizer.hpp"

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

namespace {

Tensor zeros_like(const Tensor& t) {
  Tensor z(t.shape(), t.device());
  backend_for(t.device()).fill(z, 0.0f);
  return z;
}

}  // namespace

Optimizer::Optimizer(std::vector<Parameter*> parameters) : parameters_(std::move(parameters)) {
  for (const Parameter* p : parameters_) {
    if (p == nullptr || !p->value.defined()) throw_invalid("optimizer: undefined parameter");
  }
}

void Optimizer::zero_grad() {
  for (Parameter* p : parameters_) p->grad_is_zero = true;
}

void Optimizer::set_learning_rate(float lr) {
  if (!(lr >= 0.0f)) throw_invalid("learning rate must be >= 0, got " + std::to_string(lr));
  learning_rate_ = lr;
}

Sgd::Sgd(std::vector<Parameter*> parameters, const SgdOptions& options)
    : Optimizer(std::move(parameters)), options_(options) {
  set_learning_rate(options.learning_rate);
  if (options.momentum < 0.0f || options.weight_decay < 0.0f) {
    throw_invalid("SGD: momentum and weight decay must be >= 0");
  }
  if (options.nesterov && options.momentum == 0.0f) {
    throw_invalid("SGD: Nesterov momentum needs momentum > 0");
  }
  for (const Parameter* p : parameters_) {
    velocity_.push_back(options.momentum != 0.0f ? zeros_like(p->value) : Tensor());
  }
}

void Sgd::step() {
  // One group per device (a model split over devices has parameters on each), so that a
  // backend can update the group in few launches.
  std::vector<Backend::SgdTensor> group;
  group.reserve(parameters_.size());
  for (const Device device : {Device::cpu, Device::cuda}) {
    group.clear();
    for (size_t i = 0; i < parameters_.size(); ++i) {
      Parameter& p = *parameters_[i];
      if (p.grad_is_zero || p.value.device() != device) continue;
      group.push_back({&p.value, &p.grad, velocity_[i].defined() ? &velocity_[i] : nullptr,
                       p.weight_decay ? options_.weight_decay : 0.0f});
    }
    if (!group.empty()) {
      backend_for(device).sgd_step_group(group, learning_rate_, options_.momentum,
                                         options_.nesterov);
    }
  }
}

AdamW::AdamW(std::vector<Parameter*> parameters, const AdamWOptions& options)
    : Optimizer(std::move(parameters)), options_(options) {
  set_learning_rate(options.learning_rate);
  if (options.beta1 < 0.0f || options.beta1 >= 1.0f || options.beta2 < 0.0f ||
      options.beta2 >= 1.0f || options.epsilon <= 0.0f || options.weight_decay < 0.0f) {
    throw_invalid("AdamW: need 0 <= beta1, beta2 < 1, epsilon > 0 and weight decay >= 0");
  }
  for (const Parameter* p : parameters_) {
    first_moment_.push_back(zeros_like(p->value));
    second_moment_.push_back(zeros_like(p->value));
    steps_.push_back(0);
  }
}

void AdamW::step() {
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Parameter& p = *parameters_[i];
    if (p.grad_is_zero) continue;
    backend_for(p.value.device())
        .adamw_step(p.value, p.grad, first_moment_[i], second_moment_[i], learning_rate_,
                    options_.beta1, options_.beta2, options_.epsilon,
                    p.weight_decay ? options_.weight_decay : 0.0f, ++steps_[i]);
  }
}

}  // namespace interplace::kernels
