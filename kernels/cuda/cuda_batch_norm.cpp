// Batch normalisation through cuDNN (spatial mode: per-channel statistics over N, H, W).
//
// Statistics conventions. Our interface hands out the batch mean and the biased batch
// variance. cuDNN's documented outputs are its running statistics (the cache it fills
// for backward "should not be used directly"): with exponentialAverageFactor = 1 the
// running mean is the batch mean and the running variance the *unbiased* batch variance
// (as PyTorch's running_var), so forward scales it by (n - 1) / n. Backward passes the
// saved mean and inverse deviation cuDNN documents as the forward's cache: the batch mean
// as forward wrote it, and 1 / sqrt(biased variance + epsilon) computed from the batch
// variance (one launch over C values). Without them cuDNN recomputes both from x, a
// second pass over the input (5.93 ms against PyTorch's 4.77 for resnet20's 21 batch-norm
// backwards at batch 512, results/gpu-h200-2026-11-29). By the interface's contract x is
// the input whose statistics forward wrote, and gamma is unchanged, as cuDNN requires.
//
// cuDNN 9 marks these calls deprecated (see cuda_conv.cpp); warnings are silenced here.
#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "cuda_kernels.hpp"
#include "cuda_validate.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace interplace::kernels::cuda {

namespace {

const float kOne = 1.0f, kZero = 0.0f;

struct Layout {
  int64_t batch, channels, spatial;
  int64_t count() const { return batch * spatial; }  // values per channel
};

Layout layout_of(const Tensor& x) {
  if (x.rank() < 2 || x.numel() == 0) {
    throw_invalid("batch_norm: input must be [N, C, ...] and non-empty, got " +
                  to_string(x.shape()));
  }
  const Layout l{x.dim(0), x.dim(1), x.numel() / (x.dim(0) * x.dim(1))};
  if (l.batch > INT32_MAX || l.channels > INT32_MAX || l.spatial > INT32_MAX) {
    throw_invalid("batch_norm: input " + to_string(x.shape()) + " exceeds cuDNN's int range");
  }
  return l;
}

void require_per_channel(std::initializer_list<const Tensor*> tensors, const Layout& l,
                         const Tensor& x) {
  for (const Tensor* t : tensors) {
    if (t->numel() != l.channels) {
      throw_invalid("batch_norm on " + to_string(x.shape()) + ": per-channel tensor " +
                    to_string(t->shape()) + " must have " + std::to_string(l.channels) +
                    " elements");
    }
  }
}

// x viewed as [N, C, H*W, 1] and the derived [1, C, 1, 1] descriptor of per-channel values.
class BatchNormDescriptors {
 public:
  explicit BatchNormDescriptors(const Layout& l) {
    INTERPLACE_CUDNN_CHECK(cudnnCreateTensorDescriptor(&data_));
    INTERPLACE_CUDNN_CHECK(cudnnCreateTensorDescriptor(&channels_));
    INTERPLACE_CUDNN_CHECK(cudnnSetTensor4dDescriptor(
        data_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(l.batch),
        static_cast<int>(l.channels), static_cast<int>(l.spatial), 1));
    INTERPLACE_CUDNN_CHECK(
        cudnnDeriveBNTensorDescriptor(channels_, data_, CUDNN_BATCHNORM_SPATIAL));
  }
  ~BatchNormDescriptors() {
    cudnnDestroyTensorDescriptor(channels_);
    cudnnDestroyTensorDescriptor(data_);
  }
  BatchNormDescriptors(const BatchNormDescriptors&) = delete;
  BatchNormDescriptors& operator=(const BatchNormDescriptors&) = delete;
  cudnnTensorDescriptor_t data() const { return data_; }
  cudnnTensorDescriptor_t channels() const { return channels_; }

 private:
  cudnnTensorDescriptor_t data_ = nullptr, channels_ = nullptr;
};

}  // namespace

void CudaBackend::batch_norm_forward_training(const Tensor& x, const Tensor& gamma,
                                              const Tensor& beta, float epsilon, Tensor& y,
                                              Tensor& batch_mean, Tensor& batch_variance) {
  const Layout l = layout_of(x);
  require_cuda({&x, &gamma, &beta, &y, &batch_mean, &batch_variance}, "batch_norm");
  require_numel(y, x.numel(), "batch_norm on " + to_string(x.shape()), "output");
  require_per_channel({&gamma, &beta, &batch_mean, &batch_variance}, l, x);
  if (l.count() < 2) {
    throw_invalid("batch_norm: training needs more than one value per channel, got input " +
                  to_string(x.shape()));
  }
  const BatchNormDescriptors d(l);
  // The running outputs blend in their old values times (1 - factor) = 0: make them finite.
  fill(batch_mean, 0.0f);
  fill(batch_variance, 0.0f);
  INTERPLACE_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
      cudnn_, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, d.data(), x.data(), d.data(), y.data(),
      d.channels(), gamma.data(), beta.data(), /*exponentialAverageFactor=*/1.0, batch_mean.data(),
      batch_variance.data(), epsilon, /*resultSaveMean=*/nullptr,
      /*resultSaveInvVariance=*/nullptr));
  const auto n = static_cast<double>(l.count());
  scale(static_cast<float>((n - 1.0) / n), batch_variance);  // unbiased -> biased
}

void CudaBackend::batch_norm_forward_inference(const Tensor& x, const Tensor& gamma,
                                               const Tensor& beta, const Tensor& mean,
                                               const Tensor& variance, float epsilon, Tensor& y) {
  const Layout l = layout_of(x);
  require_cuda({&x, &gamma, &beta, &mean, &variance, &y}, "batch_norm");
  require_numel(y, x.numel(), "batch_norm on " + to_string(x.shape()), "output");
  require_per_channel({&gamma, &beta, &mean, &variance}, l, x);
  const BatchNormDescriptors d(l);
  INTERPLACE_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
      cudnn_, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, d.data(), x.data(), d.data(), y.data(),
      d.channels(), gamma.data(), beta.data(), mean.data(), variance.data(), epsilon));
}

void CudaBackend::batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                      const Tensor& batch_mean, const Tensor& batch_variance,
                                      float epsilon, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const Layout l = layout_of(x);
  require_cuda({&x, &dy, &gamma, &batch_mean, &batch_variance, &dx, &dgamma, &dbeta}, "batch_norm");
  const std::string op = "batch_norm on " + to_string(x.shape());
  require_numel(dy, x.numel(), op, "output gradient");
  require_numel(dx, x.numel(), op, "input gradient");
  require_per_channel({&gamma, &batch_mean, &batch_variance, &dgamma, &dbeta}, l, x);
  const BatchNormDescriptors d(l);
  // cuDNN normalises with the epsilon it is given; the saved inverse deviation must use
  // the same one, and cuDNN refuses epsilons below CUDNN_BN_MIN_EPSILON either way.
  Tensor inv_std({l.channels}, Device::cuda);
  check_cuda(
      launch_inverse_std(batch_variance.data(), l.channels, epsilon, inv_std.data(), stream_),
      "batch_norm inverse deviation kernel");
  // Data and parameter gradients both overwritten (betas 0).
  INTERPLACE_CUDNN_CHECK(cudnnBatchNormalizationBackward(
      cudnn_, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, &kOne, &kZero, d.data(), x.data(), d.data(),
      dy.data(), d.data(), dx.data(), d.channels(), gamma.data(), dgamma.data(), dbeta.data(),
      epsilon, /*savedMean=*/batch_mean.data(), /*savedInvVariance=*/inv_std.data()));
}

}  // namespace interplace::kernels::cuda

#pragma GCC diagnostic pop
