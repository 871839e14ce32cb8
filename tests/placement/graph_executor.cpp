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
    : graph_(std::move(graph)), contexts_(static_cast<size_t>(graph_.node_count())) {
  if (graph_.sinks() != std::vector<NodeId>{graph_.node_count() - 1}) {
    throw std::runtime_error("GraphExecutor: the graph's only sink must be its last node");
  }
  kernels::Rng rng(seed);
  for (const Node& node : graph_.nodes()) {
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
  std::vector<Tensor> outputs(static_cast<size_t>(graph_.node_count()));
  for (const Node& node : graph_.nodes()) {
    const auto id = static_cast<size_t>(node.id);
    if (node.op == "input") {
      outputs[id] = inputs.at(node.name);
      continue;
    }
    std::vector<Tensor> args;
    for (NodeId input : node.inputs) args.push_back(outputs[static_cast<size_t>(input)]);
    outputs[id] = layers_[id]->forward(args, contexts_[id]);
  }
  return outputs.back();
}

void GraphExecutor::backward(const Tensor& grad_output) {
  kernels::Backend& backend = kernels::backend_for(grad_output.device());
  std::vector<Tensor> grads(static_cast<size_t>(graph_.node_count()));
  grads.back() = grad_output;
  for (NodeId id = graph_.node_count() - 1; id >= 0; --id) {
    const Node& node = graph_.node(id);
    Tensor& grad = grads[static_cast<size_t>(id)];
    if (node.op == "input" || !grad.defined()) continue;
    const std::vector<Tensor> input_grads =
        layers_[static_cast<size_t>(id)]->backward(grad, contexts_[static_cast<size_t>(id)]);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (!input_grads[i].defined()) continue;  // token ids
      Tensor& target = grads[static_cast<size_t>(node.inputs[i])];
      if (!target.defined()) {
        target = input_grads[i];
      } else {
        // A fresh sum: either tensor may share storage with another gradient (Add passes
        // its output gradient through).
        Tensor sum = target.clone();
        backend.axpy(1.0f, input_grads[i], sum);
        target = sum;
      }
    }
    grad = Tensor();  // consumed
  }
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
