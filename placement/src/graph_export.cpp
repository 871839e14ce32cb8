#include "interplace/placement/graph_export.hpp"

#include <algorithm>
#include <string_view>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/graph_file.hpp"
#include "interplace/placement/json_text.hpp"

namespace interplace::placement {
namespace {

using detail::json_number;
using detail::json_quote;

template <typename T>
std::string json_int_array(const std::vector<T>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(values[i]);
  }
  return out + "]";
}

std::string json_attributes(const Attributes& attributes) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : attributes) {
    if (!first) out += ", ";
    first = false;
    out += json_quote(key) + ": ";
    if (const auto* integer = std::get_if<int64_t>(&value)) {
      out += std::to_string(*integer);
    } else if (const auto* number = std::get_if<double>(&value)) {
      out += json_number(*number);
    } else {
      out += json_quote(std::get<std::string>(value));
    }
  }
  return out + "}";
}

// A DOT double-quoted ID: only '"' and '\' need escaping; newlines become \n escapes.
std::string dot_quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out + "\"";
}

}  // namespace

std::string to_json(const Graph& graph, std::string_view family) {
  std::string out = "{\"format\": " + json_quote(kGraphFormatName) +
                    ", \"format_version\": " + std::to_string(kGraphFormatVersion) +
                    ", \"name\": " + json_quote(graph.name()) +
                    (family.empty() ? "" : ", \"family\": " + json_quote(family)) +
                    ", \"batch_size\": " + std::to_string(graph.batch_size()) +
                    ", \"node_count\": " + std::to_string(graph.node_count()) +
                    ", \"edge_count\": " + std::to_string(graph.edge_count()) + ",\n \"nodes\": [";
  for (const Node& node : graph.nodes()) {
    if (node.id > 0) out += ",";
    out += "\n  {\"id\": " + std::to_string(node.id) + ", \"name\": " + json_quote(node.name) +
           ", \"op\": " + json_quote(node.op) + ", \"inputs\": " + json_int_array(node.inputs) +
           ", \"successors\": " + json_int_array(node.successors) +
           ", \"output_shape\": " + json_int_array(node.output_shape) +
           ", \"forward_flops\": " + std::to_string(node.forward_flops) +
           ", \"backward_flops\": " + std::to_string(node.backward_flops) +
           ", \"parameter_grad_flops\": " + std::to_string(node.parameter_grad_flops) +
           ", \"parameter_count\": " + std::to_string(node.parameter_count) +
           ", \"output_bytes\": " + std::to_string(node.output_bytes) +
           ", \"attributes\": " + json_attributes(node.attributes) +
           (node.module.empty() ? "" : ", \"module\": " + json_quote(node.module)) + "}";
  }
  out += "\n ],\n \"edges\": [";
  bool first = true;
  for (const Node& node : graph.nodes()) {
    for (NodeId consumer : node.successors) {
      out += first ? "" : ", ";
      first = false;
      out += "[";
      out += std::to_string(node.id) + ", " + std::to_string(consumer) + "]";
    }
  }
  return out + "]}\n";
}

std::string to_dot(const Graph& graph, const std::vector<int>& device_of_node) {
  if (!device_of_node.empty() && static_cast<int>(device_of_node.size()) != graph.node_count()) {
    throw_invalid("DOT export: placement has " + std::to_string(device_of_node.size()) +
                  " entries for a graph of " + std::to_string(graph.node_count()) + " nodes");
  }
  auto node_line = [&](const Node& node) {
    const std::string label =
        node.name + "\n" + node.op + " " + kernels::to_string(node.output_shape);
    return "  n" + std::to_string(node.id) + " [label=" + dot_quote(label) + "];\n";
  };
  std::string out = "digraph " + dot_quote(graph.name()) + " {\n  node [shape=box];\n";
  if (device_of_node.empty()) {
    for (const Node& node : graph.nodes()) out += node_line(node);
  } else {
    int device_count = 0;
    for (int device : device_of_node) {
      if (device < 0) throw_invalid("DOT export: negative device " + std::to_string(device));
      device_count = std::max(device_count, device + 1);
    }
    for (int device = 0; device < device_count; ++device) {
      out += " subgraph cluster_device" + std::to_string(device) +
             " {\n  label=" + dot_quote("device " + std::to_string(device)) + ";\n";
      for (const Node& node : graph.nodes()) {
        if (device_of_node[node.id] == device) out += node_line(node);
      }
      out += " }\n";
    }
  }
  for (const Node& node : graph.nodes()) {
    for (NodeId consumer : node.successors) {
      out += "  n" + std::to_string(node.id) + " -> n" + std::to_string(consumer) + ";\n";
    }
  }
  return out + "}\n";
}

}  // namespace interplace::placement
