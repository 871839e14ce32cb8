// Small pieces shared by the cached oneDNN plans of the CPU backend.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/tensor.hpp"

namespace interplace::kernels::cpu {

// A primitive with one cached memory object per argument (plain layouts); a call only
// re-points the memory objects at its tensors, so nothing is allocated per call.
template <class Primitive>
struct CachedPrimitive {
  Primitive primitive;
  std::unordered_map<int, dnnl::memory> args;

  void add(int arg, const dnnl::memory::desc& desc, const dnnl::engine& engine) {
    args.emplace(arg, dnnl::memory(desc, engine, DNNL_MEMORY_NONE));
  }
  // oneDNN only reads inputs; its API takes non-const handles.
  void point(int arg, const Tensor& t) {
    args.at(arg).set_data_handle(const_cast<float*>(t.data()));
  }
  void run(dnnl::stream& stream) {
    primitive.execute(stream, args);
    stream.wait();
  }
};

// Runs `make` (which builds oneDNN objects) and reports oneDNN's failures as ours,
// naming what was being built.
template <class Make>
auto build_plan(const std::string& what, Make&& make) {
  try {
    return make();
  } catch (const dnnl::error& e) {
    throw_runtime(what + ": oneDNN: " + e.what());
  }
}

}  // namespace interplace::kernels::cpu
