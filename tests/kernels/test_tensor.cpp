#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/batch_norm.hpp"
#include "interplace/kernels/layers/linear.hpp"
#include "interplace/kernels/tensor.hpp"

namespace interplace::kernels {
namespace {

TEST(Tensor, ToTheSameDeviceSharesStorage) {
  const Tensor t = Tensor::full({2, 3}, 1.5f);
  const Tensor same = t.to(Device::cpu);
  EXPECT_EQ(same.data(), t.data());
  EXPECT_EQ(same.shape(), t.shape());
}

TEST(Tensor, CloneAndCopyFromCopyTheData) {
  const float values[] = {1, 2, 3, 4};
  Tensor t = Tensor::from_vector({2, 2}, values);
  const Tensor copy = t.clone();
  EXPECT_NE(copy.data(), t.data());
  t.fill(0.0f);
  EXPECT_EQ(copy.to_vector(), (std::vector<float>{1, 2, 3, 4}));
  t.copy_from(copy);
  EXPECT_EQ(t.to_vector(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_THROW(t.copy_from(Tensor::zeros({4})), Error);
}

TEST(Tensor, FullTakesADevice) {
  EXPECT_EQ(Tensor::full({3}, 2.0f, Device::cpu).to_vector(), (std::vector<float>{2, 2, 2}));
}

// kernel_tests never starts the CUDA backend, so no CUDA memory exists here even in a
// CUDA build: moving there must fail with a runtime error, not crash.
TEST(Tensor, MovingToAnAbsentDeviceIsARuntimeError) {
  const Tensor t = Tensor::zeros({2});
  try {
    (void)t.to(Device::cuda);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::runtime);
    EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
  }
}

// Counts what it hands out, so a test can see which allocator a tensor's storage uses.
class CountingAllocator final : public Allocator {
 public:
  void* allocate(int64_t bytes) override {
    ++live;
    return ::operator new(static_cast<size_t>(std::max<int64_t>(bytes, 1)));
  }
  void deallocate(void* ptr, int64_t /*bytes*/) override {
    --live;
    ::operator delete(ptr);
  }
  int live = 0;
};

TEST(Tensor, HostStagingIsOrdinaryHostMemoryWithoutADeviceAllocator) {
  Tensor staged = Tensor::host_staging({2, 3});
  EXPECT_EQ(staged.device(), Device::cpu);
  staged.fill(2.5f);
  EXPECT_EQ(staged.at(5), 2.5f);
}

TEST(Tensor, HostStagingStorageComesFromAndReturnsToTheStagingAllocator) {
  CountingAllocator pinned;
  set_host_staging_allocator(&pinned);
  {
    Tensor staged = Tensor::host_staging({4});
    EXPECT_EQ(pinned.live, 1);
    const Tensor plain({4});  // ordinary CPU tensors do not use it
    EXPECT_EQ(pinned.live, 1);
    // Storage goes back to its own allocator even after the staging one is replaced.
    set_host_staging_allocator(nullptr);
    staged.copy_from(Tensor::full({4}, 1.0f));
    EXPECT_EQ(staged.to_vector(), std::vector<float>(4, 1.0f));
  }
  EXPECT_EQ(pinned.live, 0);
}

// Page faults of this process so far (first touches of fresh pages).
int64_t minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// A training step frees its activations and allocates the same sizes again: those come
// back from the heap, already faulted in, instead of fresh pages from an mmap per tensor
// (glibc's default for blocks of 128 KiB and more) - 1024 faults per 4 MiB tensor and
// step otherwise. release_free_host_memory gives them back to the system.
TEST(Tensor, FreedHostTensorsAreReusedWithoutPageFaults) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator replaces glibc's, whose reuse this checks";
#endif
  constexpr int64_t kFloats = int64_t{1} << 20;  // 4 MiB
  const auto touch_and_free = [] {
    Tensor t = Tensor::full({kFloats}, 1.0F);
    EXPECT_EQ(t.data()[kFloats - 1], 1.0F);
  };
  touch_and_free();  // the heap grows once
  const int64_t before = minor_faults();
  for (int step = 0; step < 20; ++step) touch_and_free();
  EXPECT_LT(minor_faults() - before, 200) << "4 MiB tensors page-fault anew each time";
  release_free_host_memory();
  const int64_t released = minor_faults();
  touch_and_free();
  EXPECT_GT(minor_faults() - released, 500) << "the freed heap was not given back";
}

TEST(Layer, ToTheSameDeviceKeepsParametersAndBuffers) {
  BatchNorm2d bn(3);
  const float* weight = bn.weight().value.data();
  const float* running_mean = bn.running_mean().data();
  bn.to(Device::cpu);
  EXPECT_EQ(bn.weight().value.data(), weight);
  EXPECT_EQ(bn.running_mean().data(), running_mean);
}

TEST(Layer, InitialisationIsDeterministicPerSeed) {
  Linear a(4, 3), b(4, 3);
  Rng rng_a(11), rng_b(11);
  a.init_parameters(rng_a);
  b.init_parameters(rng_b);
  EXPECT_EQ(a.weight().value.to_vector(), b.weight().value.to_vector());
  EXPECT_EQ(a.bias().value.to_vector(), b.bias().value.to_vector());
}

}  // namespace
}  // namespace interplace::kernels
