#include "model_builder.hpp"

#include <cmath>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/shapes_only.hpp"
#include "interplace/placement/layer_factory.hpp"

namespace interplace::placement::zoo {

ModelBuilder::ModelBuilder(std::string graph_name, int64_t batch_size)
    : graph_(std::move(graph_name), batch_size) {}

NodeId ModelBuilder::input(const std::string& name, const Shape& per_sample) {
  NodeSpec spec;
  spec.name = name;
  spec.op = "input";
  spec.output_shape = {graph_.batch_size()};
  spec.output_shape.insert(spec.output_shape.end(), per_sample.begin(), per_sample.end());
  return graph_.add_node(std::move(spec));
}

NodeId ModelBuilder::layer(const std::string& name, const std::string& op, Attributes attributes,
                           std::vector<NodeId> inputs) {
  // Shapes only: the graph carries shapes and counts, never weights (kernels/shapes_only.hpp).
  const kernels::ShapesOnlyScope shapes_only;
  const auto instance = make_layer(op, attributes);
  std::vector<Shape> input_shapes;
  for (NodeId id : inputs) input_shapes.push_back(shape(id));
  NodeSpec spec;
  spec.name = name;
  spec.op = op;
  try {
    spec.output_shape = instance->output_shape(input_shapes);
  } catch (const Error& e) {
    throw_invalid(graph_.name() + ": node " + name + ": " + e.what());
  }
  const kernels::FlopCount flops = instance->flops(input_shapes);
  spec.forward_flops = flops.forward_flops;
  spec.backward_flops = flops.backward_flops;
  spec.parameter_grad_flops = flops.parameter_grad_flops;
  spec.parameter_count = instance->parameter_count();
  spec.inputs = std::move(inputs);
  spec.attributes = std::move(attributes);
  return graph_.add_node(std::move(spec));
}

NodeId ModelBuilder::conv2d(const std::string& name, NodeId x, int64_t out_channels, int64_t kernel,
                            int64_t stride, int64_t padding, int64_t groups, bool bias) {
  Attributes a = {{"in_channels", channels(x)},
                  {"out_channels", out_channels},
                  {"kernel", kernel},
                  {"stride", stride},
                  {"padding", padding}};
  if (groups != 1) a["groups"] = groups;
  if (bias) a["bias"] = int64_t{1};
  return layer(name, "conv2d", std::move(a), {x});
}

NodeId ModelBuilder::conv2d(const std::string& name, NodeId x, int64_t out_channels,
                            kernels::Extent2d kernel, kernels::Extent2d padding, int64_t stride) {
  return layer(name, "conv2d",
               {{"in_channels", channels(x)},
                {"out_channels", out_channels},
                {"kernel_h", kernel.h},
                {"kernel_w", kernel.w},
                {"stride", stride},
                {"padding_h", padding.h},
                {"padding_w", padding.w}},
               {x});
}

NodeId ModelBuilder::batch_norm(const std::string& name, NodeId x, double epsilon,
                                double momentum) {
  return layer(name, "batch_norm",
               {{"channels", channels(x)}, {"epsilon", epsilon}, {"momentum", momentum}}, {x});
}

NodeId ModelBuilder::unary(const std::string& name, const std::string& op, NodeId x) {
  return layer(name, op, {}, {x});
}

namespace {

// std::llround of a product past int64 is undefined (in practice LLONG_MIN, which a
// clamp to 1 would turn into a one-channel model recorded as the one asked for).
int64_t scaled(int64_t count, double multiplier, const char* what) {
  const double value = static_cast<double>(count) * multiplier;
  if (!std::isfinite(value) || value > static_cast<double>(int64_t{1} << 40)) {
    throw_invalid(std::string(what) + " " + std::to_string(count) + " times " +
                  std::to_string(multiplier) + " is out of range");
  }
  return std::max<int64_t>(1, std::llround(value));
}

}  // namespace

int64_t scaled_width(int64_t channels, const ModelOptions& options) {
  return scaled(channels, options.width_multiplier, "width");
}

int64_t scaled_depth(int64_t repeats, const ModelOptions& options) {
  return scaled(repeats, options.depth_multiplier, "depth");
}

void check_options(std::string_view model, const ModelOptions& options) {
  try {
    check_model_options(options);
  } catch (const Error& e) {
    throw_invalid("model " + std::string(model) + ": " + e.what());
  }
}

std::string indexed(std::string_view prefix, int64_t index) {
  std::string out(prefix);
  out += std::to_string(index);
  return out;
}

int64_t or_default(int64_t value, int64_t fallback) {
  return value > 0 ? value : fallback;
}

}  // namespace interplace::placement::zoo

namespace interplace::placement {

void check_multiplier(std::string_view name, double value) {
  if (!std::isfinite(value) || !(value > 0.0) || value > ModelOptionLimits::multiplier) {
    throw_invalid(std::string(name) + " must be a finite number in (0, " +
                  std::to_string(static_cast<int>(ModelOptionLimits::multiplier)) + "], got " +
                  (std::isnan(value) ? std::string("nan") : std::to_string(value)));
  }
}

void check_model_options(const ModelOptions& o) {
  using L = ModelOptionLimits;
  if (o.batch_size < 1 || o.batch_size > L::batch_size) {
    throw_invalid("batch size must be in 1.." + std::to_string(L::batch_size) + ", got " +
                  std::to_string(o.batch_size));
  }
  const std::pair<const char*, std::pair<int64_t, int64_t>> sizes[] = {
      {"in_channels", {o.in_channels, L::in_channels}},
      {"image_size", {o.image_size, L::image_size}},
      {"classes", {o.classes, L::classes}},
      {"sequence_length", {o.sequence_length, L::sequence_length}},
      {"layers", {o.layers, L::layers}},
      {"dim", {o.dim, L::dim}},
      {"heads", {o.heads, L::heads}},
      {"vocab_size", {o.vocab_size, L::vocab_size}},
      {"max_positions", {o.max_positions, L::max_positions}}};
  for (const auto& [name, value_limit] : sizes) {
    const auto [value, limit] = value_limit;
    if (value < 0 || value > limit) {
      throw_invalid(std::string(name) + " must be in 1.." + std::to_string(limit) +
                    " (0: the model's default), got " + std::to_string(value));
    }
  }
  check_multiplier("width multiplier", o.width_multiplier);
  check_multiplier("depth multiplier", o.depth_multiplier);
}

}  // namespace interplace::placement
