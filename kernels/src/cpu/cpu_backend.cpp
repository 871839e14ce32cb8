#include "cpu_backend.hpp"

#include <omp.h>

#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

Backend& cpu_backend_instance() {
  static cpu::CpuBackend backend;
  return backend;
}

void set_cpu_threads(int threads) {
  if (threads < 1) throw_invalid("thread count must be >= 1, got " + std::to_string(threads));
  omp_set_num_threads(threads);
}

int cpu_threads() {
  return omp_get_max_threads();
}

namespace cpu {

CpuBackend::CpuBackend() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

std::string CpuBackend::name() const {
  const dnnl_version_t* v = dnnl_version();
  return "cpu (oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + ", " + std::to_string(cpu_threads()) + " threads)";
}

dnnl::memory CpuBackend::wrap(const dnnl::memory::desc& desc, const Tensor& t) const {
  return dnnl::memory(desc, engine_, const_cast<float*>(t.data()));
}

dnnl::memory CpuBackend::wrap(const dnnl::memory::desc& desc, void* ptr) const {
  return dnnl::memory(desc, engine_, ptr);
}

dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

}  // namespace cpu
}  // namespace interplace::kernels
