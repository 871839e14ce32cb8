// Optimiser steps and the elementwise helpers of the CUDA backend against the CPU's.
#include <gtest/gtest.h>

#include "cuda_compare.hpp"
#include "expect_invalid.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layers/linear.hpp"
#include "interplace/kernels/optimizer.hpp"

namespace interplace::kernels {
namespace {

using testing::close_to;
using testing::CudaTest;
using testing::random_tensor;

using CudaOptimizer = CudaTest;
using CudaElementwise = CudaTest;

// Two identical Linear layers, one per device, stepped `steps` times with the same
// gradients by optimisers made by make(parameters).
template <class Make>
::testing::AssertionResult steps_agree(Make make, int steps) {
  Linear cpu(6, 4), gpu(6, 4);
  Rng rng(1);
  cpu.init_parameters(rng);
  gpu.to(Device::cuda);
  for (size_t i = 0; i < cpu.parameters().size(); ++i) {
    gpu.parameters()[i]->value.copy_from(cpu.parameters()[i]->value);
  }
  auto cpu_opt = make(cpu.parameters());
  auto gpu_opt = make(gpu.parameters());
  for (int s = 0; s < steps; ++s) {
    const Tensor x = random_tensor({5, 6}, 10 + static_cast<uint64_t>(s));
    const Tensor dy = random_tensor({5, 4}, 20 + static_cast<uint64_t>(s));
    Context cpu_ctx, gpu_ctx;
    cpu_opt->zero_grad();
    gpu_opt->zero_grad();
    cpu.forward(x, cpu_ctx);
    gpu.forward(x.to(Device::cuda), gpu_ctx);
    cpu.backward(dy, cpu_ctx);
    gpu.backward(dy.to(Device::cuda), gpu_ctx);
    cpu_opt->step();
    gpu_opt->step();
  }
  for (size_t i = 0; i < cpu.parameters().size(); ++i) {
    auto result =
        close_to(gpu.parameters()[i]->value, cpu.parameters()[i]->value, 1e-6,
                 cpu.parameters()[i]->name + " after " + std::to_string(steps) + " steps");
    if (!result) return result;
  }
  return ::testing::AssertionSuccess();
}

TEST_F(CudaOptimizer, PlainSgd) {
  EXPECT_TRUE(steps_agree(
      [](std::vector<Parameter*> p) {
        return std::make_unique<Sgd>(std::move(p), SgdOptions{.learning_rate = 0.1f});
      },
      3));
}

TEST_F(CudaOptimizer, SgdWithMomentumWeightDecayAndNesterov) {
  for (const bool nesterov : {false, true}) {
    EXPECT_TRUE(steps_agree(
        [nesterov](std::vector<Parameter*> p) {
          return std::make_unique<Sgd>(std::move(p), SgdOptions{.learning_rate = 0.05f,
                                                                .momentum = 0.9f,
                                                                .weight_decay = 1e-2f,
                                                                .nesterov = nesterov});
        },
        4));
  }
}

TEST_F(CudaOptimizer, AdamW) {
  EXPECT_TRUE(steps_agree(
      [](std::vector<Parameter*> p) {
        return std::make_unique<AdamW>(std::move(p),
                                       AdamWOptions{.learning_rate = 1e-2f, .weight_decay = 0.1f});
      },
      5));
}

// The fused SGD step on more tensors than one launch takes (70: three chunks of 32), of
// sizes from 1 to 70,000 elements, half without weight decay, against the CPU's per-tensor
// step; with momentum (plain and Nesterov, three steps so the velocity matters) and without.
TEST_F(CudaOptimizer, FusedSgdGroupMatchesTheCpu) {
  Backend& cpu = backend_for(Device::cpu);
  Backend& cuda = backend_for(Device::cuda);
  constexpr int kTensors = 70;
  for (const float momentum : {0.0f, 0.9f}) {
    for (const bool nesterov : {false, true}) {
      if (nesterov && momentum == 0.0f) continue;
      std::vector<Tensor> p, g, v, gp, gg, gv;
      for (int i = 0; i < kTensors; ++i) {
        const int64_t n = 1 + (static_cast<int64_t>(i) * 7919) % 70000;
        p.push_back(random_tensor({n}, 100 + static_cast<uint64_t>(i)));
        g.push_back(random_tensor({n}, 300 + static_cast<uint64_t>(i)));
        v.push_back(momentum != 0.0f ? random_tensor({n}, 500 + static_cast<uint64_t>(i))
                                     : Tensor());
        gp.push_back(p.back().to(Device::cuda));
        gg.push_back(g.back().to(Device::cuda));
        gv.push_back(momentum != 0.0f ? v.back().to(Device::cuda) : Tensor());
      }
      std::vector<Backend::SgdTensor> host, device;
      for (int i = 0; i < kTensors; ++i) {
        const auto k = static_cast<size_t>(i);
        const float wd = i % 2 == 0 ? 1e-2f : 0.0f;
        host.push_back({&p[k], &g[k], momentum != 0.0f ? &v[k] : nullptr, wd});
        device.push_back({&gp[k], &gg[k], momentum != 0.0f ? &gv[k] : nullptr, wd});
      }
      for (int step = 0; step < 3; ++step) {
        cpu.sgd_step_group(host, 0.05f, momentum, nesterov);
        cuda.sgd_step_group(device, 0.05f, momentum, nesterov);
      }
      const std::string what = "fused SGD, momentum " + std::to_string(momentum) +
                               (nesterov ? ", Nesterov" : "") + ", tensor ";
      for (size_t k = 0; k < p.size(); ++k) {
        EXPECT_TRUE(close_to(gp[k], p[k], 1e-6, what + std::to_string(k)));
        if (momentum != 0.0f) {
          EXPECT_TRUE(close_to(gv[k], v[k], 1e-6, what + std::to_string(k) + " velocity"));
        }
      }
    }
  }
}

// Batch norm's running statistics in one launch against the CPU's scale and axpy.
TEST_F(CudaElementwise, RunningStatisticsMatchTheCpu) {
  Backend& cpu = backend_for(Device::cpu);
  Backend& cuda = backend_for(Device::cuda);
  const Tensor mean = random_tensor({96}, 11), variance = random_tensor({96}, 12);
  Tensor running_mean = random_tensor({96}, 13), running_var = random_tensor({96}, 14);
  Tensor grunning_mean = running_mean.to(Device::cuda), grunning_var = running_var.to(Device::cuda);
  const float unbias = 512.0f / 511.0f;
  cpu.update_running_statistics(mean, variance, 0.1f, unbias, running_mean, running_var);
  cuda.update_running_statistics(mean.to(Device::cuda), variance.to(Device::cuda), 0.1f, unbias,
                                 grunning_mean, grunning_var);
  EXPECT_TRUE(close_to(grunning_mean, running_mean, 1e-7, "running mean"));
  EXPECT_TRUE(close_to(grunning_var, running_var, 1e-7, "running variance"));
  Tensor short_var({95}, Device::cuda);
  testing::expect_invalid(
      [&] {
        cuda.update_running_statistics(mean.to(Device::cuda), variance.to(Device::cuda), 0.1f,
                                       unbias, grunning_mean, short_var);
      },
      "running variance");
}

TEST_F(CudaElementwise, HelpersMatchTheCpu) {
  Backend& cpu = backend_for(Device::cpu);
  Backend& cuda = backend_for(Device::cuda);
  const Tensor a = random_tensor({1000}, 1), b = random_tensor({1000}, 2);
  const Tensor ga = a.to(Device::cuda), gb = b.to(Device::cuda);
  Tensor y({1000}), gy({1000}, Device::cuda);
  cpu.add(a, b, y);
  cuda.add(ga, gb, gy);
  EXPECT_TRUE(close_to(gy, y, 0.0, "add"));
  cpu.multiply(a, b, y);
  cuda.multiply(ga, gb, gy);
  EXPECT_TRUE(close_to(gy, y, 0.0, "multiply"));
  cpu.axpy(0.3f, a, y);
  cuda.axpy(0.3f, ga, gy);
  EXPECT_TRUE(close_to(gy, y, 1e-7, "axpy"));
  cpu.scale(-1.5f, y);
  cuda.scale(-1.5f, gy);
  EXPECT_TRUE(close_to(gy, y, 1e-7, "scale"));
  cuda.copy(ga, gy);
  EXPECT_TRUE(close_to(gy, a, 0.0, "copy"));
  EXPECT_NEAR(cuda.squared_norm(ga), cpu.squared_norm(a), 1e-9 * cpu.squared_norm(a));
}

TEST_F(CudaElementwise, RowAndLayoutHelpersMatchTheCpu) {
  Backend& cpu = backend_for(Device::cpu);
  Backend& cuda = backend_for(Device::cuda);
  const Tensor x = random_tensor({130, 7}, 3);
  for (const bool accumulate : {false, true}) {
    Tensor y = random_tensor({7}, 4);
    Tensor gy = y.to(Device::cuda);
    cpu.sum_rows(x, y, accumulate);
    cuda.sum_rows(x.to(Device::cuda), gy, accumulate);
    EXPECT_TRUE(close_to(gy, y, 1e-6, accumulate ? "sum_rows accumulating" : "sum_rows"));
  }
  const Tensor bias = random_tensor({7}, 5);
  Tensor rows = x.clone(), grows = x.to(Device::cuda);
  cpu.add_row_bias(bias, rows);
  cuda.add_row_bias(bias.to(Device::cuda), grows);
  EXPECT_TRUE(close_to(grows, rows, 0.0, "add_row_bias"));

  const Tensor t = random_tensor({2, 3, 4, 5}, 6);
  Tensor swapped({2, 4, 3, 5}), gswapped({2, 4, 3, 5}, Device::cuda);
  cpu.swap_axes_12(t, swapped);
  cuda.swap_axes_12(t.to(Device::cuda), gswapped);
  EXPECT_TRUE(close_to(gswapped, swapped, 0.0, "swap_axes_12"));

  Tensor whole = random_tensor({2, 6, 5}, 7), gwhole = whole.to(Device::cuda);
  Tensor slice = random_tensor({2, 2, 5}, 8), gslice = slice.to(Device::cuda);
  cpu.copy_channels(slice, whole, 3, true);
  cuda.copy_channels(gslice, gwhole, 3, true);
  EXPECT_TRUE(close_to(gwhole, whole, 0.0, "copy_channels into the whole"));
  Tensor part({2, 3, 5}), gpart({2, 3, 5}, Device::cuda);
  cpu.copy_channels(part, whole, 1, false);
  cuda.copy_channels(gpart, gwhole, 1, false);
  EXPECT_TRUE(close_to(gpart, part, 0.0, "copy_channels out of the whole"));
}

TEST_F(CudaElementwise, SizeMismatchIsAnInputError) {
  Tensor a({3}, Device::cuda), b({4}, Device::cuda);
  testing::expect_invalid([&] { backend_for(Device::cuda).add(a, b, a); }, "element counts differ");
}

}  // namespace
}  // namespace interplace::kernels
