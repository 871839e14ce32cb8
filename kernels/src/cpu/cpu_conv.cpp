// Convolutions through oneDNN. Per geometry and direction we build once the primitive and
// the reorders between the caller's plain NCHW / (G)OIHW tensors and the layouts oneDNN
// picks for itself (format_tag::any: nChw8c activations, OIhw8i8o weights on AVX2);
// a call then only re-points cached memory objects and runs the kernels.
#include <string>

#include "cpu_backend.hpp"
#include "cpu_plan.hpp"
#include "cpu_staging.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels::cpu {

namespace {

using dnnl::memory;
using Slot = StagingArena::Slot;

// Plain NCHW runs as im2col + GEMM (x64:gemm:jit), blocked layouts as direct jit kernels
// with reorders to and from NCHW around them. An ungrouped 1x1 convolution is a plain
// GEMM without im2col (strided: a cheap subsampling copy), and with a single input
// channel the blocked kernels' backward passes are slow: there plain beats blocked plus
// reorders by 1.4-1.9x. Everywhere else (3x3, grouped, depthwise, few channels) blocked
// wins by 1.3-5x. Measured on AVX2 with oneDNN 2.6, resnet20 and resnet50 shapes.
bool prefers_blocked(const Conv2dGeometry& g) {
  return !(g.groups == 1 && (g.kernel_h * g.kernel_w == 1 || g.in_channels == 1));
}

struct ConvDescs {
  memory::desc src_plain, weights_plain, dst_plain, bias;
  memory::desc src, weights, dst;  // what the primitive descriptors are asked for
  memory::dims strides, padding;
};

ConvDescs describe(const Conv2dGeometry& g) {
  ConvDescs d;
  const memory::dims weights_dims =
      g.groups == 1 ? memory::dims{g.out_channels, g.in_channels, g.kernel_h, g.kernel_w}
                    : memory::dims{g.groups, g.out_channels / g.groups, g.in_channels / g.groups,
                                   g.kernel_h, g.kernel_w};
  d.src_plain = plain_desc({g.batch, g.in_channels, g.in_height, g.in_width});
  d.weights_plain = plain_desc(weights_dims);
  d.dst_plain = plain_desc({g.batch, g.out_channels, g.out_height(), g.out_width()});
  d.bias = plain_desc({g.out_channels});
  if (prefers_blocked(g)) {
    const auto any = [](const memory::desc& plain) {
      return memory::desc(plain.dims(), memory::data_type::f32, memory::format_tag::any);
    };
    d.src = any(d.src_plain);
    d.weights = any(d.weights_plain);
    d.dst = any(d.dst_plain);
  } else {
    d.src = d.src_plain;
    d.weights = d.weights_plain;
    d.dst = d.dst_plain;
  }
  d.strides = {g.stride, g.stride};
  // Symmetric padding per axis: oneDNN's output-size rule then equals ours (floor division).
  d.padding = {g.padding_h, g.padding_w};
  return d;
}

dnnl::convolution_forward::primitive_desc forward_pd(const ConvDescs& d, bool with_bias,
                                                     const dnnl::engine& engine) {
  const auto kind = dnnl::prop_kind::forward_training;
  const auto algo = dnnl::algorithm::convolution_direct;
  if (with_bias) {
    return {{kind, algo, d.src, d.weights, d.bias, d.dst, d.strides, d.padding, d.padding}, engine};
  }
  return {{kind, algo, d.src, d.weights, d.dst, d.strides, d.padding, d.padding}, engine};
}

struct ForwardPlan {
  dnnl::convolution_forward primitive;
  StagedOperand src, weights, dst;
  memory bias;
  std::unordered_map<int, memory> args;
};

struct BackwardDataPlan {
  dnnl::convolution_backward_data primitive;
  StagedOperand diff_dst, weights, diff_src;
  std::unordered_map<int, memory> args;
};

struct BackwardWeightsPlan {
  dnnl::convolution_backward_weights primitive;
  StagedOperand src, diff_dst, diff_weights;
  memory diff_bias;
  std::unordered_map<int, memory> args;
};

void check_geometry(const Conv2dGeometry& g) {
  if (g.batch < 1 || g.in_channels < 1 || g.in_height < 1 || g.in_width < 1 || g.out_channels < 1 ||
      g.kernel_h < 1 || g.kernel_w < 1 || g.stride < 1 || g.padding_h < 0 || g.padding_w < 0 ||
      g.groups < 1 || g.in_channels % g.groups != 0 || g.out_channels % g.groups != 0 ||
      g.in_height + 2 * g.padding_h < g.kernel_h || g.in_width + 2 * g.padding_w < g.kernel_w) {
    throw_invalid("conv2d: invalid geometry " + g.key() +
                  " (extents, kernel, stride and groups must be positive, padding non-negative, "
                  "groups must divide both channel counts and the kernel fit the padded input)");
  }
}

void check_size(const Tensor& t, int64_t expected, const char* what, const Conv2dGeometry& g) {
  if (t.numel() != expected) {
    throw_invalid(std::string("conv2d ") + g.key() + ": " + what + " " + to_string(t.shape()) +
                  " has " + std::to_string(t.numel()) + " elements, expected " +
                  std::to_string(expected));
  }
}

int64_t input_size(const Conv2dGeometry& g) {
  return g.batch * g.in_channels * g.in_height * g.in_width;
}
int64_t weights_size(const Conv2dGeometry& g) {
  return g.out_channels * (g.in_channels / g.groups) * g.kernel_h * g.kernel_w;
}
int64_t output_size(const Conv2dGeometry& g) {
  return g.batch * g.out_channels * g.out_height() * g.out_width();
}

}  // namespace

