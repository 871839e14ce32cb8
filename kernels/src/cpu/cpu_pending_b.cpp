// TEMPORARY scaffolding: owned by the layer-norm/softmax/loss/embedding/dropout work; each
// function moves to its own cpu_*.cpp file and this file is deleted.
#include "cpu_backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels::cpu {
#define PENDING throw_runtime(std::string(__func__) + " is not implemented yet")
void CpuBackend::layer_norm_forward(const Tensor&, const Tensor&, const Tensor&, float, Tensor&,
                                    Tensor&, Tensor&) { PENDING; }
void CpuBackend::layer_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                     const Tensor&, float, Tensor&, Tensor&, Tensor&) { PENDING; }
void CpuBackend::softmax_forward(const Tensor&, bool, Tensor&) { PENDING; }
void CpuBackend::softmax_backward(const Tensor&, const Tensor&, Tensor&) { PENDING; }
Backend::LossResult CpuBackend::softmax_cross_entropy_forward(const Tensor&, const Tensor&,
                                                              Tensor&) { PENDING; }
void CpuBackend::softmax_cross_entropy_backward(const Tensor&, const Tensor&, float, Tensor&) { PENDING; }
void CpuBackend::embedding_forward(const Tensor&, const Tensor&, const Tensor&, Tensor&) { PENDING; }
void CpuBackend::embedding_backward(const Tensor&, const Tensor&, Tensor&, Tensor&) { PENDING; }
void CpuBackend::dropout_mask(uint64_t, float, Tensor&) { PENDING; }
}  // namespace interplace::kernels::cpu
