#include "cpu_staging.hpp"

namespace interplace::kernels::cpu {

void* StagingArena::reserve(Slot slot, size_t bytes) {
  Tensor& buffer = buffers_[slot];
  if (!buffer.defined() || static_cast<size_t>(buffer.bytes()) < bytes) {
    const auto floats = static_cast<int64_t>((bytes + sizeof(float) - 1) / sizeof(float));
    buffer = Tensor({floats});
  }
  return buffer.data();
}

StagingArena& staging_arena(CpuBackend& backend) {
  return backend.plans().get<StagingArena>("staging-arena", [] { return StagingArena(); });
}

StagedOperand::StagedOperand(const dnnl::engine& engine, const dnnl::memory::desc& plain,
                             const dnnl::memory::desc& wanted, bool is_input,
                             StagingArena::Slot slot)
    : user_(plain, engine, DNNL_MEMORY_NONE), slot_(slot) {
  if (wanted == plain) {
    inner_ = user_;
    return;
  }
  reordered_ = true;
  inner_ = dnnl::memory(wanted, engine, DNNL_MEMORY_NONE);
  const dnnl::memory& from = is_input ? user_ : inner_;
  const dnnl::memory& to = is_input ? inner_ : user_;
  convert_ = dnnl::reorder(from, to);
  convert_args_ = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
}

void StagedOperand::load(const float* data, StagingArena& arena, dnnl::stream& stream) {
  // oneDNN only reads inputs; its API takes non-const handles.
  bind(const_cast<float*>(data), arena);
  if (reordered_) convert_.execute(stream, convert_args_);
}

void StagedOperand::bind(float* data, StagingArena& arena) {
  user_.set_data_handle(data);
  if (reordered_) inner_.set_data_handle(arena.reserve(slot_, inner_.get_desc().get_size()));
}

void StagedOperand::store(dnnl::stream& stream) {
  if (reordered_) convert_.execute(stream, convert_args_);
}

}  // namespace interplace::kernels::cpu