void CpuBackend::conv2d_forward(const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
                                const Tensor& bias, Tensor& y) {
  check_geometry(g);
  check_size(x, input_size(g), "input", g);
  check_size(w, weights_size(g), "weight", g);
  check_size(y, output_size(g), "output", g);
  const bool with_bias = bias.defined();
  if (with_bias) check_size(bias, g.out_channels, "bias", g);

  ForwardPlan& plan = plans_.get<ForwardPlan>("fwd-" + g.key() + (with_bias ? "+bias" : ""), [&] {
    return build_plan("conv2d forward " + g.key(), [&] {
      const ConvDescs d = describe(g);
      const auto pd = forward_pd(d, with_bias, engine_);
      ForwardPlan p;
      p.primitive = dnnl::convolution_forward(pd);
      p.src = StagedOperand(engine_, d.src_plain, pd.src_desc(), true, Slot::kInput);
      p.weights = StagedOperand(engine_, d.weights_plain, pd.weights_desc(), true, Slot::kWeights);
      p.dst = StagedOperand(engine_, d.dst_plain, pd.dst_desc(), false, Slot::kOutput);
      p.args = {{DNNL_ARG_SRC, p.src.inner()},
                {DNNL_ARG_WEIGHTS, p.weights.inner()},
                {DNNL_ARG_DST, p.dst.inner()}};
      if (with_bias) {
        p.bias = memory(d.bias, engine_, DNNL_MEMORY_NONE);
        p.args.emplace(DNNL_ARG_BIAS, p.bias);
      }
      return p;
    });
  });
  StagingArena& arena = staging_arena(*this);
  plan.src.load(x.data(), arena, stream_);
  plan.weights.load(w.data(), arena, stream_);
  if (with_bias) plan.bias.set_data_handle(const_cast<float*>(bias.data()));
  plan.dst.bind(y.data(), arena);
  plan.primitive.execute(stream_, plan.args);
  plan.dst.store(stream_);
  stream_.wait();
}

