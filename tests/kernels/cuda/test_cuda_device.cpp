// Start-up, device reporting, memory and host<->device transfers.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "cuda_compare.hpp"
#include "gradcheck.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/cuda.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/batch_norm.hpp"

namespace interplace::kernels {
namespace {

using testing::CudaTest;
using testing::random_tensor;

using CudaDevice = CudaTest;

TEST_F(CudaDevice, ReportsTheDeviceAndLibraries) {
  const CudaDeviceInfo info = cuda_device_info();
  EXPECT_GE(info.device, 0);
  EXPECT_GE(info.device_count, 1);
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.total_memory_bytes, int64_t{1} << 30);
  EXPECT_GE(info.compute_capability_major, 7);
  EXPECT_GE(info.cudnn_version, 90000);
  EXPECT_GE(info.runtime_version, 12000);
  EXPECT_GT(info.driver_version, 0);
  EXPECT_NE(to_string(info).find(info.name), std::string::npos);
  EXPECT_EQ(backend_for(Device::cuda).device(), Device::cuda);
  EXPECT_EQ(select_cuda_device(info.device), info.device);
}

TEST_F(CudaDevice, RoundTripsThroughDeviceMemory) {
  const Tensor host = random_tensor({3, 5, 7}, 1);
  const Tensor device = host.to(Device::cuda);
  EXPECT_EQ(device.device(), Device::cuda);
  EXPECT_EQ(device.shape(), host.shape());
  EXPECT_EQ(device.to(Device::cuda).data(), device.data());  // already there: shared
  const Tensor copy = device.clone();
  EXPECT_NE(copy.data(), device.data());
  EXPECT_EQ(copy.to(Device::cpu).to_vector(), host.to_vector());
  EXPECT_EQ(copy.to_vector(), host.to_vector());  // to_vector reads back directly

  Tensor target(host.shape(), Device::cuda);
  target.copy_from(host);  // host -> device
  Tensor back(host.shape());
  back.copy_from(target);  // device -> host
  EXPECT_EQ(back.to_vector(), host.to_vector());
}

TEST_F(CudaDevice, FillsAndZeroesOnTheDevice) {
  EXPECT_EQ(Tensor::zeros({4}, Device::cuda).to_vector(), std::vector<float>(4, 0.0f));
  EXPECT_EQ(Tensor::full({3}, 2.5f, Device::cuda).to_vector(), std::vector<float>(3, 2.5f));
  Tensor t({1000}, Device::cuda);
  t.fill(-1.0f);
  EXPECT_EQ(t.to_vector(), std::vector<float>(1000, -1.0f));
}

TEST_F(CudaDevice, AllocatorReusesFreedBlocks) {
  const int64_t before = cuda_memory_stats().allocated_bytes;
  const void* first = nullptr;
  {
    const Tensor a({1000}, Device::cuda);
    first = a.data();
    EXPECT_GE(cuda_memory_stats().allocated_bytes, before + 4000);
  }
  EXPECT_EQ(cuda_memory_stats().allocated_bytes, before);
  const int64_t mallocs = cuda_memory_stats().device_allocations;
  const Tensor b({990}, Device::cuda);  // the same size class
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(cuda_memory_stats().device_allocations, mallocs);
  EXPECT_GE(cuda_memory_stats().peak_allocated_bytes, cuda_memory_stats().allocated_bytes);
  EXPECT_GE(cuda_memory_stats().reserved_bytes, cuda_memory_stats().allocated_bytes);
}

// MPI messages of device tensors go through pinned host buffers (DMA, no extra copy).
TEST_F(CudaDevice, HostStagingMemoryIsPinnedAndCached) {
  const void* first = nullptr;
  {
    Tensor staged = Tensor::host_staging({1 << 16});
    cudaPointerAttributes attributes{};
    ASSERT_EQ(cudaPointerGetAttributes(&attributes, staged.data()), cudaSuccess);
    EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
    first = staged.data();
    const Tensor on_device = random_tensor({1 << 16}, 4).to(Device::cuda);
    staged.copy_from(on_device);
    EXPECT_EQ(staged.to_vector(), on_device.to_vector());
  }
  const Tensor again = Tensor::host_staging({1 << 16});
  EXPECT_EQ(again.data(), first);  // reused, not allocated anew
}

TEST_F(CudaDevice, LayerToMovesParametersAndBuffers) {
  BatchNorm2d bn(4);
  bn.to(Device::cuda);
  EXPECT_EQ(bn.weight().value.device(), Device::cuda);
  EXPECT_EQ(bn.running_var().device(), Device::cuda);
  EXPECT_EQ(bn.running_var().to_vector(), std::vector<float>(4, 1.0f));
  Rng rng(1);
  bn.init_parameters(rng);  // initialisation works in place on the device too
  EXPECT_EQ(bn.weight().value.to_vector(), std::vector<float>(4, 1.0f));
  bn.to(Device::cpu);
  EXPECT_EQ(bn.running_mean().device(), Device::cpu);
}

TEST_F(CudaDevice, RejectsHostTensorsWithAHint) {
  Backend& cuda = backend_for(Device::cuda);
  const Tensor host = Tensor::zeros({4});
  Tensor out({4}, Device::cuda);
  try {
    cuda.add(host, out, out);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    EXPECT_NE(std::string(e.what()).find("is on cpu, expected cuda"), std::string::npos)
        << e.what();
  }
}

TEST_F(CudaDevice, Tf32CanBeSwitchedOnAndOff) {
  EXPECT_FALSE(tf32_enabled());
  set_tf32(true);
  EXPECT_TRUE(tf32_enabled());
  set_tf32(false);
  EXPECT_FALSE(tf32_enabled());
}

}  // namespace
}  // namespace interplace::kernels
