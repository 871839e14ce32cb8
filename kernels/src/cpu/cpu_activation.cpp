// Activations through oneDNN's eltwise primitives, on the flattened tensor. Backward
// takes the forward input, as the Backend interface promises.
#include <string>

#include "cpu_backend.hpp"
#include "cpu_plan.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels::cpu {

namespace {

using dnnl::memory;

struct EltwiseOp {
  dnnl::algorithm algorithm;
  float alpha, beta;
  const char* name;
};

EltwiseOp eltwise_op(Activation a) {
  switch (a) {
    case Activation::relu:
      return {dnnl::algorithm::eltwise_relu, 0.0f, 0.0f, "relu"};
    case Activation::relu6:
      // clip_v2 passes gradient only strictly inside (0, 6), as PyTorch's hardtanh does.
      return {dnnl::algorithm::eltwise_clip_v2, 0.0f, 6.0f, "relu6"};
    case Activation::gelu:
      return {dnnl::algorithm::eltwise_gelu_tanh, 0.0f, 0.0f, "gelu"};
    case Activation::tanh:
      return {dnnl::algorithm::eltwise_tanh, 0.0f, 0.0f, "tanh"};
    case Activation::sigmoid:
      return {dnnl::algorithm::eltwise_logistic, 0.0f, 0.0f, "sigmoid"};
  }
  throw_invalid("activation: unknown kind " + std::to_string(static_cast<int>(a)));
}

dnnl::eltwise_forward::primitive_desc forward_pd(const EltwiseOp& op, int64_t n,
                                                 const dnnl::engine& engine) {
  return {{dnnl::prop_kind::forward_training, op.algorithm, plain_desc({n}), op.alpha, op.beta},
          engine};
}

void check_same_size(const Tensor& a, const Tensor& b, const EltwiseOp& op, const char* what) {
  if (!b.defined() || a.numel() != b.numel() || a.numel() == 0) {
    throw_invalid(std::string("activation ") + op.name + ": " + what + " " +
                  (b.defined() ? to_string(b.shape()) : std::string("(undefined)")) +
                  " must match the non-empty input " + to_string(a.shape()));
  }
}

}  // namespace

void CpuBackend::activation_forward(Activation a, const Tensor& x, Tensor& y) {
  const EltwiseOp op = eltwise_op(a);
  check_same_size(x, y, op, "output");
  const int64_t n = x.numel();
  const std::string key = std::string("eltwise-fwd-") + op.name + ":" + std::to_string(n);
  auto& plan = plans_.get<CachedPrimitive<dnnl::eltwise_forward>>(key, [&] {
    return build_plan(key, [&] {
      CachedPrimitive<dnnl::eltwise_forward> p{dnnl::eltwise_forward(forward_pd(op, n, engine_)),
                                               {}};
      p.add(DNNL_ARG_SRC, plain_desc({n}), engine_);
      p.add(DNNL_ARG_DST, plain_desc({n}), engine_);
      return p;
    });
  });
  plan.point(DNNL_ARG_SRC, x);
  plan.point(DNNL_ARG_DST, y);
  plan.run(stream_);
}

void CpuBackend::activation_backward(Activation a, const Tensor& x, const Tensor& dy, Tensor& dx) {
  const EltwiseOp op = eltwise_op(a);
  check_same_size(x, dy, op, "output gradient");
  check_same_size(x, dx, op, "input gradient");
  const int64_t n = x.numel();
  const std::string key = std::string("eltwise-bwd-") + op.name + ":" + std::to_string(n);
  auto& plan = plans_.get<CachedPrimitive<dnnl::eltwise_backward>>(key, [&] {
    return build_plan(key, [&] {
      const dnnl::eltwise_backward::primitive_desc pd(
          {op.algorithm, plain_desc({n}), plain_desc({n}), op.alpha, op.beta}, engine_,
          forward_pd(op, n, engine_));
      CachedPrimitive<dnnl::eltwise_backward> p{dnnl::eltwise_backward(pd), {}};
      for (int arg : {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC}) {
        p.add(arg, plain_desc({n}), engine_);
      }
      return p;
    });
  });
  plan.point(DNNL_ARG_SRC, x);
  plan.point(DNNL_ARG_DIFF_DST, dy);
  plan.point(DNNL_ARG_DIFF_SRC, dx);
  plan.run(stream_);
}

}  // namespace interplace::kernels::cpu
