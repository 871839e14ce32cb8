// Pad2d(top, bottom, left, right): zero padding of the spatial axes of x [N, C, H, W] into
// y [N, C, H + top + bottom, W + left + right]; a negative amount crops that many rows or
// columns from that side instead (Keras' ZeroPadding2D and Cropping2D, which NASNet uses
// for its factorized reductions, are Pad2d(0, 1, 0, 1) and Pad2d(-1, 0, -1, 0)).
// Element (i, j) of y is x(i - top, j - left), or 0 where that lies outside x; the output
// must keep at least one row and one column.
// FLOPs: 0 (data movement only).
#pragma once

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class Pad2d final : public Layer {
 public:
  Pad2d(int64_t top, int64_t bottom, int64_t left, int64_t right);

  std::string type() const override { return "Pad2d"; }
  int64_t top() const { return top_; }
  int64_t bottom() const { return bottom_; }
  int64_t left() const { return left_; }
  int64_t right() const { return right_; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;

 private:
  Pad2dGeometry geometry(const Shape& input) const;

  int64_t top_, bottom_, left_, right_;
};

}  // namespace interplace::kernels
