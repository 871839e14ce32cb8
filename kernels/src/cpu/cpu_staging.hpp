// Moving tensors between the caller's plain layout and the layout a oneDNN primitive
// prefers (blocked, e.g. nChw8c). Everything here is built once per plan; a call only
// points the cached memory objects at its tensors and runs the cached reorders.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "cpu_backend.hpp"

namespace interplace::kernels::cpu {

// Scratch buffers for blocked copies, one per slot, shared by every plan that stages
// through them: memory grows with the largest layer, not with the number of layers.
// A primitive call uses each slot at most once and holds nothing between calls.
class StagingArena {
 public:
  enum Slot { kInput, kWeights, kOutput, kSlotCount };
  void* reserve(Slot slot, size_t bytes);

 private:
  Tensor buffers_[kSlotCount];
};

// The arena of a backend (kept in its plan cache).
StagingArena& staging_arena(CpuBackend& backend);

// One tensor argument of a primitive: a plain view of the caller's tensor and, when the
// primitive wants another layout, a scratch copy in that layout and the reorder between
// the two (plain -> inner for inputs, inner -> plain for outputs).
class StagedOperand {
 public:
  StagedOperand() = default;
  StagedOperand(const dnnl::engine& engine, const dnnl::memory::desc& plain,
                const dnnl::memory::desc& wanted, bool is_input, StagingArena::Slot slot);

  // What the primitive is given as its argument.
  const dnnl::memory& inner() const { return inner_; }
  bool reordered() const { return reordered_; }

  // Inputs: points the operand at `data` and converts it when needed.
  void load(const float* data, StagingArena& arena, dnnl::stream& stream);
  // Outputs: points the operand at `data`; `store` converts the result into it afterwards.
  void bind(float* data, StagingArena& arena);
  void store(dnnl::stream& stream);

 private:
  dnnl::memory user_, inner_;
  dnnl::reorder convert_;
  std::unordered_map<int, dnnl::memory> convert_args_;
  StagingArena::Slot slot_ = StagingArena::kInput;
  bool reordered_ = false;
};

}  // namespace interplace::kernels::cpu
