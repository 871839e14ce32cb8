#include "interplace/kernels/tensor.hpp"

#include <malloc.h>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/shapes_only.hpp"

namespace interplace::kernels {

namespace {

// Freed host tensors stay in this process's heap for the next step's tensors. glibc's
// defaults serve every block of 128 KiB or more (a threshold it raises as such blocks are
// freed, up to 32 MiB) by a fresh mmap and unmap it on free, and give the heap's top back
// above 128 KiB; a training step then page-faults and zeroes its activations anew every
// step, and how much depends on what the heap held before (measured in docs/runtime.md,
// "Host memory"). The settings: blocks up to glibc's largest threshold (32 MiB) come from
// the heap, and the heap is trimmed only above 2 GiB of free top (and by
// release_free_host_memory between runs). A GLIBC_TUNABLES that sets malloc tunables wins.
void keep_freed_host_memory() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
}

class CpuAllocator final : public Allocator {
 public:
  CpuAllocator() { keep_freed_host_memory(); }
  // 64-byte alignment suits AVX-512 loads and oneDNN's preferred alignment. By hand, over
  // malloc: glibc's aligned_alloc asks the heap for the size plus the alignment and gives
  // back the rest, so a freed block is exactly too small for the next request of its size,
  // and a training step's activations took new memory every step (a 4 MiB tensor: 1024
  // page faults per allocation, the heap growing by its size each time).
  void* allocate(int64_t bytes) override {
    const auto rounded = static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
    void* raw = std::malloc(rounded + kAlignment);
    if (raw == nullptr) {
      throw_runtime("out of host memory allocating " + std::to_string(bytes) + " bytes");
    }
    // malloc's blocks are 16-byte aligned: the next 64-byte boundary leaves at least 16
    // bytes before it, where the block's own address is kept for deallocate.
    const auto aligned = (reinterpret_cast<uintptr_t>(raw) + kAlignment) & ~(kAlignment - 1);
    reinterpret_cast<void**>(aligned)[-1] = raw;
    return reinterpret_cast<void*>(aligned);
  }
  void deallocate(void* ptr, int64_t /*bytes*/) override {
    if (ptr != nullptr) std::free(static_cast<void**>(ptr)[-1]);
  }

 private:
  static constexpr uintptr_t kAlignment = 64;
};

CpuAllocator cpu_allocator;
Allocator* allocators[2] = {&cpu_allocator, nullptr};
Allocator* staging_allocator = nullptr;  // pinned host memory, when a device installed one
CopyFunction copy_functions[2] = {nullptr, nullptr};
thread_local bool shapes_only = false;  // ShapesOnlyScope

// Copies between any two devices: memcpy on the host, else the device's copy function.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, int64_t bytes) {
  if (bytes == 0) return;
  if (dst_device == Device::cpu && src_device == Device::cpu) {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return;
  }
  const Device device = dst_device == Device::cpu ? src_device : dst_device;
  CopyFunction copy = copy_functions[static_cast<int>(device)];
  if (copy == nullptr) {
    throw_runtime("no copy function for device " + to_string(device) +
                  " (was interplace built with CUDA, and is a GPU present?)");
  }
  copy(dst, dst_device, src, src_device, bytes);
}

}  // namespace

void release_free_host_memory() {
  malloc_trim(0);
}

std::string to_string(Device device) {
  return device == Device::cpu ? "cpu" : "cuda";
}

