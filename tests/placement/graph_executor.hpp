// A single-process executor of zoo graphs, for tests only: every node becomes its kernel
// layer (make_layer), so a model's graph is shown to train, not just to count. Forward
// runs in id order (the builders' topological numbering), backward in reverse id order,
// summing the gradients that reach a node from several consumers. Each tied_linear node
// is bound to its owner's parameter ("tied_to", "tied_parameter"), so the shared weight
// receives both gradients and, listed once by parameters(), is stepped once. The runtime
// proper lives in runs/.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "interplace/kernels/layer.hpp"
#include "interplace/placement/graph.hpp"

namespace interplace::placement::testing {

class GraphExecutor {
 public:
  // Instantiates and initialises (one Rng(seed), id order) every layer; the graph must
  // have one sink, its last node.
  GraphExecutor(Graph graph, uint64_t seed);

  // Inputs by input-node name, or one tensor per input node in id order. Returns the
  // output of the last node.
  kernels::Tensor forward(const std::map<std::string, kernels::Tensor>& inputs);
  kernels::Tensor forward(const std::vector<kernels::Tensor>& inputs);
  // Back-propagates the gradient of the last forward's output into the parameters.
  void backward(const kernels::Tensor& grad_output);
  // Gradient of the index-th input node (id order) from the last backward.
  const kernels::Tensor& input_gradient(size_t index) const;
  const kernels::Tensor& output(NodeId id) const { return outputs_.at(static_cast<size_t>(id)); }

  // Every trainable parameter once (tied heads own none).
  std::vector<kernels::Parameter*> parameters();
  void zero_grad();
  kernels::Layer& layer(std::string_view node_name);
  const Graph& graph() const { return graph_; }

 private:
  Graph graph_;
  std::vector<std::unique_ptr<kernels::Layer>> layers_;  // null for input nodes
  std::vector<NodeId> input_nodes_;
  std::vector<kernels::Context> contexts_;
  std::vector<kernels::Tensor> outputs_;
  std::vector<kernels::Tensor> gradients_;
};

}  // namespace interplace::placement::testing
