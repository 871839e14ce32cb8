// Elementwise kernels: arithmetic helpers, activations, dropout masks and optimiser
// updates. Grid-stride loops, one element per iteration: these are memory-bound, and the
// simple form is easy to check against the CPU backend line by line.
#include "cuda_kernels.hpp"
#include "cuda_launch.cuh"

namespace interplace::kernels::cuda {

namespace {

// Runs op(i) for every i in [0, n).
template <class Op>
__global__ void for_each_kernel(int64_t n, Op op) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) op(i);
}

template <class Op>
cudaError_t for_each(int64_t n, cudaStream_t stream, Op op) {
  if (n <= 0) return cudaSuccess;
  for_each_kernel<<<blocks_for(n), kThreads, 0, stream>>>(n, op);
  return cudaGetLastError();
}

// GELU, tanh approximation (as GPT-2 and oneDNN's eltwise_gelu_tanh):
// 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

__device__ float gelu(float x) {
  const float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return 0.5f * x * (1.0f + tanhf(u));
}

__device__ float gelu_derivative(float x) {
  const float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  const float t = tanhf(u);
  const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

// splitmix64's output function, as cpu_dropout.cpp.
__device__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

cudaError_t launch_fill(float* x, int64_t n, float value, cudaStream_t stream) {
  return for_each(n, stream, [=] __device__(int64_t i) { x[i] = value; });
}

cudaError_t launch_add(const float* a, const float* b, float* y, int64_t n, cudaStream_t stream) {
  return for_each(n, stream, [=] __device__(int64_t i) { y[i] = a[i] + b[i]; });
}

cudaError_t launch_multiply(const float* a, const float* b, float* y, int64_t n,
                            cudaStream_t stream) {
  return for_each(n, stream, [=] __device__(int64_t i) { y[i] = a[i] * b[i]; });
}

cudaError_t launch_axpy(float alpha, const float* x, float* y, int64_t n, cudaStream_t stream) {
  return for_each(n, stream, [=] __device__(int64_t i) { y[i] += alpha * x[i]; });
}

cudaError_t launch_scale(float alpha, float* x, int64_t n, cudaStream_t stream) {
  return for_each(n, stream, [=] __device__(int64_t i) { x[i] *= alpha; });
}

cudaError_t launch_activation_forward(ActivationKind kind, const float* x, float* y, int64_t n,
                                      cudaStream_t stream) {
  switch (kind) {
    case ActivationKind::relu:
      return for_each(n, stream, [=] __device__(int64_t i) { y[i] = x[i] > 0.0f ? x[i] : 0.0f; });
    case ActivationKind::relu6:
      return for_each(n, stream,
                      [=] __device__(int64_t i) { y[i] = fminf(fmaxf(x[i], 0.0f), 6.0f); });
    case ActivationKind::gelu:
      return for_each(n, stream, [=] __device__(int64_t i) { y[i] = gelu(x[i]); });
    case ActivationKind::tanh:
      return for_each(n, stream, [=] __device__(int64_t i) { y[i] = tanhf(x[i]); });
    case ActivationKind::sigmoid:
      return for_each(n, stream, [=] __device__(int64_t i) { y[i] = 1.0f / (1.0f + expf(-x[i])); });
  }
  return cudaErrorInvalidValue;
}

// Gradients are 0 at the kinks (x = 0 and x = 6), as PyTorch and the CPU backend.
cudaError_t launch_activation_backward(ActivationKind kind, const float* x, const float* dy,
                                       float* dx, int64_t n, cudaStream_t stream) {
  switch (kind) {
    case ActivationKind::relu:
      return for_each(n, stream, [=] __device__(int64_t i) { dx[i] = x[i] > 0.0f ? dy[i] : 0.0f; });
    case ActivationKind::relu6:
      return for_each(n, stream, [=] __device__(int64_t i) {
        dx[i] = (x[i] > 0.0f && x[i] < 6.0f) ? dy[i] : 0.0f;
      });
    case ActivationKind::gelu:
      return for_each(n, stream,
                      [=] __device__(int64_t i) { dx[i] = dy[i] * gelu_derivative(x[i]); });
    case ActivationKind::tanh:
      return for_each(n, stream, [=] __device__(int64_t i) {
        const float t = tanhf(x[i]);
        dx[i] = dy[i] * (1.0f - t * t);
      });
    case ActivationKind::sigmoid:
      return for_each(n, stream, [=] __device__(int64_t i) {
        const float s = 1.0f / (1.0f + expf(-x[i]));
        dx[i] = dy[i] * s * (1.0f - s);
      });
  }
  return cudaErrorInvalidValue;
}

// Element i takes the i-th output of a splitmix64 stream seeded with key: bit-identical
// to cpu_dropout.cpp (integer arithmetic, then an exact conversion to [0, 1)).
cudaError_t launch_dropout_mask(uint64_t key, float p, float keep, float* mask, int64_t n,
                                cudaStream_t stream) {
  return for_each(n, stream, [=] __device__(int64_t i) {
    const uint64_t bits = mix64(key + (static_cast<uint64_t>(i) + 1) * 0x9E3779B97F4A7C15ull);
    const float u = static_cast<float>(bits >> 40) * 0x1.0p-24f;
    mask[i] = u >= p ? keep : 0.0f;
  });
}

cudaError_t launch_sgd_step(float* param, const float* grad, float* velocity, int64_t n, float lr,
                            float momentum, float weight_decay, bool nesterov,
                            cudaStream_t stream) {
  return for_each(n, stream, [=] __device__(int64_t i) {
    float d = grad[i] + weight_decay * param[i];
    if (velocity != nullptr) {
      velocity[i] = momentum * velocity[i] + d;
      d = nesterov ? d + momentum * velocity[i] : velocity[i];
    }
    param[i] -= lr * d;
  });
}

namespace {

// A launch's share of a fused SGD step, passed by value (kernel parameters may hold 4 KiB;
// 32 tensors take 1.2 KiB).
constexpr int kSgdChunk = 32;
struct SgdChunk {
  SgdPointers tensors[kSgdChunk];
  int count;
};

// Block row blockIdx.y updates tensor blockIdx.y with a grid-stride loop over its elements;
// the formula is launch_sgd_step's, element for element.
__global__ void sgd_step_many_kernel(SgdChunk chunk, float lr, float momentum, bool nesterov) {
  const SgdPointers t = chunk.tensors[blockIdx.y];
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < t.n;
       i += stride) {
    float d = t.grad[i] + t.weight_decay * t.param[i];
    if (t.velocity != nullptr) {
      t.velocity[i] = momentum * t.velocity[i] + d;
      d = nesterov ? d + momentum * t.velocity[i] : t.velocity[i];
    }
    t.param[i] -= lr * d;
  }
}

}  // namespace

