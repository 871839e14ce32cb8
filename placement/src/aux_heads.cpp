#include "interplace/placement/aux_heads.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/shapes_only.hpp"
#include "interplace/placement/layer_factory.hpp"

namespace interplace::placement {
namespace {

// Adds a layer whose shape, FLOPs and parameters come from the kernel layer itself.
NodeId add_layer(Graph& head, const std::string& name, const std::string& op, Attributes attributes,
                 NodeId input) {
  const kernels::ShapesOnlyScope shapes_only;  // planning: no weights (kernels/shapes_only.hpp)
  const auto layer = make_layer(op, attributes);
  const std::vector<kernels::Shape> input_shapes = {head.node(input).output_shape};
  const kernels::FlopCount flops = layer->flops(input_shapes);
  NodeSpec spec;
  spec.name = name;
  spec.op = op;
  spec.inputs = {input};
  spec.output_shape = layer->output_shape(input_shapes);
  spec.forward_flops = flops.forward_flops;
  spec.backward_flops = flops.backward_flops;
  spec.parameter_count = layer->parameter_count();
  spec.attributes = std::move(attributes);
  return head.add_node(std::move(spec));
}

// What a head layer's time is calibrated by: its op, with grouped convolutions apart.
std::string calibration_kind(const Node& node) {
  const auto groups = node.attributes.find("groups");
  if (node.op == "conv2d" && groups != node.attributes.end() &&
      std::holds_alternative<int64_t>(groups->second) && std::get<int64_t>(groups->second) > 1) {
    return node.op + "/grouped";
  }
  return node.op;
}

int64_t scaled(int64_t channels, double multiplier) {
  return std::max<int64_t>(1, std::llround(static_cast<double>(channels) * multiplier));
}

}  // namespace

const std::vector<std::string>& aux_head_width_names() {
  static const std::vector<std::string> names = {"study", "capped", "proportional"};
  return names;
}

AuxHeadWidth aux_head_width_by_name(const std::string& name) {
  const auto& names = aux_head_width_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<AuxHeadWidth>(i);
  }
  throw_invalid("unknown auxiliary head width '" + name + "' (valid: study, capped, proportional)");
}

const std::string& to_string(AuxHeadWidth width) {
  return aux_head_width_names()[static_cast<size_t>(width)];
}

Graph aux_head_graph(const Graph& graph, NodeId boundary, const AuxHeadOptions& options) {
  const Node& from = graph.node(boundary);
  const std::vector<NodeId> sinks = graph.sinks();
  if (sinks.empty()) throw_invalid("graph '" + graph.name() + "' has no output");
  const int64_t classes = graph.node(sinks.back()).output_shape.back();
  Graph head(graph.name() + ".aux." + from.name, graph.batch_size());
  NodeSpec input;
  input.name = "aux.input";
  input.op = "input";
  input.output_shape = from.output_shape;
  input.output_bytes = from.output_bytes;
  NodeId x = head.add_node(std::move(input));
  const kernels::Shape& shape = from.output_shape;
  if (shape.size() == 4) {
    int64_t channels = shape[1];
    int64_t c1 = scaled(options.hidden_channels, options.width_multiplier);
    int64_t c2 = scaled(options.head_channels, options.width_multiplier);
    if (options.width == AuxHeadWidth::capped) {
      c1 = std::min(c1, channels);
      c2 = std::min(c2, channels);
    } else if (options.width == AuxHeadWidth::proportional) {
      c1 = 2 * channels;
      c2 = channels;
    }
    int index = 1;
    for (int64_t out : {c1, c2}) {
      const std::string n = std::to_string(index++);
      x = add_layer(head, "aux.conv" + n, "conv2d",
                    {{"in_channels", channels},
                     {"out_channels", out},
                     {"kernel", int64_t{3}},
                     {"padding", int64_t{1}},
                     {"bias", int64_t{1}}},  // as the study's nn.Conv2d
                    x);
      x = add_layer(head, "aux.bn" + n, "batch_norm", {{"channels", out}}, x);
      x = add_layer(head, "aux.relu" + n, "relu", {}, x);
      channels = out;
    }
    x = add_layer(head, "aux.avgpool", "global_avg_pool", {}, x);
    add_layer(head, "aux.fc", "linear", {{"in_features", channels}, {"out_features", classes}}, x);
  } else if (shape.size() == 3) {
    x = add_layer(head, "aux.ln", "layer_norm", {{"features", shape[2]}}, x);
    // A network that classifies whole sequences ([N, classes] out, BERT's pooler) is
    // trained on one label per sequence: the head reads the first token, as its pooler.
    if (graph.node(sinks.back()).output_shape.size() == 2) {
      x = add_layer(head, "aux.select", "select_token", {{"index", int64_t{0}}}, x);
    }
    add_layer(head, "aux.fc", "linear", {{"in_features", shape[2]}, {"out_features", classes}}, x);
  } else if (shape.size() == 2) {
    add_layer(head, "aux.fc", "linear", {{"in_features", shape[1]}, {"out_features", classes}}, x);
  } else {
    throw_invalid("no auxiliary head for boundary tensor '" + from.name + "' of shape " +
                  kernels::to_string(shape) + " (heads read [N,C,H,W], [N,T,D] or [N,F])");
  }
  return head;
}

