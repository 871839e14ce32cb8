// Composite layers: Sequential (a chain) and Residual (main(x) + shortcut(x)). Their
// Context keeps one child context per sub-layer, so they pipeline like any layer.
#pragma once

#include <memory>

#include "interplace/kernels/layer.hpp"

namespace interplace::kernels {

class Sequential final : public Layer {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::unique_ptr<Layer>> layers);
  Sequential& add(std::unique_ptr<Layer> layer);
  template <class L, class... Args>
  L& emplace(Args&&... args) {
    auto layer = std::make_unique<L>(std::forward<Args>(args)...);
    L& ref = *layer;
    add(std::move(layer));
    return ref;
  }

  std::string type() const override { return "Sequential"; }
  std::vector<Parameter*> parameters() override;
  std::vector<Tensor*> buffers() override;
  void init_parameters(Rng& rng) override;
  void set_training(bool training) override;
  size_t size() const { return layers_.size(); }
  Layer& operator[](size_t i) { return *layers_.at(i); }

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;
  Deferral deferral() override { return Deferral::own; }
  void run_backward_parameters(Context& ctx) override;

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
};

// y = main(x) + shortcut(x); a null shortcut is the identity.
class Residual final : public Layer {
 public:
  Residual(std::unique_ptr<Layer> main, std::unique_ptr<Layer> shortcut);

  std::string type() const override { return "Residual"; }
  std::vector<Parameter*> parameters() override;
  std::vector<Tensor*> buffers() override;
  void init_parameters(Rng& rng) override;
  void set_training(bool training) override;

 protected:
  Shape infer_output_shape(std::span<const Shape> inputs) const override;
  FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const override;
  Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) override;
  std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output, Context& ctx,
                                   Gradients which) override;
  Deferral deferral() override { return Deferral::own; }
  void run_backward_parameters(Context& ctx) override;

 private:
  std::unique_ptr<Layer> main_, shortcut_;
};

}  // namespace interplace::kernels
