// Elementwise, layout, dropout and optimiser operations of the CUDA backend: argument
// checks as the CPU backend's (plus device checks), then one kernel launch each.
#include <cmath>
#include <sstream>
#include <vector>

#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "cuda_kernels.hpp"
#include "cuda_validate.hpp"

namespace interplace::kernels::cuda {

namespace {

void require_same_numel(const Tensor& a, const Tensor& b, const char* op) {
  if (a.numel() != b.numel()) {
    throw_invalid(std::string(op) + ": element counts differ, " + to_string(a.shape()) + " vs " +
                  to_string(b.shape()));
  }
}

ActivationKind kind_of(Activation a) {
  switch (a) {
    case Activation::relu:
      return ActivationKind::relu;
    case Activation::relu6:
      return ActivationKind::relu6;
    case Activation::gelu:
      return ActivationKind::gelu;
    case Activation::tanh:
      return ActivationKind::tanh;
    case Activation::sigmoid:
      return ActivationKind::sigmoid;
  }
  throw_invalid("activation: unknown kind " + std::to_string(static_cast<int>(a)));
}

void check_activation(const Tensor& x, const Tensor& other, const char* what) {
  if (!other.defined() || x.numel() != other.numel() || x.numel() == 0) {
    throw_invalid(std::string("activation: ") + what + " " +
                  (other.defined() ? to_string(other.shape()) : std::string("(undefined)")) +
                  " must match the non-empty input " + to_string(x.shape()));
  }
}

// splitmix64's output function (as cpu_dropout.cpp): the mask's key.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

void CudaBackend::fill(Tensor& x, float value) {
  require_cuda({&x}, "fill");
  check_cuda(launch_fill(x.data(), x.numel(), value, stream_), "fill kernel");
}

void CudaBackend::copy(const Tensor& src, Tensor& dst) {
  require_cuda({&src, &dst}, "copy");
  require_same_numel(src, dst, "copy");
  if (src.numel() > 0 && src.data() != dst.data()) {
    INTERPLACE_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), static_cast<size_t>(src.bytes()),
                                          cudaMemcpyDeviceToDevice, stream_));
  }
}

void CudaBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  require_cuda({&a, &b, &y}, "add");
  require_same_numel(a, b, "add");
  require_same_numel(a, y, "add");
  check_cuda(launch_add(a.data(), b.data(), y.data(), a.numel(), stream_), "add kernel");
}

void CudaBackend::multiply(const Tensor& a, const Tensor& b, Tensor& y) {
  require_cuda({&a, &b, &y}, "multiply");
  require_same_numel(a, b, "multiply");
  require_same_numel(a, y, "multiply");
  check_cuda(launch_multiply(a.data(), b.data(), y.data(), a.numel(), stream_), "multiply kernel");
}

void CudaBackend::axpy(float alpha, const Tensor& x, Tensor& y) {
  require_cuda({&x, &y}, "axpy");
  require_same_numel(x, y, "axpy");
  check_cuda(launch_axpy(alpha, x.data(), y.data(), x.numel(), stream_), "axpy kernel");
}

void CudaBackend::scale(float alpha, Tensor& x) {
  require_cuda({&x}, "scale");
  check_cuda(launch_scale(alpha, x.data(), x.numel(), stream_), "scale kernel");
}

void CudaBackend::activation_forward(Activation a, const Tensor& x, Tensor& y) {
  const ActivationKind kind = kind_of(a);
  require_cuda({&x, &y}, "activation");
  check_activation(x, y, "output");
  check_cuda(launch_activation_forward(kind, x.data(), y.data(), x.numel(), stream_),
             "activation forward kernel");
}

void CudaBackend::activation_backward(Activation a, const Tensor& x, const Tensor& dy, Tensor& dx) {
  const ActivationKind kind = kind_of(a);
  require_cuda({&x, &dy, &dx}, "activation");
  check_activation(x, dy, "output gradient");
  check_activation(x, dx, "input gradient");
  check_cuda(launch_activation_backward(kind, x.data(), dy.data(), dx.data(), x.numel(), stream_),
             "activation backward kernel");
}

void CudaBackend::dropout_mask(uint64_t seed, float p, Tensor& mask) {
  if (!(p >= 0.0f && p < 1.0f)) {
    std::ostringstream message;
    message << "dropout: probability p must be in [0, 1), got " << p;
    throw_invalid(message.str());
  }
  require_cuda({&mask}, "dropout");
  const float keep = 1.0f / (1.0f - p);  // the same float expression as the CPU backend
  check_cuda(launch_dropout_mask(mix64(seed), p, keep, mask.data(), mask.numel(), stream_),
             "dropout mask kernel");
}

void CudaBackend::add_row_bias(const Tensor& bias, Tensor& y) {
  require_cuda({&bias, &y}, "add_row_bias");
  const int64_t cols = bias.numel();
  if (cols == 0 || y.numel() % cols != 0) {
    throw_invalid("add_row_bias: " + to_string(y.shape()) + " is not rows of " +
                  std::to_string(cols) + " columns");
  }
  check_cuda(launch_add_row_bias(bias.data(), y.data(), y.numel() / cols, cols, stream_),
             "add_row_bias kernel");
}

