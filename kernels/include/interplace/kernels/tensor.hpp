// A dense fp32 tensor: a shape, a device and shared, 64-byte aligned owning storage.
// Copies share storage (like a handle); `clone` copies the data. Layout is row-major
// (NCHW for images, [batch, time, features] for sequences).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace interplace::kernels {

enum class Device { cpu, cuda };
std::string to_string(Device device);

using Shape = std::vector<int64_t>;
std::string to_string(const Shape& shape);
int64_t numel(const Shape& shape);

// Gives the host heap's free memory back to the system. Freed host tensors otherwise stay
// in the heap for reuse (tensor.cpp says why); a run calls this before it starts, so that
// what an earlier run left does not count in its peak memory (VmHWM).
void release_free_host_memory();

// Allocates and frees raw device memory; one per device kind (CPU is built in,
// the CUDA backend installs its caching allocator).
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(int64_t bytes) = 0;
  virtual void deallocate(void* ptr, int64_t bytes) = 0;
};
void set_allocator(Device device, Allocator* allocator);
Allocator& allocator_for(Device device);

// Copies `bytes` from `src` to `dst`, either of which may be host or device memory, and
// returns when the copy is complete. A device backend installs one for its device, so
// that the core needs no device API (host-to-host copies are built in).
using CopyFunction = void (*)(void* dst, Device dst_device, const void* src, Device src_device,
                              int64_t bytes);
void set_copy_function(Device device, CopyFunction copy);

// Host memory that devices copy to and from directly (pinned): a device backend installs
// an allocator for it (the CUDA backend does, at start-up); without one it is ordinary
// host memory. The buffers of MPI messages of device tensors come from here.
void set_host_staging_allocator(Allocator* allocator);
Allocator& host_staging_allocator();

class Tensor {
 public:
  Tensor() = default;
  // Uninitialised storage for `shape` on `device`. Throws on negative extents.
  explicit Tensor(Shape shape, Device device = Device::cpu);
  // A CPU tensor in host staging memory (see host_staging_allocator).
  static Tensor host_staging(Shape shape);

  static Tensor zeros(Shape shape, Device device = Device::cpu);
  static Tensor full(Shape shape, float value, Device device = Device::cpu);
  static Tensor from_vector(Shape shape, std::span<const float> values);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int axis) const;  // negative axes count from the end
  int64_t numel() const { return numel_; }
  int64_t bytes() const { return numel_ * static_cast<int64_t>(sizeof(float)); }
  Device device() const { return device_; }

  float* data() { return data_; }
  const float* data() const { return data_; }

  // A view of the same storage with another shape of equal element count.
  Tensor reshaped(Shape shape) const;
  // A copy of the data on the same device.
  Tensor clone() const;
  // The tensor on `device`: itself (shared storage) when already there, else a copy.
  Tensor to(Device device) const;

  // Work on any device (device tensors go through the device backend or copy function);
  // copy_from also copies between devices. They block until done.
  void fill(float value);
  void copy_from(const Tensor& other);
  std::vector<float> to_vector() const;
  // Element access; requires a CPU tensor.
  float& at(int64_t flat_index);
  float at(int64_t flat_index) const;

 private:
  Tensor(Shape shape, Device device, Allocator& allocator);
  struct Storage;
  std::shared_ptr<Storage> storage_;
  float* data_ = nullptr;
  Shape shape_;
  int64_t numel_ = 0;
  Device device_ = Device::cpu;
  void require_cpu(const char* what) const;
};

// Throws an invalid-input error naming `what` unless `tensor` has `expected` shape.
void check_shape(const Tensor& tensor, const Shape& expected, const std::string& what);

}  // namespace interplace::kernels
