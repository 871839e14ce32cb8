// Builds a zoo graph node by node: each node's shape, FLOPs and parameter count are asked
// of the real kernel layer (layer_factory), so the graph and the trained network agree.
#pragma once

#include <string>
#include <vector>

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
// `value` if set (> 0), else `fallback`.
int64_t or_default(int64_t value, int64_t fallback);

}  // namespace interplace::placement::zoo
