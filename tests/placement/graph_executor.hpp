// Test-only: runs a zoo graph through real kernel layers, so that a model's graph is
// shown to train, not just to count. Nodes run forward in id order (builders number them
// topologically), each fed its inputs' outputs; backward walks them in reverse, summing
// the gradients a node receives from all its consumers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "interplace/kernels/layer.hpp"
#include "interplace/placement/graph.hpp"

namespace interplace::placement::testing {

class GraphExecutor {
 public:
  // Instantiates every non-input node with make_layer and initialises its parameters
  // from one Rng(seed), in id order.
  GraphExecutor(const Graph& graph, uint64_t seed);

  // `inputs`: one tensor per "input" node, in id order. Returns the last node's output.
  kernels::Tensor forward(const std::vector<kernels::Tensor>& inputs);
  // Back-propagates `grad_output` (the last node's output gradient) and adds the
  // parameter gradients into Parameter::grad.
  void backward(const kernels::Tensor& grad_output);
  // Gradient of the input node that forward got as inputs[index], from the last backward.
  const kernels::Tensor& input_gradient(size_t index) const;

  std::vector<kernels::Parameter*> parameters();
  const kernels::Tensor& output(NodeId id) const { return outputs_.at(id); }

 private:
  const Graph& graph_;
  std::vector<std::unique_ptr<kernels::Layer>> layers_;  // null for input nodes
  std::vector<kernels::Context> contexts_;
  std::vector<kernels::Tensor> outputs_;
  std::vector<kernels::Tensor> gradients_;
  std::vector<NodeId> input_nodes_;
};

}  // namespace interplace::placement::testing