cudaError_t launch_sgd_step_many(const SgdPointers* tensors, int count, float lr, float momentum,
                                 bool nesterov, cudaStream_t stream) {
  for (int first = 0; first < count; first += kSgdChunk) {
    SgdChunk chunk{};
    chunk.count = count - first < kSgdChunk ? count - first : kSgdChunk;
    int64_t largest = 0;
    for (int k = 0; k < chunk.count; ++k) {
      chunk.tensors[k] = tensors[first + k];
      if (chunk.tensors[k].n > largest) largest = chunk.tensors[k].n;
    }
    if (largest == 0) continue;
    // Enough blocks for the largest tensor (capped by blocks_for); the rows of smaller
    // tensors leave their surplus blocks idle, which costs less than another launch.
    const dim3 grid(blocks_for(largest), static_cast<unsigned int>(chunk.count));
    sgd_step_many_kernel<<<grid, kThreads, 0, stream>>>(chunk, lr, momentum, nesterov);
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

cudaError_t launch_running_statistics(const float* mean, const float* variance, int64_t n,
                                      float momentum, float unbias, float* running_mean,
                                      float* running_var, cudaStream_t stream) {
  const float keep = 1.0f - momentum;
  const float variance_weight = momentum * unbias;
  return for_each(n, stream, [=] __device__(int64_t i) {
    // As the default's scale then axpy: the kept part rounded first.
    const float kept_mean = keep * running_mean[i];
    running_mean[i] = kept_mean + momentum * mean[i];
    const float kept_var = keep * running_var[i];
    running_var[i] = kept_var + variance_weight * variance[i];
  });
}

cudaError_t launch_inverse_std(const float* variance, int64_t n, float epsilon, float* inv_std,
                               cudaStream_t stream) {
  return for_each(n, stream,
                  [=] __device__(int64_t i) { inv_std[i] = 1.0f / sqrtf(variance[i] + epsilon); });
}

cudaError_t launch_adamw_step(float* param, const float* grad, float* m, float* v, int64_t n,
                              float beta1, float beta2, float epsilon, float decay, float step_size,
                              float sqrt_correction2, cudaStream_t stream) {
  return for_each(n, stream, [=] __device__(int64_t i) {
    const float g = grad[i];
    const float p = param[i] * decay;
    m[i] = beta1 * m[i] + (1.0f - beta1) * g;
    v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
    const float denominator = sqrtf(v[i]) / sqrt_correction2 + epsilon;
    param[i] = p - step_size * m[i] / denominator;
  });
}

}  // namespace interplace::kernels::cuda
