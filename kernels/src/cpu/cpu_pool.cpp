// 2-D max and average pooling through oneDNN on plain NCHW tensors. Max pooling keeps
// oneDNN's arg-max workspace in the caller's `workspace` tensor, so that backward needs
// no state in the backend and several forward calls can be in flight at once.
#include <string>

#include "cpu_backend.hpp"
#include "cpu_plan.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels::cpu {

namespace {

using dnnl::memory;
using PoolForward = dnnl::pooling_forward;
using PoolBackward = dnnl::pooling_backward;

void check_geometry(const Pool2dGeometry& g) {
  if (g.batch < 1 || g.channels < 1 || g.in_height < 1 || g.in_width < 1 || g.kernel < 1 ||
      g.stride < 1 || g.padding < 0 || 2 * g.padding > g.kernel ||
      g.in_height + 2 * g.padding < g.kernel || g.in_width + 2 * g.padding < g.kernel) {
    throw_invalid("pool2d: invalid geometry " + g.key() +
                  " (extents, kernel and stride must be positive, padding in [0, kernel/2] and "
                  "the kernel must fit the padded input)");
  }
}

void check_size(const Tensor& t, const memory::dims& dims, const char* what,
                const Pool2dGeometry& g) {
  const int64_t expected = dims[0] * dims[1] * dims[2] * dims[3];
  if (t.numel() != expected) {
    throw_invalid("pool2d " + g.key() + ": " + what + " " + to_string(t.shape()) + " has " +
                  std::to_string(t.numel()) + " elements, expected " + std::to_string(expected));
  }
}

memory::dims src_dims(const Pool2dGeometry& g) {
  return {g.batch, g.channels, g.in_height, g.in_width};
}
memory::dims dst_dims(const Pool2dGeometry& g) {
  return {g.batch, g.channels, g.out_height(), g.out_width()};
}

dnnl::algorithm algorithm(const Pool2dGeometry& g) {
  if (g.kind == PoolKind::max) return dnnl::algorithm::pooling_max;
  return g.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                             : dnnl::algorithm::pooling_avg_exclude_padding;
}

PoolForward::primitive_desc forward_pd(const Pool2dGeometry& g, const dnnl::engine& engine) {
  const memory::dims strides = {g.stride, g.stride}, kernel = {g.kernel, g.kernel},
                     padding = {g.padding, g.padding};
  return {{dnnl::prop_kind::forward_training, algorithm(g), plain_desc(src_dims(g)),
           plain_desc(dst_dims(g)), strides, kernel, padding, padding},
          engine};
}

struct ForwardPlan {
  CachedPrimitive<PoolForward> run;
  int64_t workspace_floats = 0;  // 0: no workspace (average pooling)
};

}  // namespace

void CpuBackend::pool2d_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y,
                                Tensor& workspace) {
  check_geometry(g);
  check_size(x, src_dims(g), "input", g);
  check_size(y, dst_dims(g), "output", g);
  ForwardPlan& plan = plans_.get<ForwardPlan>("fwd-" + g.key(), [&] {
    return build_plan("pool2d forward " + g.key(), [&] {
      const auto pd = forward_pd(g, engine_);
      ForwardPlan p{{PoolForward(pd), {}}, 0};
      p.run.add(DNNL_ARG_SRC, pd.src_desc(), engine_);
      p.run.add(DNNL_ARG_DST, pd.dst_desc(), engine_);
      if (g.kind == PoolKind::max) {
        const size_t bytes = pd.workspace_desc().get_size();
        p.workspace_floats = static_cast<int64_t>((bytes + sizeof(float) - 1) / sizeof(float));
        p.run.add(DNNL_ARG_WORKSPACE, pd.workspace_desc(), engine_);
      }
      return p;
    });
  });
  if (plan.workspace_floats > 0) {
    if (!workspace.defined() || workspace.numel() != plan.workspace_floats ||
        workspace.device() != Device::cpu) {
      workspace = Tensor({plan.workspace_floats});
    }
    plan.run.point(DNNL_ARG_WORKSPACE, workspace);
  }
  plan.run.point(DNNL_ARG_SRC, x);
  plan.run.point(DNNL_ARG_DST, y);
  plan.run.run(stream_);
}

void CpuBackend::pool2d_backward(const Pool2dGeometry& g, const Tensor& dy, const Tensor& workspace,
                                 Tensor& dx) {
  check_geometry(g);
  check_size(dy, dst_dims(g), "output gradient", g);
  check_size(dx, src_dims(g), "input gradient", g);
  auto& plan = plans_.get<CachedPrimitive<PoolBackward>>("bwd-" + g.key(), [&] {
    return build_plan("pool2d backward " + g.key(), [&] {
      const auto hint = forward_pd(g, engine_);
      const PoolBackward::primitive_desc pd({algorithm(g),
                                             plain_desc(src_dims(g)),
                                             plain_desc(dst_dims(g)),
                                             {g.stride, g.stride},
                                             {g.kernel, g.kernel},
                                             {g.padding, g.padding},
                                             {g.padding, g.padding}},
                                            engine_, hint);
      CachedPrimitive<PoolBackward> p{PoolBackward(pd), {}};
      p.add(DNNL_ARG_DIFF_DST, pd.diff_dst_desc(), engine_);
      p.add(DNNL_ARG_DIFF_SRC, pd.diff_src_desc(), engine_);
      if (g.kind == PoolKind::max) p.add(DNNL_ARG_WORKSPACE, pd.workspace_desc(), engine_);
      return p;
    });
  });
  if (g.kind == PoolKind::max) {
    const size_t needed = plan.args.at(DNNL_ARG_WORKSPACE).get_desc().get_size();
    if (!workspace.defined() || static_cast<size_t>(workspace.bytes()) < needed) {
      throw_invalid("pool2d backward " + g.key() +
                    ": the workspace from the matching forward call is missing or too small");
    }
    plan.point(DNNL_ARG_WORKSPACE, workspace);
  }
  plan.point(DNNL_ARG_DIFF_DST, dy);
  plan.point(DNNL_ARG_DIFF_SRC, dx);
  plan.run(stream_);
}

}  // namespace interplace::kernels::cpu
