// Op-level elementwise layers, the pieces recurrent cells are written in when every gate
// is its own graph node (the ENAS recurrent cell, LSTMs unrolled over time):
//   Multiply: y = a * b over two inputs of one shape (Hadamard product). Backward:
//             da = dy * b, db = dy * a. FLOPs: forward 1 per element, backward 2.
//   Affine:   y = scale * x + shift with constants (1 - x is Affine(-1, 1); the mean of k
//             tensors is Add then Affine(1/k, 0)). Backward: dx = scale * dy.
//             FLOPs: forward 2 per element, backward 1.
//   Slice:    channels [offset, offset + length) of axis 1: [N, C, ...] -> [N, length,
//             ...] (one time step of a [batch, time, features] sequence, one gate of a
//             fused gate tensor). Backward writes dy into those channels of a zero
//             gradient. FLOPs: 0 (data movement only).
#pragma once

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class Multiply final : public Layer {
 public:
  std::string type() const override { return "Multiply"; }
  int input_count() const override { return 2; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;
};

class Affine final : public Layer {
 public:
  // Throws invalid_input unless both constants are finite.
  Affine(float scale, float shift);
  std::string type() const override { return "Affine"; }
  float scale() const { return scale_; }
  float shift() const { return shift_; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;

 private:
  float scale_, shift_;
};

class Slice final : public Layer {
 public:
  // Throws invalid_input for a negative offset or a length below 1.
  Slice(int64_t offset, int64_t length);
  std::string type() const override { return "Slice"; }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;

 private:
  int64_t offset_, length_;
};

}  // namespace interplace::kernels
