// TEMPORARY scaffolding: owned by the conv/batch-norm/pooling/activation work; each
// function moves to its own cpu_*.cpp file and this file is deleted.
#include "cpu_backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels::cpu {
#define PENDING throw_runtime(std::string(__func__) + " is not implemented yet")
void CpuBackend::conv2d_forward(const Conv2dGeometry&, const Tensor&, const Tensor&,
                                const Tensor&, Tensor&) { PENDING; }
void CpuBackend::conv2d_backward_data(const Conv2dGeometry&, const Tensor&, const Tensor&,
                                      Tensor&) { PENDING; }
void CpuBackend::conv2d_backward_weights(const Conv2dGeometry&, const Tensor&, const Tensor&,
                                         Tensor&, Tensor&) { PENDING; }
void CpuBackend::batch_norm_forward_training(const Tensor&, const Tensor&, const Tensor&, float,
                                             Tensor&, Tensor&, Tensor&) { PENDING; }
void CpuBackend::batch_norm_forward_inference(const Tensor&, const Tensor&, const Tensor&,
                                              const Tensor&, const Tensor&, float, Tensor&) { PENDING; }
void CpuBackend::batch_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                     const Tensor&, float, Tensor&, Tensor&, Tensor&) { PENDING; }
void CpuBackend::pool2d_forward(const Pool2dGeometry&, const Tensor&, Tensor&, Tensor&) { PENDING; }
void CpuBackend::pool2d_backward(const Pool2dGeometry&, const Tensor&, const Tensor&, Tensor&) { PENDING; }
void CpuBackend::activation_forward(Activation, const Tensor&, Tensor&) { PENDING; }
void CpuBackend::activation_backward(Activation, const Tensor&, const Tensor&, Tensor&) { PENDING; }
}  // namespace interplace::kernels::cpu
