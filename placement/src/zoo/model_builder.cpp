#include "model_builder.hpp"

#include <cmath>

#include "interplace/kernels/error.hpp"
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

int64_t scaled_width(int64_t channels, const ModelOptions& options) {
  return std::max<int64_t>(1,
                           std::llround(static_cast<double>(channels) * options.width_multiplier));
}

int64_t scaled_depth(int64_t repeats, const ModelOptions& options) {
  return std::max<int64_t>(1,
                           std::llround(static_cast<double>(repeats) * options.depth_multiplier));
}

void check_options(std::string_view model, const ModelOptions& options) {
  const std::string prefix = "model " + std::string(model) + ": ";
  if (options.batch_size < 1) {
    throw_invalid(prefix + "batch size must be >= 1, got " + std::to_string(options.batch_size));
  }
  if (!(options.width_multiplier > 0.0) || !(options.depth_multiplier > 0.0)) {
    throw_invalid(prefix + "width and depth multipliers must be > 0");
  }
  for (int64_t v :
       {options.in_channels, options.image_size, options.classes, options.sequence_length,
        options.layers, options.dim, options.heads, options.vocab_size, options.max_positions}) {
    if (v < 0) throw_invalid(prefix + "sizes must be positive (0 = model default)");
  }
}

int64_t or_default(int64_t value, int64_t fallback) {
  return value > 0 ? value : fallback;
}

}  // namespace interplace::placement::zoo
