// Convolutions through cuDNN's descriptor API (cudnnConvolutionForward and its two
// backward calls), grouped and depthwise included. Per geometry and direction a plan holds
// the descriptors and the algorithm chosen once (the plan is cached by geometry, direction
// and TF32): cudnnFind ranks the usable algorithms (workspace fits, no TF32 unless on),
// then the fastest kRetimed of its list are run again kRetimeRuns times each after a
// warm-up and the one with the smallest median wins. cudnnFind times each algorithm once,
// and at resnet20's sizes that single timing is noise: it picks slower kernels than
// PyTorch's benchmark mode does (measured in results/gpu-h200-2026-11-29). The workspace
// itself is
// the backend's shared scratch buffer.
//
// cuDNN 9 marks this API deprecated in favour of the graph API, which would need several
// times the code for the same three calls; it is still complete and documented in 9.x,
// so its deprecation warnings are silenced in this file only.
#include <algorithm>
#include <climits>
#include <vector>

#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "cuda_validate.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace interplace::kernels::cuda {

struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int algorithm = 0;  // a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t, by direction
  size_t workspace_bytes = 0;

  ConvPlan() = default;
  ConvPlan(const ConvPlan&) = delete;
  ConvPlan& operator=(const ConvPlan&) = delete;
  ~ConvPlan() {
    if (x != nullptr) cudnnDestroyTensorDescriptor(x);
    if (y != nullptr) cudnnDestroyTensorDescriptor(y);
    if (bias != nullptr) cudnnDestroyTensorDescriptor(bias);
    if (w != nullptr) cudnnDestroyFilterDescriptor(w);
    if (conv != nullptr) cudnnDestroyConvolutionDescriptor(conv);
  }
};

void ConvPlanDeleter::operator()(ConvPlan* plan) const {
  delete plan;
}

namespace {

const float kOne = 1.0f, kZero = 0.0f;

void check_geometry(const Conv2dGeometry& g) {
  if (g.batch < 1 || g.in_channels < 1 || g.in_height < 1 || g.in_width < 1 || g.out_channels < 1 ||
      g.kernel_h < 1 || g.kernel_w < 1 || g.stride < 1 || g.padding_h < 0 || g.padding_w < 0 ||
      g.groups < 1 || g.in_channels % g.groups != 0 || g.out_channels % g.groups != 0 ||
      g.in_height + 2 * g.padding_h < g.kernel_h || g.in_width + 2 * g.padding_w < g.kernel_w) {
    throw_invalid("conv2d: invalid geometry " + g.key() +
                  " (extents, kernel, stride and groups must be positive, padding non-negative, "
                  "groups must divide both channel counts and the kernel fit the padded input)");
  }
  for (int64_t extent : {g.batch, g.in_channels, g.in_height, g.in_width, g.out_channels,
                         g.padding_h, g.padding_w, g.stride}) {
    if (extent > INT_MAX) throw_invalid("conv2d " + g.key() + ": extents exceed cuDNN's int range");
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

int to_int(int64_t v) {
  return static_cast<int>(v);
}

void tensor_desc(cudnnTensorDescriptor_t& desc, int64_t n, int64_t c, int64_t h, int64_t w) {
  INTERPLACE_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc));
  INTERPLACE_CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                    to_int(n), to_int(c), to_int(h), to_int(w)));
}

void describe(const Conv2dGeometry& g, bool tf32, ConvPlan& p) {
  tensor_desc(p.x, g.batch, g.in_channels, g.in_height, g.in_width);
  tensor_desc(p.y, g.batch, g.out_channels, g.out_height(), g.out_width());
  tensor_desc(p.bias, 1, g.out_channels, 1, 1);
  INTERPLACE_CUDNN_CHECK(cudnnCreateFilterDescriptor(&p.w));
  INTERPLACE_CUDNN_CHECK(cudnnSetFilter4dDescriptor(
      p.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, to_int(g.out_channels),
      to_int(g.in_channels / g.groups), to_int(g.kernel_h), to_int(g.kernel_w)));
  INTERPLACE_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&p.conv));
  // Cross-correlation (no kernel flip), as PyTorch and oneDNN; fp32 accumulation.
  INTERPLACE_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      p.conv, to_int(g.padding_h), to_int(g.padding_w), to_int(g.stride), to_int(g.stride), 1, 1,
      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  INTERPLACE_CUDNN_CHECK(cudnnSetConvolutionGroupCount(p.conv, to_int(g.groups)));
  // FMA math keeps tensor cores (and so TF32) out; default math allows TF32 on sm_80+.
  INTERPLACE_CUDNN_CHECK(
      cudnnSetConvolutionMathType(p.conv, tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  int n = 0, c = 0, h = 0, w = 0;
  INTERPLACE_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(p.conv, p.x, p.w, &n, &c, &h, &w));
  if (n != g.batch || c != g.out_channels || h != g.out_height() || w != g.out_width()) {
    throw_runtime("conv2d " + g.key() + ": cuDNN computes an output of " + std::to_string(n) + "x" +
                  std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w) +
                  ", which differs from ours");
  }
}

