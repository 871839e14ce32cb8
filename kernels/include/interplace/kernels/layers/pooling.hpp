// Pooling over x [N, C, H, W] with a square window: MaxPool2d and AvgPool2d give
// [N, C, Ho, Wo] with Ho = (H + 2*padding - kernel) / stride + 1 (floor, as PyTorch);
// padding is at most half the kernel and padded positions never win a max. An average
// divides by the window's in-bounds elements, or with count_include_pad (PyTorch's
// default, used by torchvision's Inception-v3) by kernel^2, padded zeros included.
// GlobalAvgPool averages each channel: [N, C, H, W] -> [N, C].
//
// FLOPs: max forward kernel^2 comparisons per output, backward 1 per output (routing its
// gradient); average forward and backward kernel^2 per output; global average 1 per
// input element in each direction.
#pragma once

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class Pool2dLayer : public Layer {
 public:
  int64_t kernel() const { return kernel_; }
  int64_t stride() const { return stride_; }
  int64_t padding() const { return padding_; }
  bool count_include_pad() const { return count_include_pad_; }

 protected:
  Pool2dLayer(PoolKind kind, int64_t kernel, int64_t stride, int64_t padding,
              bool count_include_pad);
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;

 private:
  Pool2dGeometry geometry(const Shape& input) const;

  PoolKind kind_;
  int64_t kernel_, stride_, padding_;
  bool count_include_pad_;
};

class MaxPool2d final : public Pool2dLayer {
 public:
  MaxPool2d(int64_t kernel, int64_t stride, int64_t padding = 0)
      : Pool2dLayer(PoolKind::max, kernel, stride, padding, false) {}
  std::string type() const override { return "MaxPool2d"; }
};

class AvgPool2d final : public Pool2dLayer {
 public:
  AvgPool2d(int64_t kernel, int64_t stride, int64_t padding = 0, bool count_include_pad = false)
      : Pool2dLayer(PoolKind::average, kernel, stride, padding, count_include_pad) {}
  std::string type() const override { return "AvgPool2d"; }
};

class GlobalAvgPool final : public Layer {
 public:
  std::string type() const override { return "GlobalAvgPool"; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;
};

}  // namespace interplace::kernels
