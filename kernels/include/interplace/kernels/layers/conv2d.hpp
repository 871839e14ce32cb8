// Conv2d: x [N, Cin, H, W] -> y [N, Cout, Ho, Wo] with Ho = (H + 2*padding_h - kh) / stride + 1
// and Wo = (W + 2*padding_w - kw) / stride + 1 (floor, as PyTorch), a kh x kw kernel (square
// or rectangular, e.g. Inception's 1x7), weight [Cout, Cin/groups, kh, kw] and optional
// bias [Cout]. groups = Cin = Cout is a depthwise convolution.
//
// FLOPs (a multiply-add counts as 2): forward 2*N*Cout*Ho*Wo*(Cin/groups)*kh*kw, plus
// N*Cout*Ho*Wo for the bias. Backward: the same product count for the input gradient and
// again for the weight gradient, plus N*Cout*Ho*Wo for the bias gradient's sum.
#pragma once

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

// Extents along the two spatial axes: {height, width}.
struct Extent2d {
  int64_t h, w;
};

class Conv2d final : public Layer {
 public:
  // Square kernel, the same padding on both axes.
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1,
         int64_t padding = 0, int64_t groups = 1, bool bias = true);
  // kernel {kh, kw}, padding {padding_h, padding_w}.
  Conv2d(int64_t in_channels, int64_t out_channels, Extent2d kernel, int64_t stride,
         Extent2d padding, int64_t groups = 1, bool bias = true);

  std::string type() const override { return "Conv2d"; }
  std::vector<Parameter*> parameters() override;
  // PyTorch's default: weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with
  // fan_in = Cin/groups * kh * kw.
  void init_parameters(Rng& rng) override;

  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }
  Extent2d kernel() const { return kernel_; }
  Extent2d padding() const { return padding_; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;
  Deferral deferral() override { return Deferral::own; }
  void run_backward_parameters(Context& ctx) override;

 private:
  // dW and db (added, or written after zero_grad) for the output gradient of input x.
  void parameter_gradients(Backend& backend, const Tensor& grad_output, const Tensor& x);
  Conv2dGeometry geometry(const Shape& input) const;

  int64_t in_channels_, out_channels_;
  Extent2d kernel_;
  int64_t stride_;
  Extent2d padding_;
  int64_t groups_;
  bool has_bias_;
  Parameter weight_, bias_;
};

}  // namespace interplace::kernels
