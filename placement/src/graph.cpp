#include "interplace/placement/graph.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "interplace/kernels/error.hpp"

namespace interplace::placement {
namespace {

bool has_control_character(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

void require_non_negative(int64_t value, const char* what, const std::string& node) {
  if (value < 0) {
    throw_invalid("node '" + node + "': " + what + " must be >= 0, got " + std::to_string(value));
  }
}

void validate_spec(const NodeSpec& spec, int node_count) {
  if (spec.name.empty()) throw_invalid("node name must not be empty");
  if (has_control_character(spec.name)) {
    throw_invalid("node name '" + spec.name + "' contains a control character");
  }
  if (spec.op.empty()) throw_invalid("node '" + spec.name + "': op type must not be empty");
  for (NodeId input : spec.inputs) {
    if (input < 0 || input >= node_count) {
      throw_invalid("node '" + spec.name + "': input id " + std::to_string(input) +
                    " does not exist (the graph has " + std::to_string(node_count) +
                    " nodes; add inputs before their consumers)");
    }
  }
  for (int64_t extent : spec.output_shape) require_non_negative(extent, "shape extent", spec.name);
  require_non_negative(spec.forward_flops, "forward_flops", spec.name);
  require_non_negative(spec.backward_flops, "backward_flops", spec.name);
  require_non_negative(spec.parameter_grad_flops, "parameter_grad_flops", spec.name);
  if (spec.parameter_grad_flops > spec.backward_flops) {
    throw_invalid("node '" + spec.name + "': parameter_grad_flops " +
                  std::to_string(spec.parameter_grad_flops) + " exceed backward_flops " +
                  std::to_string(spec.backward_flops));
  }
  require_non_negative(spec.parameter_count, "parameter_count", spec.name);
  if (spec.output_bytes) require_non_negative(*spec.output_bytes, "output_bytes", spec.name);
  for (const char c : spec.module) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      throw_invalid("node '" + spec.name + "': module contains a control character");
    }
  }
  for (const auto& [key, value] : spec.attributes) {
    if (key.empty()) throw_invalid("node '" + spec.name + "': attribute name must not be empty");
    if (const double* number = std::get_if<double>(&value); number && !std::isfinite(*number)) {
      throw_invalid("node '" + spec.name + "': attribute '" + key + "' is not finite");
    }
  }
}

}  // namespace

Graph::Graph(std::string name, int64_t batch_size)
    : name_(std::move(name)), batch_size_(batch_size) {
  if (batch_size < 1) throw_invalid("batch size must be >= 1, got " + std::to_string(batch_size));
}

NodeId Graph::add_node(NodeSpec spec) {
  validate_spec(spec, node_count());
  if (id_by_name_.count(spec.name) != 0) {
    throw_invalid("duplicate node name '" + spec.name + "' (already node " +
                  std::to_string(id_by_name_.find(spec.name)->second) + ")");
  }
  const NodeId id = node_count();
  Node node;
  node.id = id;
  node.name = std::move(spec.name);
  node.op = std::move(spec.op);
  node.attributes = std::move(spec.attributes);
  node.module = std::move(spec.module);
  node.output_shape = std::move(spec.output_shape);
  node.forward_flops = spec.forward_flops;
  node.backward_flops = spec.backward_flops;
  node.parameter_grad_flops = spec.parameter_grad_flops;
  node.parameter_count = spec.parameter_count;
  node.output_bytes = spec.output_bytes.value_or(kernels::numel(node.output_shape) *
                                                 static_cast<int64_t>(sizeof(float)));
  node.inputs = std::move(spec.inputs);
  for (NodeId input : node.inputs) {
    if (std::find(node.predecessors.begin(), node.predecessors.end(), input) !=
        node.predecessors.end()) {
      continue;
    }
    node.predecessors.push_back(input);
    nodes_[input].successors.push_back(id);
    ++edge_count_;
  }
  id_by_name_.emplace(node.name, id);
  nodes_.push_back(std::move(node));
  return id;
}

const Node& Graph::node(NodeId id) const {
  if (id < 0 || id >= node_count()) {
    throw_invalid("node id " + std::to_string(id) + " does not exist (valid ids: 0.." +
                  std::to_string(node_count() - 1) + ")");
  }
  return nodes_[id];
}

std::optional<NodeId> Graph::find(std::string_view name) const {
  const auto it = id_by_name_.find(name);
  if (it == id_by_name_.end()) return std::nullopt;
  return it->second;
}

NodeId Graph::id_of(std::string_view name) const {
  const auto id = find(name);
  if (!id) throw_invalid("graph '" + name_ + "' has no node named '" + std::string(name) + "'");
  return *id;
}

std::vector<NodeId> Graph::sources() const {
  std::vector<NodeId> ids;
  for (const Node& n : nodes_) {
    if (n.predecessors.empty()) ids.push_back(n.id);
  }
  return ids;
}

std::vector<NodeId> Graph::sinks() const {
  std::vector<NodeId> ids;
  for (const Node& n : nodes_) {
    if (n.successors.empty()) ids.push_back(n.id);
  }
  return ids;
}

int64_t Graph::total_parameter_count() const {
  int64_t total = 0;
  for (const Node& n : nodes_) total += n.parameter_count;
  return total;
}

int64_t Graph::total_forward_flops() const {
  int64_t total = 0;
  for (const Node& n : nodes_) total += n.forward_flops;
  return total;
}

int64_t Graph::total_backward_flops() const {
  int64_t total = 0;
  for (const Node& n : nodes_) total += n.backward_flops;
  return total;
}

std::string to_string(const AttributeValue& value) {
  if (const auto* integer = std::get_if<int64_t>(&value)) return std::to_string(*integer);
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  std::ostringstream out;
  out.precision(17);
  out << std::get<double>(value);
  return out.str();
}

}  // namespace interplace::placement