HeadCalibration::Ratio HeadCalibration::of(const Node& node) const {
  if (const auto it = by_kind.find(calibration_kind(node)); it != by_kind.end()) return it->second;
  if (const auto it = by_kind.find(""); it != by_kind.end()) return it->second;
  return {};
}

HeadCalibration head_calibration(const Graph& graph, const NodeCosts& costs,
                                 const CostModel& cost_model) {
  HeadCalibration calibration;
  if (!cost_model.profile()) return calibration;
  const CostModel roofline(cost_model.device(), cost_model.link(), cost_model.optimizer());
  const NodeCosts ideal = roofline.node_costs(graph);
  struct Sums {
    double forward = 0.0, backward = 0.0, ideal_forward = 0.0, ideal_backward = 0.0;
  };
  std::map<std::string, Sums> sums;
  for (const Node& node : graph.nodes()) {
    if (node.op == "input") continue;
    for (const std::string& key : {calibration_kind(node), std::string()}) {
      Sums& s = sums[key];
      s.forward += costs.forward_s[node.id];
      s.backward += costs.backward_s[node.id];
      s.ideal_forward += ideal.forward_s[node.id];
      s.ideal_backward += ideal.backward_s[node.id];
    }
  }
  for (const auto& [kind, s] : sums) {
    // An op the roofline prices at 0 (or a profile at 0) gives no usable ratio.
    if (s.ideal_forward > 0.0 && s.ideal_backward > 0.0 && s.forward > 0.0 && s.backward > 0.0) {
      calibration.by_kind[kind] = {s.forward / s.ideal_forward, s.backward / s.ideal_backward};
    }
  }
  return calibration;
}

std::string aux_head_key(const Graph& head) {
  std::string key;
  for (const Node& node : head.nodes()) {
    if (node.op == "input") continue;
    if (!key.empty()) key += '|';
    key += node.op;
    char separator = ' ';
    for (int64_t extent : node.output_shape) {
      key += separator;
      key += std::to_string(extent);
      separator = 'x';
    }
  }
  return key;
}

std::map<std::string, Graph> distinct_aux_heads(const Graph& graph, const AuxHeadOptions& options) {
  std::map<std::string, Graph> heads;
  for (const Node& node : graph.nodes()) {
    const size_t rank = node.output_shape.size();
    if (node.op == "input" || rank < 2 || rank > 4) continue;
    Graph head = aux_head_graph(graph, node.id, options);
    std::string key = aux_head_key(head);
    heads.emplace(std::move(key), std::move(head));
  }
  return heads;
}

AuxHeadCosts aux_head_costs(const Graph& head, const CostModel& cost_model,
                            const HeadCalibration& calibration) {
  AuxHeadCosts total;
  for (const Node& node : head.nodes()) {
    total.parameter_count += node.parameter_count;
    if (node.op != "input") total.activation_bytes += node.output_bytes;
  }
  // A head the profile timed: its measured sums (the runtime runs the same layers).
  if (const auto& profile = cost_model.profile()) {
    const auto measured = profile->aux_heads.find(aux_head_key(head));
    if (measured != profile->aux_heads.end()) {
      total.forward_s = measured->second.first;
      total.backward_s = measured->second.second;
      return total;
    }
  }
  const CostModel roofline(cost_model.device(), cost_model.link(), cost_model.optimizer());
  const NodeCosts costs = roofline.node_costs(head);
  for (const Node& node : head.nodes()) {
    if (node.op == "input") continue;
    const HeadCalibration::Ratio ratio = calibration.of(node);
    total.forward_s += costs.forward_s[node.id] * ratio.forward;
    total.backward_s += costs.backward_s[node.id] * ratio.backward;
  }
  return total;
}

}  // namespace interplace::placement
