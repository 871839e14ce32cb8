#include "graph_executor.hpp"

#include <stdexcept>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layers/tied_linear.hpp"
#include "interplace/placement/layer_factory.hpp"

namespace interplace::placement::testing {

namespace {

using kernels::Parameter;
using kernels::Tensor;

const std::string& text_attribute(const Node& node, const std::string& key) {
  return std::get<std::string>(node.attributes.at(key));
}

Parameter& named_parameter(kernels::Layer& layer, const std::string& name) {
  for (Parameter* p : layer.parameters()) {
    if (p->name == name) return *p;
  }
  throw std::runtime_error(layer.type() + " has no parameter " + name);
}

}  // namespace

GraphExecutor::GraphExecutor(Graph graph, uint64_t seed)
    : graph_(std::move(graph)),
      contexts_(static_cast<size_t>(graph_.node_count())),
      outputs_(static_cast<size_t>(graph_.node_count())),
      gradients_(static_cast<size_t>(graph_.node_count())) {
  if (graph_.sinks() != std::vector<NodeId>{graph_.node_count() - 1}) {
    throw std::runtime_error("GraphExecutor: the graph's only sink must be its last node");
  }
  kernels::Rng rng(seed);
  for (const Node& node : graph_.nodes()) {
    if (node.op == "input") input_nodes_.push_back(node.id);
    layers_.push_back(node.op == "input" ? nullptr : make_layer(node));
    if (layers_.back()) layers_.back()->init_parameters(rng);
  }
  for (const Node& node : graph_.nodes()) {
    if (node.op != "tied_linear") continue;
    const NodeId owner = graph_.id_of(text_attribute(node, "tied_to"));
    auto& head = dynamic_cast<kernels::TiedLinear&>(*layers_[static_cast<size_t>(node.id)]);
    head.bind(named_parameter(*layers_[static_cast<size_t>(owner)],
                              text_attribute(node, "tied_parameter")));
  }
}

Tensor GraphExecutor::forward(const std::map<std::string, Tensor>& inputs) {
  std::vector<Tensor> ordered;
  for (NodeId id : input_nodes_) ordered.push_back(inputs.at(graph_.node(id).name));
  return forward(ordered);
}

Tensor GraphExecutor::forward(const std::vector<Tensor>& inputs) {
  if (inputs.size() != input_nodes_.size()) {
    throw std::invalid_argument("GraphExecutor: " + std::to_string(input_nodes_.size()) +
                                " inputs expected, got " + std::to_string(inputs.size()));
  }
  size_t next_input = 0;
  for (const Node& node : graph_.nodes()) {
    const auto id = static_cast<size_t>(node.id);
    if (!layers_[id]) {
      outputs_[id] = inputs[next_input++];
      continue;
    }
    std::vector<Tensor> args;
    for (NodeId input : node.inputs) args.push_back(outputs_[static_cast<size_t>(input)]);
    outputs_[id] = layers_[id]->forward(args, contexts_[id]);
  }
  return outputs_.back();
}

void GraphExecutor::backward(const Tensor& grad_output) {
  kernels::Backend& backend = kernels::backend_for(grad_output.device());
  for (Tensor& g : gradients_) g = Tensor();
  gradients_.back() = grad_output;
  for (NodeId id = graph_.node_count() - 1; id >= 0; --id) {
    const auto index = static_cast<size_t>(id);
    if (!layers_[index] || !gradients_[index].defined()) continue;  // inputs; off the path
    const std::vector<Tensor> input_grads =
        layers_[index]->backward(gradients_[index], contexts_[index]);
    const std::vector<NodeId>& inputs = graph_.node(id).inputs;
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (!input_grads[k].defined()) continue;  // token ids
      Tensor& sum = gradients_[static_cast<size_t>(inputs[k])];
      if (!sum.defined()) {
        sum = input_grads[k];
        continue;
      }
      // A fresh tensor: a layer may hand back views of its own gradient (Flatten, Add).
      Tensor total(sum.shape(), sum.device());
      backend.add(sum, input_grads[k], total);
      sum = total;
    }
  }
}

const Tensor& GraphExecutor::input_gradient(size_t index) const {
  return gradients_.at(static_cast<size_t>(input_nodes_.at(index)));
}

std::vector<Parameter*> GraphExecutor::parameters() {
  std::vector<Parameter*> all;
  for (auto& layer : layers_) {
    if (!layer) continue;
    for (Parameter* p : layer->parameters()) all.push_back(p);
  }
  return all;
}

void GraphExecutor::zero_grad() {
  for (auto& layer : layers_) {
    if (layer) layer->zero_grad();
  }
}

kernels::Layer& GraphExecutor::layer(std::string_view node_name) {
  return *layers_.at(static_cast<size_t>(graph_.id_of(node_name)));
}

}  // namespace interplace::placement::testing
