// A layer: forward, backward, parameters, FLOPs. Layers keep no per-call state: what
// backward needs is saved in a Context owned by the caller, so a pipeline can keep many
// micro-batches in flight through one layer.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "interplace/kernels/random.hpp"
#include "interplace/kernels/tensor.hpp"

namespace interplace::kernels {

class Backend;

struct Parameter {
  std::string name;  // e.g. "weight", "bias"
  Tensor value;
  Tensor grad;
  bool weight_decay = true;  // false for biases and norm scales/shifts
  // True after zero_grad(): the next backward overwrites `grad` instead of adding to it.
  bool grad_is_zero = true;
};

struct FlopCount {
  int64_t forward_flops = 0;
  int64_t backward_flops = 0;  // input gradient plus parameter gradients
  // The part of backward_flops that computes parameter gradients: what a backward with
  // Gradients::inputs_only skips (the weight-gradient convolutions and GEMMs).
  int64_t parameter_grad_flops = 0;
};

// What a backward call computes. A pipeline pass that only carries a gradient through a
// stage it must not train (interlocking backpropagation, docs/strategies.md) asks for the
// input gradients alone: conv and linear layers then skip their weight-gradient
// convolution or GEMM, norms their scale/shift reductions where the input gradient does
// not need them, and no Parameter::grad is touched.
// inputs_deferring_parameters splits a backward in two, as zero-bubble pipelines do (B
// then W): the call computes the input gradients now and keeps in the Context what the
// parameter gradients need; Layer::backward_parameters computes them later.
enum class Gradients { inputs_and_parameters, inputs_only, inputs_deferring_parameters };

// Saved state of one forward call, consumed by the matching backward call.
struct Context {
  std::vector<Tensor> saved;
  std::vector<Shape> input_shapes;
  std::vector<Context> children;  // for composite layers (Sequential, Residual)
  // Kept by a backward with Gradients::inputs_deferring_parameters for the parameter pass
  // (the output gradient, or sums the input pass computed anyway); freed by that pass.
  std::vector<Tensor> deferred;
  bool parameters_pending = false;  // a deferring backward ran, backward_parameters not yet
};

// Public calls validate (input count, shapes, devices, backward-after-forward) and then
// dispatch to the protected virtual hooks each layer implements.
class Layer {
 public:
  virtual ~Layer() = default;

  virtual std::string type() const = 0;
  // Number of inputs forward takes; -1 for any number >= 1 (Concat, Add).
  virtual int input_count() const { return 1; }

  // Output shape for these input shapes; throws invalid_input naming the problem.
  Shape output_shape(std::span<const Shape> inputs) const;
  Shape output_shape(const Shape& input) const;
  FlopCount flops(std::span<const Shape> inputs) const;
  FlopCount flops(const Shape& input) const;

  // Computes the output and saves into `ctx` what backward needs.
  Tensor forward(std::span<const Tensor> inputs, Context& ctx);
  Tensor forward(const Tensor& x, Context& ctx);
  // Returns one gradient per input and adds the parameter gradients into Parameter::grad
  // (or overwrites them when grad_is_zero); with Gradients::inputs_only the parameter
  // gradients are neither computed nor changed.
  // Inputs that are not differentiable (token ids, labels) get an undefined Tensor().
  // With Gradients::inputs_deferring_parameters no Parameter::grad is touched either, and
  // `ctx` keeps what backward_parameters needs (throws invalid_input when a deferred
  // parameter pass of `ctx` is still pending). Nothing `ctx` held is freed.
  std::vector<Tensor> backward(const Tensor& grad_output, Context& ctx,
                               Gradients which = Gradients::inputs_and_parameters);
  // The parameter pass that a backward with Gradients::inputs_deferring_parameters left
  // pending in `ctx`: adds into Parameter::grad (or overwrites, after zero_grad) what that
  // backward would have added with inputs_and_parameters, and frees what it kept. Throws
  // invalid_input when no such pass is pending (none ran, or this one already did).
  void backward_parameters(Context& ctx);

  virtual std::vector<Parameter*> parameters() { return {}; }
  // Non-trainable state that is part of the model (batch-norm running statistics).
  virtual std::vector<Tensor*> buffers() { return {}; }
  virtual void init_parameters(Rng& /*rng*/) {}

  int64_t parameter_count();
  void zero_grad();
  // Moves parameters (values and any gradients) and buffers to `device`. Parameters keep
  // their identity (Parameter* stay valid) but get new storage, so move a model before
  // creating its optimiser. Initialise on the host, then move.
  void to(Device device);
  virtual void set_training(bool training) { training_ = training; }
  bool training() const { return training_; }

 protected:
  // Called with the right number of input shapes; throws invalid_input on bad shapes.
  virtual Shape infer_output_shape(std::span<const Shape> inputs) const = 0;
  // Called with validated input shapes and the output shape.
  virtual FlopCount count_flops(std::span<const Shape> inputs, const Shape& output) const = 0;
  // Called with validated inputs on one device; ctx.saved is empty, ctx.input_shapes set.
  virtual Tensor run_forward(Backend& backend, std::span<const Tensor> inputs, Context& ctx) = 0;
  // Called with ctx from run_forward and a gradient of the output's shape. Layers with
  // parameters compute their gradients only when `which` asks for them; composite layers
  // pass `which` on to their parts.
  virtual std::vector<Tensor> run_backward(Backend& backend, const Tensor& grad_output,
                                           Context& ctx, Gradients which) = 0;

  // How a layer splits a backward with Gradients::inputs_deferring_parameters:
  //  none: it computes no parameter gradients; its parameter pass does nothing;
  //  rerun: run_backward runs with inputs_only and ctx.deferred keeps grad_output; the
  //    parameter pass runs the whole backward again and drops the input gradients (right
  //    for any layer, and no extra work where inputs_only computes nothing, as Embedding);
  //  own: run_backward gets inputs_deferring_parameters and keeps in ctx.deferred what the
  //    layer's run_backward_parameters needs (conv and linear: the output gradient, so
  //    that each pass computes only its own products; composites: the children's passes).
  // Default: rerun for a layer with parameters, none otherwise.
  enum class Deferral { none, rerun, own };
  virtual Deferral deferral();
  // For Deferral::own: called by backward_parameters with the ctx a deferring
  // run_backward filled, on the backend of the tensors it kept.
  virtual void run_backward_parameters(Context& ctx);

  // Makes sure p.grad has storage; returns true when the new gradient must be added to
  // the one already there (kernels that can accumulate in place use this).
  static bool begin_grad(Parameter& p);
  // For kernels that can only overwrite: grad_target gives p.grad when it is zero, else
  // a scratch tensor; store_grad then commits what was written (copy-free or added).
  static Tensor grad_target(Parameter& p);
  static void store_grad(Backend& backend, Parameter& p, const Tensor& written);

 private:
  void check_input_count(size_t count) const;
  bool training_ = true;
};

}  // namespace interplace::kernels
