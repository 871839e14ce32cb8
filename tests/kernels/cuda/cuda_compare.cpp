#include "cuda_compare.hpp"

#include <algorithm>
#include <cmath>

#include "gradcheck.hpp"
#include "interplace/kernels/cuda.hpp"

namespace interplace::kernels::testing {

void CudaTest::SetUp() {
  if (!init_cuda_backend()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
}

::testing::AssertionResult close_to(const Tensor& actual, const Tensor& expected, double tolerance,
                                    const std::string& what) {
  if (!actual.defined() || !expected.defined() || actual.numel() != expected.numel()) {
    return ::testing::AssertionFailure()
           << what << ": sizes differ, " << (actual.defined() ? to_string(actual.shape()) : "none")
           << " vs " << (expected.defined() ? to_string(expected.shape()) : "none");
  }
  const std::vector<float> a = actual.to_vector();
  const std::vector<float> e = expected.to_vector();
  double diff2 = 0.0, norm2 = 0.0, worst = -1.0;
  size_t worst_index = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - e[i];
    diff2 += d * d;
    norm2 += static_cast<double>(e[i]) * e[i];
    if (!(std::abs(d) <= worst)) {  // NaN counts as worst
      worst = std::abs(d);
      worst_index = i;
    }
  }
  const double error = std::sqrt(diff2) / std::max(std::sqrt(norm2), 1e-12);
  if (!(error <= tolerance)) {
    return ::testing::AssertionFailure()
           << what << ": relative error " << error << " > " << tolerance << " over " << a.size()
           << " elements (worst at " << worst_index << ": cuda " << a[worst_index] << ", cpu "
           << e[worst_index] << ")";
  }
  return ::testing::AssertionSuccess();
}

Tensor random_integers(const Shape& shape, int64_t bound, uint64_t seed) {
  Rng rng(seed);
  Tensor t(shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data()[i] = static_cast<float>(rng.next_u64() % static_cast<uint64_t>(bound));
  }
  return t;
}

namespace {

::testing::AssertionResult compare_gradients(const std::vector<Tensor>& gpu,
                                             const std::vector<Tensor>& cpu, double tolerance,
                                             const std::string& what) {
  if (gpu.size() != cpu.size()) {
    return ::testing::AssertionFailure() << what << ": " << gpu.size() << " vs " << cpu.size();
  }
  for (size_t i = 0; i < cpu.size(); ++i) {
    const std::string name = what + " " + std::to_string(i);
    if (cpu[i].defined() != gpu[i].defined()) {
      return ::testing::AssertionFailure() << name << ": defined on one device only";
    }
    if (!cpu[i].defined()) continue;
    if (gpu[i].device() != Device::cuda) {
      return ::testing::AssertionFailure() << name << ": not on the GPU";
    }
    auto result = close_to(gpu[i], cpu[i], tolerance, name);
    if (!result) return result;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult compare_state(Layer& gpu, Layer& cpu, double tolerance,
                                         const std::string& when) {
  const auto gp = gpu.parameters(), cp = cpu.parameters();
  for (size_t i = 0; i < cp.size(); ++i) {
    if (cp[i]->grad_is_zero) continue;
    auto result = close_to(gp[i]->grad, cp[i]->grad, tolerance,
                           "gradient of parameter " + cp[i]->name + " " + when);
    if (!result) return result;
  }
  const auto gb = gpu.buffers(), cb = cpu.buffers();
  for (size_t i = 0; i < cb.size(); ++i) {
    auto result = close_to(*gb[i], *cb[i], tolerance, "buffer " + std::to_string(i) + " " + when);
    if (!result) return result;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

::testing::AssertionResult matches_cpu(const std::function<std::unique_ptr<Layer>()>& make,
                                       const std::vector<Tensor>& inputs,
                                       const CompareOptions& options) {
  auto cpu = make();
  auto gpu = make();
  Rng rng(options.seed);
  cpu->init_parameters(rng);
  if (options.prepare) options.prepare(*cpu);
  gpu->to(Device::cuda);
  const auto cp = cpu->parameters(), gp = gpu->parameters();
  for (size_t i = 0; i < cp.size(); ++i) gp[i]->value.copy_from(cp[i]->value);
  const auto cb = cpu->buffers(), gb = gpu->buffers();
  for (size_t i = 0; i < cb.size(); ++i) gb[i]->copy_from(*cb[i]);
  cpu->set_training(options.training);
  gpu->set_training(options.training);

  std::vector<Tensor> gpu_inputs;
  for (const Tensor& x : inputs) gpu_inputs.push_back(x.to(Device::cuda));
  Context cpu_ctx, gpu_ctx;
  const Tensor y_cpu = cpu->forward(inputs, cpu_ctx);
  const Tensor y_gpu = gpu->forward(gpu_inputs, gpu_ctx);
  if (y_gpu.device() != Device::cuda) return ::testing::AssertionFailure() << "output not on GPU";
  auto result = close_to(y_gpu, y_cpu, options.tolerance, "output");
  if (!result) return result;

  const Tensor dy = random_tensor(y_cpu.shape(), options.seed + 1);
  const Tensor dy_gpu = dy.to(Device::cuda);
  result = compare_gradients(gpu->backward(dy_gpu, gpu_ctx), cpu->backward(dy, cpu_ctx),
                             options.tolerance, "input gradient");
  if (!result) return result;
  result = compare_state(*gpu, *cpu, options.tolerance, "after one backward");
  if (!result) return result;
  // A backward for the inputs only: the same input gradient on both devices, and no
  // parameter gradient changed on either (the CPU side is pinned by the gradient checks).
  result = compare_gradients(gpu->backward(dy_gpu, gpu_ctx, Gradients::inputs_only),
                             cpu->backward(dy, cpu_ctx, Gradients::inputs_only), options.tolerance,
                             "input gradient (inputs only)");
  if (!result) return result;
  result = compare_state(*gpu, *cpu, options.tolerance, "after a backward for the inputs only");
  if (!result || !options.second_backward) return result;
  gpu->backward(dy_gpu, gpu_ctx);
  cpu->backward(dy, cpu_ctx);
  result = compare_state(*gpu, *cpu, options.tolerance, "after two backward calls");
  if (!result) return result;
  // The zero-bubble split (B, then W): the same input gradient on both devices, then the
  // same parameter gradients added.
  result = compare_gradients(gpu->backward(dy_gpu, gpu_ctx, Gradients::inputs_deferring_parameters),
                             cpu->backward(dy, cpu_ctx, Gradients::inputs_deferring_parameters),
                             options.tolerance, "input gradient (deferring the parameters)");
  if (!result) return result;
  gpu->backward_parameters(gpu_ctx);
  cpu->backward_parameters(cpu_ctx);
  return compare_state(*gpu, *cpu, options.tolerance, "after a deferred parameter pass");
}

}  // namespace interplace::kernels::testing