std::string to_string(const Shape& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

int64_t numel(const Shape& shape) {
  // Checked: absurd model options (a width multiplier of 1e9) reach here as shapes whose
  // element count wraps around int64 into a small or negative number.
  int64_t n = 1;
  for (int64_t extent : shape) {
    if (__builtin_mul_overflow(n, extent, &n)) {
      throw_invalid("tensor shape " + to_string(shape) + " has more than 2^63 elements");
    }
  }
  return n;
}

ShapesOnlyScope::ShapesOnlyScope() : previous_(shapes_only) {
  shapes_only = true;
}
ShapesOnlyScope::~ShapesOnlyScope() {
  shapes_only = previous_;
}

void set_allocator(Device device, Allocator* allocator) {
  allocators[static_cast<int>(device)] = allocator;
}

void set_copy_function(Device device, CopyFunction copy) {
  copy_functions[static_cast<int>(device)] = copy;
}

void set_host_staging_allocator(Allocator* allocator) {
  staging_allocator = allocator;
}

Allocator& host_staging_allocator() {
  return staging_allocator != nullptr ? *staging_allocator : cpu_allocator;
}

Allocator& allocator_for(Device device) {
  Allocator* allocator = allocators[static_cast<int>(device)];
  if (allocator == nullptr) {
    throw_runtime("no memory allocator for device " + to_string(device) +
                  " (was interplace built with CUDA, and is a GPU present?)");
  }
  return *allocator;
}

// Storage goes back to the allocator it came from (a CPU tensor's may be the staging one).
struct Tensor::Storage {
  Storage(Allocator& a, int64_t n) : allocator(a), bytes(n), ptr(a.allocate(n)) {}
  ~Storage() { allocator.deallocate(ptr, bytes); }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  Allocator& allocator;
  int64_t bytes;
  void* ptr;
};

Tensor::Tensor(Shape shape, Device device)
    : Tensor(std::move(shape), device, allocator_for(device)) {}

Tensor::Tensor(Shape shape, Device device, Allocator& allocator)
    : shape_(std::move(shape)), device_(device) {
  for (int64_t extent : shape_) {
    if (extent < 0) throw_invalid("tensor shape " + to_string(shape_) + " has a negative extent");
  }
  numel_ = kernels::numel(shape_);
  if (numel_ > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(sizeof(float))) {
    throw_invalid("tensor shape " + to_string(shape_) + " is too large to address");
  }
  if (shapes_only) return;
  storage_ = std::make_shared<Storage>(allocator, bytes());
  data_ = static_cast<float*>(storage_->ptr);
}

Tensor Tensor::host_staging(Shape shape) {
  return Tensor(std::move(shape), Device::cpu, host_staging_allocator());
}

Tensor Tensor::zeros(Shape shape, Device device) {
  Tensor t(std::move(shape), device);
  t.fill(0.0f);
  return t;
}

Tensor Tensor::full(Shape shape, float value, Device device) {
  Tensor t(std::move(shape), device);
  t.fill(value);
  return t;
}

Tensor Tensor::from_vector(Shape shape, std::span<const float> values) {
  Tensor t(std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel()) {
    throw_invalid("Tensor::from_vector: " + std::to_string(values.size()) + " values for shape " +
                  to_string(t.shape()));
  }
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

int64_t Tensor::dim(int axis) const {
  const int r = rank();
  const int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) {
    throw_invalid("axis " + std::to_string(axis) + " out of range for shape " + to_string(shape_));
  }
  return shape_[static_cast<size_t>(a)];
}

Tensor Tensor::reshaped(Shape shape) const {
  if (kernels::numel(shape) != numel_) {
    throw_invalid("cannot reshape " + to_string(shape_) + " (" + std::to_string(numel_) +
                  " elements) to " + to_string(shape));
  }
  Tensor view = *this;
  view.shape_ = std::move(shape);
  return view;
}

Tensor Tensor::clone() const {
  Tensor copy(shape_, device_);
  copy_bytes(copy.data_, device_, data_, device_, bytes());
  return copy;
}

Tensor Tensor::to(Device device) const {
  if (device == device_) return *this;
  Tensor moved(shape_, device);
  copy_bytes(moved.data_, device, data_, device_, bytes());
  return moved;
}

void Tensor::require_cpu(const char* what) const {
  if (device_ != Device::cpu) {
    throw_runtime(std::string("Tensor::") + what + " needs a CPU tensor, got " +
                  to_string(device_));
  }
}

void Tensor::fill(float value) {
  if (data_ == nullptr) return;  // empty, or shapes only (ShapesOnlyScope)
  if (device_ == Device::cpu) {
    std::fill(data_, data_ + numel_, value);
  } else {
    backend_for(device_).fill(*this, value);
    backend_for(device_).synchronize();  // done on return, as on the host
  }
}

void Tensor::copy_from(const Tensor& other) {
  check_shape(other, shape_, "Tensor::copy_from source");
  copy_bytes(data_, device_, other.data_, other.device_, bytes());
}

std::vector<float> Tensor::to_vector() const {
  std::vector<float> values(static_cast<size_t>(numel_));
  copy_bytes(values.data(), Device::cpu, data_, device_, bytes());
  return values;
}

float& Tensor::at(int64_t i) {
  require_cpu("at");
  if (i < 0 || i >= numel_) throw_invalid("index " + std::to_string(i) + " out of range");
  return data_[i];
}

float Tensor::at(int64_t i) const {
  return const_cast<Tensor*>(this)->at(i);
}

void check_shape(const Tensor& tensor, const Shape& expected, const std::string& what) {
  if (!tensor.defined() || tensor.shape() != expected) {
    throw_invalid(what + ": expected shape " + to_string(expected) + ", got " +
                  (tensor.defined() ? to_string(tensor.shape()) : std::string("no tensor")));
  }
}

}  // namespace interplace::kernels