void CpuBackend::conv2d_backward_data(const Conv2dGeometry& g, const Tensor& dy, const Tensor& w,
                                      Tensor& dx) {
  check_geometry(g);
  check_size(dy, output_size(g), "output gradient", g);
  check_size(w, weights_size(g), "weight", g);
  check_size(dx, input_size(g), "input gradient", g);

  BackwardDataPlan& plan = plans_.get<BackwardDataPlan>("bwd-data-" + g.key(), [&] {
    return build_plan("conv2d backward-data " + g.key(), [&] {
      const ConvDescs d = describe(g);
      const dnnl::convolution_backward_data::primitive_desc pd(
          {dnnl::algorithm::convolution_direct, d.src, d.weights, d.dst, d.strides, d.padding,
           d.padding},
          engine_, forward_pd(d, false, engine_));
      BackwardDataPlan p;
      p.primitive = dnnl::convolution_backward_data(pd);
      p.diff_dst = StagedOperand(engine_, d.dst_plain, pd.diff_dst_desc(), true, Slot::kOutput);
      p.weights = StagedOperand(engine_, d.weights_plain, pd.weights_desc(), true, Slot::kWeights);
      p.diff_src = StagedOperand(engine_, d.src_plain, pd.diff_src_desc(), false, Slot::kInput);
      p.args = {{DNNL_ARG_DIFF_DST, p.diff_dst.inner()},
                {DNNL_ARG_WEIGHTS, p.weights.inner()},
                {DNNL_ARG_DIFF_SRC, p.diff_src.inner()}};
      return p;
    });
  });
  StagingArena& arena = staging_arena(*this);
  plan.diff_dst.load(dy.data(), arena, stream_);
  plan.weights.load(w.data(), arena, stream_);
  plan.diff_src.bind(dx.data(), arena);
  plan.primitive.execute(stream_, plan.args);
  plan.diff_src.store(stream_);
  stream_.wait();
}

void CpuBackend::conv2d_backward_weights(const Conv2dGeometry& g, const Tensor& x, const Tensor& dy,
                                         Tensor& dw, Tensor& dbias) {
  check_geometry(g);
  check_size(x, input_size(g), "input", g);
  check_size(dy, output_size(g), "output gradient", g);
  check_size(dw, weights_size(g), "weight gradient", g);
  const bool with_bias = dbias.defined();
  if (with_bias) check_size(dbias, g.out_channels, "bias gradient", g);

  BackwardWeightsPlan& plan =
      plans_.get<BackwardWeightsPlan>("bwd-weights-" + g.key() + (with_bias ? "+bias" : ""), [&] {
        return build_plan("conv2d backward-weights " + g.key(), [&] {
          const ConvDescs d = describe(g);
          const auto algo = dnnl::algorithm::convolution_direct;
          using Desc = dnnl::convolution_backward_weights::desc;
          const Desc desc =
              with_bias
                  ? Desc(algo, d.src, d.weights, d.bias, d.dst, d.strides, d.padding, d.padding)
                  : Desc(algo, d.src, d.weights, d.dst, d.strides, d.padding, d.padding);
          const dnnl::convolution_backward_weights::primitive_desc pd(
              desc, engine_, forward_pd(d, with_bias, engine_));
          BackwardWeightsPlan p;
          p.primitive = dnnl::convolution_backward_weights(pd);
          p.src = StagedOperand(engine_, d.src_plain, pd.src_desc(), true, Slot::kInput);
          p.diff_dst = StagedOperand(engine_, d.dst_plain, pd.diff_dst_desc(), true, Slot::kOutput);
          p.diff_weights = StagedOperand(engine_, d.weights_plain, pd.diff_weights_desc(), false,
                                         Slot::kWeights);
          p.args = {{DNNL_ARG_SRC, p.src.inner()},
                    {DNNL_ARG_DIFF_DST, p.diff_dst.inner()},
                    {DNNL_ARG_DIFF_WEIGHTS, p.diff_weights.inner()}};
          if (with_bias) {
            p.diff_bias = memory(d.bias, engine_, DNNL_MEMORY_NONE);
            p.args.emplace(DNNL_ARG_DIFF_BIAS, p.diff_bias);
          }
          return p;
        });
      });
  StagingArena& arena = staging_arena(*this);
  plan.src.load(x.data(), arena, stream_);
  plan.diff_dst.load(dy.data(), arena, stream_);
  plan.diff_weights.bind(dw.data(), arena);
  if (with_bias) plan.diff_bias.set_data_handle(dbias.data());
  plan.primitive.execute(stream_, plan.args);
  plan.diff_weights.store(stream_);
  stream_.wait();
}

}  // namespace interplace::kernels::cpu
