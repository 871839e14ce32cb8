#include "graph_executor.hpp"

#include <stdexcept>
#include <string>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/random.hpp"
#include "interplace/placement/layer_factory.hpp"

namespace interplace::placement::testing {

using kernels::Tensor;

GraphExecutor::GraphExecutor(const Graph& graph, uint64_t seed)
    : graph_(graph),
      contexts_(static_cast<size_t>(graph.node_count())),
      outputs_(static_cast<size_t>(graph.node_count())),
      gradients_(static_cast<size_t>(graph.node_count())) {
  kernels::Rng rng(seed);
  for (const Node& node : graph.nodes()) {
    if (node.op == "input") {
      layers_.push_back(nullptr);
      input_nodes_.push_back(node.id);
      continue;
    }
    layers_.push_back(make_layer(node));
    layers_.back()->init_parameters(rng);
  }
}

Tensor GraphExecutor::forward(const std::vector<Tensor>& inputs) {
  if (inputs.size() != input_nodes_.size()) {
    throw std::invalid_argument("GraphExecutor: " + std::to_string(input_nodes_.size()) +
                                " inputs expected, got " + std::to_string(inputs.size()));
  }
  size_t next_input = 0;
  for (const Node& node : graph_.nodes()) {
    if (!layers_[node.id]) {
      outputs_[node.id] = inputs[next_input++];
      continue;
    }
    std::vector<Tensor> args;
    for (NodeId in : node.inputs) args.push_back(outputs_[in]);
    outputs_[node.id] = layers_[node.id]->forward(args, contexts_[node.id]);
  }
  return outputs_.back();
}

void GraphExecutor::backward(const Tensor& grad_output) {
  kernels::Backend& backend = kernels::backend_for(grad_output.device());
  for (Tensor& g : gradients_) g = Tensor();
  gradients_.back() = grad_output;
  for (NodeId id = graph_.node_count() - 1; id >= 0; --id) {
    if (!layers_[id] || !gradients_[id].defined()) continue;  // inputs; off the loss's path
    const std::vector<Tensor> grads = layers_[id]->backward(gradients_[id], contexts_[id]);
    const std::vector<NodeId>& inputs = graph_.node(id).inputs;
    for (size_t k = 0; k < inputs.size(); ++k) {
      Tensor& sum = gradients_[inputs[k]];
      if (!sum.defined()) {
        sum = grads[k];
        continue;
      }
      // A fresh tensor: a layer may hand back views of its own gradient (Flatten, Add).
      Tensor total(sum.shape(), sum.device());
      backend.add(sum, grads[k], total);
      sum = total;
    }
  }
}

const Tensor& GraphExecutor::input_gradient(size_t index) const {
  return gradients_.at(input_nodes_.at(index));
}

std::vector<kernels::Parameter*> GraphExecutor::parameters() {
  std::vector<kernels::Parameter*> all;
  for (auto& layer : layers_) {
    if (!layer) continue;
    for (kernels::Parameter* p : layer->parameters()) all.push_back(p);
  }
  return all;
}

}  // namespace interplace::placement::testing
