#include "interplace/kernels/layers/container.hpp"

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

namespace {

template <class T>
void append(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

FlopCount operator+(FlopCount a, FlopCount b) {
  return {a.forward_flops + b.forward_flops, a.backward_flops + b.backward_flops,
          a.parameter_grad_flops + b.parameter_grad_flops};
}

}  // namespace

Sequential::Sequential(std::vector<std::unique_ptr<Layer>> layers) {
  for (auto& layer : layers) add(std::move(layer));
}

Sequential& Sequential::add(std::unique_ptr<Layer> layer) {
  if (layer == nullptr) throw_invalid("Sequential: null layer");
  if (layer->input_count() > 1) {
    throw_invalid("Sequential: " + layer->type() + " takes several inputs");
  }
  layers_.push_back(std::move(layer));
  return *this;
}

std::vector<Parameter*> Sequential::parameters() {
  std::vector<Parameter*> all;
  for (auto& layer : layers_) append(all, layer->parameters());
  return all;
}

std::vector<Tensor*> Sequential::buffers() {
  std::vector<Tensor*> all;
  for (auto& layer : layers_) append(all, layer->buffers());
  return all;
}

void Sequential::init_parameters(Rng& rng) {
  for (auto& layer : layers_) layer->init_parameters(rng);
}

void Sequential::set_training(bool training) {
  Layer::set_training(training);
  for (auto& layer : layers_) layer->set_training(training);
}

Shape Sequential::infer_output_shape(std::span<const Shape> inputs) const {
  Shape shape = inputs[0];
  for (const auto& layer : layers_) shape = layer->output_shape(shape);
  return shape;
}

FlopCount Sequential::count_flops(std::span<const Shape> inputs, const Shape& /*output*/) const {
  FlopCount total;
  Shape shape = inputs[0];
  for (const auto& layer : layers_) {
    total = total + layer->flops(shape);
    shape = layer->output_shape(shape);
  }
  return total;
}

Tensor Sequential::run_forward(Backend& /*backend*/, std::span<const Tensor> inputs, Context& ctx) {
  ctx.children.resize(layers_.size());
  Tensor y = inputs[0];
  for (size_t i = 0; i < layers_.size(); ++i) y = layers_[i]->forward(y, ctx.children[i]);
  return y;
}

std::vector<Tensor> Sequential::run_backward(Backend& /*backend*/, const Tensor& grad_output,
                                             Context& ctx, Gradients which) {
  Tensor grad = grad_output;
  for (size_t i = layers_.size(); i-- > 0;) {
    grad = layers_[i]->backward(grad, ctx.children[i], which)[0];
  }
  return {grad};
}

// In backward's order, so that a parameter two layers share sums in the same order.
void Sequential::run_backward_parameters(Context& ctx) {
  for (size_t i = layers_.size(); i-- > 0;) layers_[i]->backward_parameters(ctx.children[i]);
}

Residual::Residual(std::unique_ptr<Layer> main, std::unique_ptr<Layer> shortcut)
    : main_(std::move(main)), shortcut_(std::move(shortcut)) {
  if (main_ == nullptr) throw_invalid("Residual: null main branch");
}

std::vector<Parameter*> Residual::parameters() {
  std::vector<Parameter*> all = main_->parameters();
  if (shortcut_) append(all, shortcut_->parameters());
  return all;
}

std::vector<Tensor*> Residual::buffers() {
  std::vector<Tensor*> all = main_->buffers();
  if (shortcut_) append(all, shortcut_->buffers());
  return all;
}

void Residual::init_parameters(Rng& rng) {
  main_->init_parameters(rng);
  if (shortcut_) shortcut_->init_parameters(rng);
}

void Residual::set_training(bool training) {
  Layer::set_training(training);
  main_->set_training(training);
  if (shortcut_) shortcut_->set_training(training);
}

Shape Residual::infer_output_shape(std::span<const Shape> inputs) const {
  const Shape main = main_->output_shape(inputs[0]);
  const Shape shortcut = shortcut_ ? shortcut_->output_shape(inputs[0]) : inputs[0];
  if (main != shortcut) {
    throw_invalid("Residual: main branch gives " + to_string(main) + " but shortcut gives " +
                  to_string(shortcut));
  }
  return main;
}

FlopCount Residual::count_flops(std::span<const Shape> inputs, const Shape& output) const {
  FlopCount total = main_->flops(inputs[0]);
  if (shortcut_) total = total + shortcut_->flops(inputs[0]);
  const int64_t sum = numel(output);  // the addition, and in backward the gradient sum
  return total + FlopCount{sum, sum};
}

Tensor Residual::run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) {
  ctx.children.resize(2);
  // Fresh output tensors: a branch's result may be a view of its input.
  const Tensor main = main_->forward(inputs[0], ctx.children[0]);
  const Tensor shortcut = shortcut_ ? shortcut_->forward(inputs[0], ctx.children[1]) : inputs[0];
  Tensor y(main.shape(), main.device());
  backend.add(main, shortcut, y);
  return y;
}

std::vector<Tensor> Residual::run_backward(Backend& backend, const Tensor& grad_output,
                                           Context& ctx, Gradients which) {
  const Tensor main = main_->backward(grad_output, ctx.children[0], which)[0];
  const Tensor shortcut =
      shortcut_ ? shortcut_->backward(grad_output, ctx.children[1], which)[0] : grad_output;
  Tensor grad(main.shape(), main.device());
  backend.add(main, shortcut, grad);
  return {grad};
}

void Residual::run_backward_parameters(Context& ctx) {
  main_->backward_parameters(ctx.children[0]);
  if (shortcut_) shortcut_->backward_parameters(ctx.children[1]);
}

}  // namespace interplace::kernels
