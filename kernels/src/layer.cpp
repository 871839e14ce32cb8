#include "interplace/kernels/layer.hpp"

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

int64_t Layer::parameter_count() {
  int64_t count = 0;
  for (const Parameter* p : parameters()) count += p->value.numel();
  return count;
}

void Layer::zero_grad() {
  for (Parameter* p : parameters()) p->grad_is_zero = true;
}

void Layer::to(Device device) {
  for (Parameter* p : parameters()) {
    p->value = p->value.to(device);
    if (p->grad.defined()) p->grad = p->grad.to(device);
  }
  for (Tensor* buffer : buffers()) *buffer = buffer->to(device);
}

void Layer::check_input_count(size_t count) const {
  const int expected = input_count();
  if (expected >= 0 ? count != static_cast<size_t>(expected) : count == 0) {
    throw_invalid(type() + " takes " +
                  (expected >= 0 ? std::to_string(expected) : std::string("one or more")) +
                  " input(s), got " + std::to_string(count));
  }
}

Shape Layer::output_shape(std::span<const Shape> inputs) const {
  check_input_count(inputs.size());
  for (const Shape& shape : inputs) {
    for (int64_t extent : shape) {
      if (extent < 1) throw_invalid(type() + ": input shape " + to_string(shape) + " is empty");
    }
  }
  return infer_output_shape(inputs);
}

Shape Layer::output_shape(const Shape& input) const {
  return output_shape(std::span<const Shape>(&input, 1));
}

FlopCount Layer::flops(std::span<const Shape> inputs) const {
  return count_flops(inputs, output_shape(inputs));
}

FlopCount Layer::flops(const Shape& input) const {
  return flops(std::span<const Shape>(&input, 1));
}

Tensor Layer::forward(const Tensor& x, Context& ctx) {
  return forward(std::span<const Tensor>(&x, 1), ctx);
}

Tensor Layer::forward(std::span<const Tensor> inputs, Context& ctx) {
  check_input_count(inputs.size());
  ctx.saved.clear();
  ctx.input_shapes.clear();
  for (const Tensor& x : inputs) {
    if (!x.defined()) throw_invalid(type() + ": an input tensor is undefined");
    if (x.device() != inputs[0].device()) throw_invalid(type() + ": inputs on different devices");
    ctx.input_shapes.push_back(x.shape());
  }
  const Shape expected = output_shape(ctx.input_shapes);
  Tensor y = run_forward(backend_for(inputs[0].device()), inputs, ctx);
  if (y.shape() != expected) {
    throw_runtime(type() + " produced " + to_string(y.shape()) + " instead of " +
                  to_string(expected));
  }
  return y;
}

std::vector<Tensor> Layer::backward(const Tensor& grad_output, Context& ctx, Gradients which) {
  if (ctx.input_shapes.empty()) {
    throw_invalid(type() + ": backward called without a matching forward");
  }
  check_shape(grad_output, output_shape(ctx.input_shapes), type() + " backward gradient");
  Backend& backend = backend_for(grad_output.device());
  std::vector<Tensor> grads;
  if (which == Gradients::inputs_deferring_parameters) {
    // One parameter pass per deferring backward: a second would lose the first's gradient.
    if (ctx.parameters_pending) {
      throw_invalid(type() +
                    ": backward deferring the parameter gradients again before "
                    "backward_parameters ran for the previous one");
    }
    ctx.deferred.clear();
    const Deferral how = deferral();
    grads = run_backward(backend, grad_output, ctx,
                         how == Deferral::own ? which : Gradients::inputs_only);
    if (how == Deferral::rerun) ctx.deferred = {grad_output};
    ctx.parameters_pending = true;
  } else {
    grads = run_backward(backend, grad_output, ctx, which);
  }
  if (grads.size() != ctx.input_shapes.size()) {
    throw_runtime(type() + " returned " + std::to_string(grads.size()) + " input gradients");
  }
  return grads;
}

void Layer::backward_parameters(Context& ctx) {
  if (!ctx.parameters_pending) {
    throw_invalid(type() +
                  ": backward_parameters without a pending parameter pass (it follows a "
                  "backward with Gradients::inputs_deferring_parameters, once)");
  }
  ctx.parameters_pending = false;
  switch (deferral()) {
    case Deferral::none:
      break;
    case Deferral::rerun: {
      const Tensor grad_output = ctx.deferred.at(0);
      run_backward(backend_for(grad_output.device()), grad_output, ctx,
                   Gradients::inputs_and_parameters);
      break;
    }
    case Deferral::own:
      run_backward_parameters(ctx);
      break;
  }
  ctx.deferred.clear();
}

Layer::Deferral Layer::deferral() {
  return parameters().empty() ? Deferral::none : Deferral::rerun;
}

void Layer::run_backward_parameters(Context& /*ctx*/) {
  throw_runtime(type() + " defers its parameter gradients itself but has no parameter pass");
}

bool Layer::begin_grad(Parameter& p) {
  if (!p.grad.defined() || p.grad.shape() != p.value.shape() ||
      p.grad.device() != p.value.device()) {
    p.grad = Tensor(p.value.shape(), p.value.device());
    p.grad_is_zero = true;
  }
  return !p.grad_is_zero;
}

Tensor Layer::grad_target(Parameter& p) {
  if (!begin_grad(p)) return p.grad;
  return Tensor(p.value.shape(), p.value.device());
}

void Layer::store_grad(Backend& backend, Parameter& p, const Tensor& written) {
  if (written.data() != p.grad.data()) {
    if (p.grad_is_zero) {
      backend.copy(written, p.grad);
    } else {
      backend.axpy(1.0f, written, p.grad);
    }
  }
  p.grad_is_zero = false;
}

}  // namespace interplace::kernels