// The most scratch memory an algorithm may take: a quarter of what is free, at most 1 GiB.
size_t workspace_limit() {
  size_t free_bytes = 0, total_bytes = 0;
  INTERPLACE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return std::min<size_t>(free_bytes / 4, size_t{1} << 30);
}

// An algorithm may run if cuDNN supports it here, its workspace fits, and it does not use
// TF32 unless TF32 is on.
template <class Perf>
bool usable(const Perf& perf, bool tf32, size_t workspace_bytes) {
  return perf.status == CUDNN_STATUS_SUCCESS && perf.memory <= workspace_bytes &&
         (tf32 || perf.mathType == CUDNN_FMA_MATH);
}

// From the heuristic list (Get), the workspace that lets every usable algorithm be timed.
template <class Perf>
size_t workspace_for(const std::vector<Perf>& perfs, int count, bool tf32) {
  const size_t limit = workspace_limit();
  size_t needed = 0;
  for (int i = 0; i < count; ++i) {
    if (usable(perfs[static_cast<size_t>(i)], tf32, limit)) {
      needed = std::max(needed, perfs[static_cast<size_t>(i)].memory);
    }
  }
  return needed;
}

constexpr int kRetimed = 3;     // candidates from the top of cudnnFind's list
constexpr int kRetimeRuns = 5;  // timed runs of each, after one warm-up

// An algorithm with the math type cuDNN timed it with (it picks kernels by both).
struct Candidate {
  int algorithm;
  cudnnMathType_t math;
  size_t memory;
};

// The usable entries of Find's results, which come fastest first, at most kRetimed.
template <class Perf>
std::vector<Candidate> candidates(const std::vector<Perf>& perfs, int count, bool tf32,
                                  size_t workspace_bytes, const std::string& what) {
  std::vector<Candidate> found;
  for (int i = 0; i < count && static_cast<int>(found.size()) < kRetimed; ++i) {
    const Perf& perf = perfs[static_cast<size_t>(i)];
    if (usable(perf, tf32, workspace_bytes)) {
      found.push_back({static_cast<int>(perf.algo), perf.mathType, perf.memory});
    }
  }
  if (found.empty()) {
    throw_runtime(what + ": cuDNN offers no usable algorithm (of " + std::to_string(count) +
                  " tried" + (tf32 ? ")" : ", TF32 off)"));
  }
  return found;
}

// Median milliseconds of run(candidate) over kRetimeRuns runs on the stream, after a
// warm-up; run launches one convolution with the plan set to that candidate.
template <class Run>
float median_ms(cudaStream_t stream, const Candidate& c, Run run) {
  cudaEvent_t start = nullptr, stop = nullptr;
  INTERPLACE_CUDA_CHECK(cudaEventCreate(&start));
  INTERPLACE_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> times;
  try {
    run(c);
    for (int r = 0; r < kRetimeRuns; ++r) {
      INTERPLACE_CUDA_CHECK(cudaEventRecord(start, stream));
      run(c);
      INTERPLACE_CUDA_CHECK(cudaEventRecord(stop, stream));
      INTERPLACE_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0.0f;
      INTERPLACE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      times.push_back(ms);
    }
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::nth_element(times.begin(), times.begin() + kRetimeRuns / 2, times.end());
  return times[kRetimeRuns / 2];
}

// Re-times the candidates (when there are several) and adopts the fastest by median.
template <class Run>
void adopt_fastest(const std::vector<Candidate>& found, cudaStream_t stream, ConvPlan& plan,
                   Run run) {
  size_t best = 0;
  if (found.size() > 1) {
    float best_ms = 0.0f;
    for (size_t i = 0; i < found.size(); ++i) {
      const float ms = median_ms(stream, found[i], run);
      if (i == 0 || ms < best_ms) {
        best = i;
        best_ms = ms;
      }
    }
  }
  plan.algorithm = found[best].algorithm;
  plan.workspace_bytes = found[best].memory;
  INTERPLACE_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv, found[best].math));
}

