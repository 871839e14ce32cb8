// Builds a zoo graph node by node: each node's shape, FLOPs and parameter count are asked
// of the real kernel layer (layer_factory), so the graph and the trained network agree.
#pragma once

#include <string>
#include <vector>

#include "interplace/kernels/layers/conv2d.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::placement::zoo {

class ModelBuilder {
 public:
  ModelBuilder(std::string graph_name, int64_t batch_size);

  // A data input of `per_sample` shape (the batch dimension is prepended).
  NodeId input(const std::string& name, const Shape& per_sample);
  NodeId layer(const std::string& name, const std::string& op, Attributes attributes,
               std::vector<NodeId> inputs);
  // Shorthands for the common layers. Convolutions are bias-free unless asked (every zoo
  // CNN follows its convolutions with batch norm).
  NodeId conv2d(const std::string& name, NodeId x, int64_t out_channels, int64_t kernel,
                int64_t stride = 1, int64_t padding = 0, int64_t groups = 1, bool bias = false);
  // A rectangular kernel {kh, kw} with per-axis padding {padding_h, padding_w}.
  NodeId conv2d(const std::string& name, NodeId x, int64_t out_channels, kernels::Extent2d kernel,
                kernels::Extent2d padding, int64_t stride = 1);
  NodeId batch_norm(const std::string& name, NodeId x, double epsilon = 1e-5,
                    double momentum = 0.1);
  // An attribute-free layer on one input: relu, relu6, global_avg_pool, flatten.
  NodeId unary(const std::string& name, const std::string& op, NodeId x);
  const Shape& shape(NodeId id) const { return graph_.node(id).output_shape; }
  int64_t channels(NodeId id) const { return shape(id).at(1); }
  Graph take() { return std::move(graph_); }

 private:
  Graph graph_;
};

// Scales a channel count (at least 1) and a repeat count (at least 1) by the options.
int64_t scaled_width(int64_t channels, const ModelOptions& options);
int64_t scaled_depth(int64_t repeats, const ModelOptions& options);
// Validates the generic options (positive batch and multipliers).
void check_options(std::string_view model, const ModelOptions& options);
// prefix followed by the decimal index ("t" 3 -> "t3"); also spares GCC 12 its false
// -Wrestrict on "literal" + std::to_string(...).
std::string indexed(std::string_view prefix, int64_t index);
// `value` if set (> 0), else `fallback`.
int64_t or_default(int64_t value, int64_t fallback);

}  // namespace interplace::placement::zoo