void CudaBackend::copy_channels(Tensor& slice, Tensor& whole, int64_t offset, bool slice_to_whole) {
  require_cuda({&slice, &whole}, "copy_channels");
  if (slice.rank() < 2 || whole.rank() != slice.rank() || slice.dim(0) != whole.dim(0) ||
      offset < 0 || offset + slice.dim(1) > whole.dim(1) ||
      slice.numel() / (slice.dim(0) * slice.dim(1)) !=
          whole.numel() / (whole.dim(0) * whole.dim(1))) {
    throw_invalid("copy_channels: slice " + to_string(slice.shape()) + " at channel " +
                  std::to_string(offset) + " does not fit in " + to_string(whole.shape()));
  }
  const int64_t outer = slice.dim(0);
  const int64_t inner = slice.numel() / (outer * slice.dim(1));
  check_cuda(launch_copy_channels(slice.data(), whole.data(), outer, slice.dim(1), whole.dim(1),
                                  offset, inner, slice_to_whole, stream_),
             "copy_channels kernel");
}

void CudaBackend::swap_axes_12(const Tensor& x, Tensor& y) {
  require_cuda({&x, &y}, "swap_axes_12");
  if (x.rank() != 4) {
    throw_invalid("swap_axes_12: input must be [A, B, C, D], got " + to_string(x.shape()));
  }
  const int64_t a = x.dim(0), b = x.dim(1), c = x.dim(2), d = x.dim(3);
  check_shape(y, {a, c, b, d}, "swap_axes_12 output");
  check_cuda(launch_swap_axes_12(x.data(), y.data(), a, b, c, d, stream_), "swap_axes_12 kernel");
}

void CudaBackend::sgd_step_group(std::span<const SgdTensor> tensors, float lr, float momentum,
                                 bool nesterov) {
  std::vector<SgdPointers> pointers;
  pointers.reserve(tensors.size());
  for (const SgdTensor& t : tensors) {
    const int64_t n = t.param->numel();
    const bool with_velocity = momentum != 0.0f;
    if (t.grad->numel() != n ||
        (with_velocity && (t.velocity == nullptr || t.velocity->numel() != n))) {
      throw_invalid("sgd_step: parameter, gradient and velocity sizes differ");
    }
    require_cuda({t.param, t.grad}, "sgd_step");
    if (with_velocity) require_cuda({t.velocity}, "sgd_step");
    pointers.push_back({t.param->data(), t.grad->data(),
                        with_velocity ? t.velocity->data() : nullptr, n, t.weight_decay});
  }
  check_cuda(launch_sgd_step_many(pointers.data(), static_cast<int>(pointers.size()), lr, momentum,
                                  nesterov, stream_),
             "sgd_step kernel (fused)");
}

void CudaBackend::update_running_statistics(const Tensor& mean, const Tensor& variance,
                                            float momentum, float unbias, Tensor& running_mean,
                                            Tensor& running_var) {
  require_cuda({&mean, &variance, &running_mean, &running_var}, "batch_norm running statistics");
  require_same_numel(mean, running_mean, "batch_norm running mean");
  require_same_numel(variance, running_var, "batch_norm running variance");
  require_same_numel(mean, variance, "batch_norm statistics");
  check_cuda(launch_running_statistics(mean.data(), variance.data(), mean.numel(), momentum, unbias,
                                       running_mean.data(), running_var.data(), stream_),
             "batch_norm running statistics kernel");
}

void CudaBackend::sgd_step(Tensor& param, const Tensor& grad, Tensor& velocity, float lr,
                           float momentum, float weight_decay, bool nesterov) {
  const int64_t n = param.numel();
  if (grad.numel() != n || (momentum != 0.0f && velocity.numel() != n)) {
    throw_invalid("sgd_step: parameter, gradient and velocity sizes differ");
  }
  require_cuda({&param, &grad}, "sgd_step");
  if (momentum != 0.0f) require_cuda({&velocity}, "sgd_step");
  float* v = momentum != 0.0f ? velocity.data() : nullptr;
  check_cuda(launch_sgd_step(param.data(), grad.data(), v, n, lr, momentum, weight_decay, nesterov,
                             stream_),
             "sgd_step kernel");
}

void CudaBackend::adamw_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, float lr,
                             float beta1, float beta2, float epsilon, float weight_decay,
                             int64_t step) {
  const int64_t n = param.numel();
  if (grad.numel() != n || m.numel() != n || v.numel() != n) {
    throw_invalid("adamw_step: parameter, gradient and moment sizes differ");
  }
  if (step < 1) throw_invalid("adamw_step: step must be >= 1, got " + std::to_string(step));
  require_cuda({&param, &grad, &m, &v}, "adamw_step");
  // Bias corrections on the host, computed exactly as cpu_optimizer.cpp does.
  const float correction1 = 1.0f - static_cast<float>(std::pow(beta1, step));
  const float correction2 = 1.0f - static_cast<float>(std::pow(beta2, step));
  const float step_size = lr / correction1;
  const float sqrt_correction2 = std::sqrt(correction2);
  const float decay = 1.0f - lr * weight_decay;
  check_cuda(launch_adamw_step(param.data(), grad.data(), m.data(), v.data(), n, beta1, beta2,
                               epsilon, decay, step_size, sqrt_correction2, stream_),
             "adamw_step kernel");
}

}  // namespace interplace::kernels::cuda