const char* direction_name(ConvDirection direction) {
  switch (direction) {
    case ConvDirection::forward:
      return "forward";
    case ConvDirection::backward_data:
      return "backward-data";
    case ConvDirection::backward_weights:
      return "backward-weights";
  }
  return "?";
}

}  // namespace

ConvPlan& CudaBackend::conv_plan(ConvDirection direction, const Conv2dGeometry& g, const Tensor& x,
                                 const Tensor& w, const Tensor& y) {
  const std::string what = std::string("conv2d ") + direction_name(direction) + " " + g.key();
  const std::string key = what + (tf32_ ? " tf32" : "");
  auto found = conv_plans_.find(key);
  if (found != conv_plans_.end()) return *found->second;

  std::unique_ptr<ConvPlan, ConvPlanDeleter> plan(new ConvPlan);
  describe(g, tf32_, *plan);
  ConvPlan& p = *plan;
  switch (direction) {
    case ConvDirection::forward: {
      int max_count = 0, count = 0;
      INTERPLACE_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(cudnn_, &max_count));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(static_cast<size_t>(max_count));
      INTERPLACE_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          cudnn_, p.x, p.w, p.conv, p.y, max_count, &count, perfs.data()));
      const size_t bytes = workspace_for(perfs, count, tf32_);
      void* scratch = bytes > 0 ? workspace(bytes) : nullptr;
      INTERPLACE_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
          cudnn_, p.x, x.data(), p.w, w.data(), p.conv, p.y, const_cast<float*>(y.data()),
          max_count, &count, perfs.data(), scratch, bytes));
      adopt_fastest(candidates(perfs, count, tf32_, bytes, what), stream_, p,
                    [&](const Candidate& c) {
                      INTERPLACE_CUDNN_CHECK(cudnnSetConvolutionMathType(p.conv, c.math));
                      INTERPLACE_CUDNN_CHECK(cudnnConvolutionForward(
                          cudnn_, &kOne, p.x, x.data(), p.w, w.data(), p.conv,
                          static_cast<cudnnConvolutionFwdAlgo_t>(c.algorithm), scratch, c.memory,
                          &kZero, p.y, const_cast<float*>(y.data())));
                    });
      break;
    }
    case ConvDirection::backward_data: {
      int max_count = 0, count = 0;
      INTERPLACE_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnn_, &max_count));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(static_cast<size_t>(max_count));
      INTERPLACE_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          cudnn_, p.w, p.y, p.conv, p.x, max_count, &count, perfs.data()));
      const size_t bytes = workspace_for(perfs, count, tf32_);
      void* scratch = bytes > 0 ? workspace(bytes) : nullptr;
      INTERPLACE_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
          cudnn_, p.w, w.data(), p.y, y.data(), p.conv, p.x, const_cast<float*>(x.data()),
          max_count, &count, perfs.data(), scratch, bytes));
      adopt_fastest(candidates(perfs, count, tf32_, bytes, what), stream_, p,
                    [&](const Candidate& c) {
                      INTERPLACE_CUDNN_CHECK(cudnnSetConvolutionMathType(p.conv, c.math));
                      INTERPLACE_CUDNN_CHECK(cudnnConvolutionBackwardData(
                          cudnn_, &kOne, p.w, w.data(), p.y, y.data(), p.conv,
                          static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algorithm), scratch,
                          c.memory, &kZero, p.x, const_cast<float*>(x.data())));
                    });
      break;
    }
    case ConvDirection::backward_weights: {
      int max_count = 0, count = 0;
      INTERPLACE_CUDNN_CHECK(
          cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnn_, &max_count));
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perfs(static_cast<size_t>(max_count));
      INTERPLACE_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          cudnn_, p.x, p.y, p.conv, p.w, max_count, &count, perfs.data()));
      const size_t bytes = workspace_for(perfs, count, tf32_);
      void* scratch = bytes > 0 ? workspace(bytes) : nullptr;
      INTERPLACE_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
          cudnn_, p.x, x.data(), p.y, y.data(), p.conv, p.w, const_cast<float*>(w.data()),
          max_count, &count, perfs.data(), scratch, bytes));
      adopt_fastest(candidates(perfs, count, tf32_, bytes, what), stream_, p,
                    [&](const Candidate& c) {
                      INTERPLACE_CUDNN_CHECK(cudnnSetConvolutionMathType(p.conv, c.math));
                      INTERPLACE_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
                          cudnn_, &kOne, p.x, x.data(), p.y, y.data(), p.conv,
                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algorithm), scratch,
                          c.memory, &kZero, p.w, const_cast<float*>(w.data())));
                    });
      break;
    }
  }
  return *conv_plans_.emplace(key, std::move(plan)).first->second;
}

