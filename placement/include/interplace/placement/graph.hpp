// The graph IR: a DAG of layer nodes built for one batch size. Builders add a node after
// its inputs, so ids are dense (0..n-1) and already a topological numbering; add_node
// enforces it by taking the ids of inputs that must already exist, which also makes
// cycles impossible to build.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "interplace/kernels/tensor.hpp"

namespace interplace::placement {

using NodeId = int32_t;
using kernels::Shape;

// Attribute values are exported as JSON numbers or strings; doubles must be finite.
using AttributeValue = std::variant<int64_t, double, std::string>;
using Attributes = std::map<std::string, AttributeValue>;

// What a builder passes to Graph::add_node.
struct NodeSpec {
  std::string name;            // unique, hierarchical: "layer2.1.conv1"
  std::string op;              // op type: "conv2d", "linear", "add", ...
  std::vector<NodeId> inputs;  // in argument order; may repeat (x + x)
  Shape output_shape;          // includes the batch dimension
  int64_t forward_flops = 0;
  int64_t backward_flops = 0;  // input gradient plus parameter gradients
  // The part of backward_flops for parameter gradients, which a pass that only carries the
  // gradient through (interlocking backpropagation) skips; <= backward_flops.
  int64_t parameter_grad_flops = 0;
  int64_t parameter_count = 0;
  // Bytes of the output activation; when unset, fp32 elements of output_shape.
  std::optional<int64_t> output_bytes;
  Attributes attributes;
  // The module path (FQN) of the network's source the node came from ("encoder.layers.0.mlp";
  // graph files' "module", written by the importers); empty when none. A cut between nodes
  // of different modules is a module boundary: a split point the source framework can take.
  std::string module;
};

struct Node {
  NodeId id = 0;
  std::string name;
  std::string op;
  Attributes attributes;
  std::string module;  // NodeSpec::module
  Shape output_shape;
  int64_t forward_flops = 0;
  int64_t backward_flops = 0;
  int64_t parameter_grad_flops = 0;  // of backward_flops
  int64_t parameter_count = 0;
  int64_t output_bytes = 0;
  std::vector<NodeId> inputs;        // argument order, repeats kept
  std::vector<NodeId> predecessors;  // distinct producers, in order of first appearance
  std::vector<NodeId> successors;    // distinct consumers, in the order their edges were added
};

class Graph {
 public:
  // `batch_size` is the batch dimension the node shapes, FLOPs and bytes were built for
  // (one micro-batch: the unit of work of schedules and the simulator).
  explicit Graph(std::string name = "graph", int64_t batch_size = 1);

  // Validates the spec (non-empty name without control characters, unique; non-empty op;
  // existing input ids; non-negative shape, FLOPs, counts and bytes; finite attribute
  // doubles) and returns the new node's id, which is node_count() before the call.
  NodeId add_node(NodeSpec spec);

  const std::string& name() const { return name_; }
  int64_t batch_size() const { return batch_size_; }
  int node_count() const { return static_cast<int>(nodes_.size()); }
  // Distinct producer -> consumer pairs.
  int64_t edge_count() const { return edge_count_; }

  const std::vector<Node>& nodes() const { return nodes_; }
  // Throws invalid_input for an id outside 0..node_count()-1.
  const Node& node(NodeId id) const;
  std::optional<NodeId> find(std::string_view name) const;
  // Throws invalid_input naming the unknown node.
  NodeId id_of(std::string_view name) const;

  std::vector<NodeId> sources() const;  // nodes without inputs, ascending id
  std::vector<NodeId> sinks() const;    // nodes without successors, ascending id

  int64_t total_parameter_count() const;
  int64_t total_forward_flops() const;
  int64_t total_backward_flops() const;

 private:
  std::string name_;
  int64_t batch_size_;
  std::vector<Node> nodes_;
  std::map<std::string, NodeId, std::less<>> id_by_name_;
  int64_t edge_count_ = 0;
};

std::string to_string(const AttributeValue& value);

}  // namespace interplace::placement
