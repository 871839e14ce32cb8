// Batched matrix products through oneDNN's matmul primitive. Transposition is expressed
// through strides, so no operand is ever copied.
#include "cpu_backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels::cpu {

namespace {

struct MatmulPlan {
  dnnl::memory::desc a, b, c;
  dnnl::matmul primitive;
};

dnnl::memory::desc operand_desc(int64_t batch, int64_t rows, int64_t cols, bool transposed) {
  // Logical [batch, rows, cols]; stored as [batch, cols, rows] when transposed.
  const dnnl::memory::dims dims = {batch, rows, cols};
  const dnnl::memory::dims strides = transposed ? dnnl::memory::dims{rows * cols, 1, rows}
                                                : dnnl::memory::dims{rows * cols, cols, 1};
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

}  // namespace

void CpuBackend::matmul(const MatmulGeometry& g, const Tensor& a, const Tensor& b, Tensor& c) {
  if (g.batch < 1 || g.m < 1 || g.n < 1 || g.k < 1) {
    throw_invalid("matmul: extents must be positive, got " + g.key());
  }
  if (a.numel() != g.batch * g.m * g.k || b.numel() != g.batch * g.k * g.n ||
      c.numel() != g.batch * g.m * g.n) {
    throw_invalid("matmul " + g.key() + ": operand sizes " + to_string(a.shape()) + ", " +
                  to_string(b.shape()) + ", " + to_string(c.shape()) + " do not match");
  }
  if (g.beta != 0.0f && g.beta != 1.0f) throw_invalid("matmul: beta must be 0 or 1");
  MatmulPlan& plan = plans_.get<MatmulPlan>(g.key(), [&] {
    MatmulPlan p;
    p.a = operand_desc(g.batch, g.m, g.k, g.transpose_a);
    p.b = operand_desc(g.batch, g.k, g.n, g.transpose_b);
    p.c = operand_desc(g.batch, g.m, g.n, false);
    dnnl::primitive_attr attr;
    if (g.alpha != 1.0f) attr.set_output_scales(0, {g.alpha});
    if (g.beta == 1.0f) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    p.primitive = dnnl::matmul(
        dnnl::matmul::primitive_desc(dnnl::matmul::desc(p.a, p.b, p.c), attr, engine_));
    return p;
  });
  plan.primitive.execute(stream_, {{DNNL_ARG_SRC, wrap(plan.a, a)},
                                   {DNNL_ARG_WEIGHTS, wrap(plan.b, b)},
                                   {DNNL_ARG_DST, wrap(plan.c, c)}});
  stream_.wait();
}

}  // namespace interplace::kernels::cpu