void CudaBackend::conv2d_forward(const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
                                 const Tensor& bias, Tensor& y) {
  check_geometry(g);
  const std::string op = "conv2d " + g.key();
  require_cuda({&x, &w, &y}, op);
  require_numel(x, input_size(g), op, "input");
  require_numel(w, weights_size(g), op, "weight");
  require_numel(y, output_size(g), op, "output");
  const bool with_bias = bias.defined();
  if (with_bias) {
    require_cuda({&bias}, op);
    require_numel(bias, g.out_channels, op, "bias");
  }
  ConvPlan& p = conv_plan(ConvDirection::forward, g, x, w, y);
  void* scratch = p.workspace_bytes > 0 ? workspace(p.workspace_bytes) : nullptr;
  INTERPLACE_CUDNN_CHECK(
      cudnnConvolutionForward(cudnn_, &kOne, p.x, x.data(), p.w, w.data(), p.conv,
                              static_cast<cudnnConvolutionFwdAlgo_t>(p.algorithm), scratch,
                              p.workspace_bytes, &kZero, p.y, y.data()));
  if (with_bias) {
    // y += bias, broadcast over N, H and W.
    INTERPLACE_CUDNN_CHECK(
        cudnnAddTensor(cudnn_, &kOne, p.bias, bias.data(), &kOne, p.y, y.data()));
  }
}

void CudaBackend::conv2d_backward_data(const Conv2dGeometry& g, const Tensor& dy, const Tensor& w,
                                       Tensor& dx) {
  check_geometry(g);
  const std::string op = "conv2d " + g.key();
  require_cuda({&dy, &w, &dx}, op);
  require_numel(dy, output_size(g), op, "output gradient");
  require_numel(w, weights_size(g), op, "weight");
  require_numel(dx, input_size(g), op, "input gradient");
  ConvPlan& p = conv_plan(ConvDirection::backward_data, g, dx, w, dy);
  void* scratch = p.workspace_bytes > 0 ? workspace(p.workspace_bytes) : nullptr;
  INTERPLACE_CUDNN_CHECK(
      cudnnConvolutionBackwardData(cudnn_, &kOne, p.w, w.data(), p.y, dy.data(), p.conv,
                                   static_cast<cudnnConvolutionBwdDataAlgo_t>(p.algorithm), scratch,
                                   p.workspace_bytes, &kZero, p.x, dx.data()));
}

void CudaBackend::conv2d_backward_weights(const Conv2dGeometry& g, const Tensor& x,
                                          const Tensor& dy, Tensor& dw, Tensor& dbias) {
  check_geometry(g);
  const std::string op = "conv2d " + g.key();
  require_cuda({&x, &dy, &dw}, op);
  require_numel(x, input_size(g), op, "input");
  require_numel(dy, output_size(g), op, "output gradient");
  require_numel(dw, weights_size(g), op, "weight gradient");
  const bool with_bias = dbias.defined();
  if (with_bias) {
    require_cuda({&dbias}, op);
    require_numel(dbias, g.out_channels, op, "bias gradient");
  }
  ConvPlan& p = conv_plan(ConvDirection::backward_weights, g, x, dw, dy);
  void* scratch = p.workspace_bytes > 0 ? workspace(p.workspace_bytes) : nullptr;
  // beta 0: dw and dbias are overwritten, as the interface promises.
  INTERPLACE_CUDNN_CHECK(
      cudnnConvolutionBackwardFilter(cudnn_, &kOne, p.x, x.data(), p.y, dy.data(), p.conv,
                                     static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.algorithm),
                                     scratch, p.workspace_bytes, &kZero, p.w, dw.data()));
  if (with_bias) {
    INTERPLACE_CUDNN_CHECK(
        cudnnConvolutionBackwardBias(cudnn_, &kOne, p.y, dy.data(), &kZero, p.bias, dbias.data()));
  }
}

}  // namespace interplace::kernels::cuda

#pragma GCC diagnostic pop
