// A single-process executor of zoo graphs, for tests only: every node becomes its kernel
// layer (make_layer); forward runs in id order (the builders' topological numbering),
// backward in reverse id order, summing the gradients that reach a node from several
// consumers. Each tied_linear node is bound to its owner's parameter ("tied_to",
// "tied_parameter"), so the shared weight receives both gradients and, listed once by
// parameters(), is stepped once. The runtime proper lives in runs/.
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
  // Instantiates and initialises (seeded) every layer; the graph must have one sink, its
  // last node.
  GraphExecutor(Graph graph, uint64_t seed);

  // `inputs` maps each input node's name to a tensor of its shape; returns the output of
  // the last node.
  kernels::Tensor forward(const std::map<std::string, kernels::Tensor>& inputs);
  // Back-propagates the gradient of the last forward's output into the parameters.
  void backward(const kernels::Tensor& grad_output);

  // Every trainable parameter once (tied heads own none).
  std::vector<kernels::Parameter*> parameters();
  void zero_grad();
  kernels::Layer& layer(std::string_view node_name);
  const Graph& graph() const { return graph_; }

 private:
  Graph graph_;
  std::vector<std::unique_ptr<kernels::Layer>> layers_;  // null for input nodes
  std::vector<kernels::Context> contexts_;
};

}  // namespace interplace::placement::testing
