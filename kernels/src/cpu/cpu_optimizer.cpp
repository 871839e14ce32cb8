// Optimiser updates of the CPU backend. Formulas match PyTorch's SGD and AdamW exactly
// (see interplace/kernels/optimizer.hpp).
#include <cmath>

#include "cpu_backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels::cpu {

void CpuBackend::sgd_step(Tensor& param, const Tensor& grad, Tensor& velocity, float lr,
                          float momentum, float weight_decay, bool nesterov) {
  const int64_t n = param.numel();
  if (grad.numel() != n || (momentum != 0.0f && velocity.numel() != n)) {
    throw_invalid("sgd_step: parameter, gradient and velocity sizes differ");
  }
  float* p = param.data();
  const float* g = grad.data();
  float* v = momentum != 0.0f ? velocity.data() : nullptr;
#pragma omp parallel for simd if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    float d = g[i] + weight_decay * p[i];
    if (v != nullptr) {
      v[i] = momentum * v[i] + d;
      d = nesterov ? d + momentum * v[i] : v[i];
    }
    p[i] -= lr * d;
  }
}

void CpuBackend::adamw_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, float lr,
                            float beta1, float beta2, float epsilon, float weight_decay,
                            int64_t step) {
  const int64_t n = param.numel();
  if (grad.numel() != n || m.numel() != n || v.numel() != n) {
    throw_invalid("adamw_step: parameter, gradient and moment sizes differ");
  }
  if (step < 1) throw_invalid("adamw_step: step must be >= 1, got " + std::to_string(step));
  const float correction1 = 1.0f - static_cast<float>(std::pow(beta1, step));
  const float correction2 = 1.0f - static_cast<float>(std::pow(beta2, step));
  const float step_size = lr / correction1;
  const float sqrt_correction2 = std::sqrt(correction2);
  const float decay = 1.0f - lr * weight_decay;
  float* p = param.data();
  const float* g = grad.data();
  float* pm = m.data();
  float* pv = v.data();
#pragma omp parallel for simd if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    p[i] *= decay;
    pm[i] = beta1 * pm[i] + (1.0f - beta1) * g[i];
    pv[i] = beta2 * pv[i] + (1.0f - beta2) * g[i] * g[i];
    const float denominator = std::sqrt(pv[i]) / sqrt_correction2 + epsilon;
    p[i] -= step_size * pm[i] / denominator;
  }
}

}  // namespace interplace::kernels::cpu
