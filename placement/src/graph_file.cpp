#include "interplace/placement/graph_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <queue>
#include <set>
#include <sstream>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/input_file.hpp"
#include "interplace/kernels/shapes_only.hpp"
#include "interplace/placement/graph_export.hpp"
#include "interplace/placement/layer_factory.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::placement {
namespace {

using Json = nlohmann::json;
using L = GraphFileLimits;

// The deepest nesting of arrays and objects, found without parsing (strings skipped, escapes
// honoured): refused before the parser recurses into it. Returns the byte offset where the
// limit was passed, or npos.
size_t nesting_past_limit(std::string_view text, int limit, int& depth_seen) {
  int depth = 0;
  bool in_string = false;
  depth_seen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      depth_seen = std::max(depth_seen, ++depth);
      if (depth > limit) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

int line_of(std::string_view text, size_t offset) {
  return 1 + static_cast<int>(std::count(
                 text.begin(),
                 text.begin() + static_cast<std::ptrdiff_t>(std::min(offset, text.size())), '\n'));
}

bool has_control_character(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// Reads the members of one JSON object with errors that say where (`where`: "node 'x'").
class Fields {
 public:
  Fields(const Json& object, std::string where, std::string_view source)
      : object_(object), where_(std::move(where)), source_(source) {
    if (!object.is_object()) fail("must be a JSON object");
  }

  [[noreturn]] void fail(const std::string& message) const {
    throw_invalid("graph file " + std::string(source_) + ": " + where_ + ": " + message);
  }

  void only(std::initializer_list<std::string_view> known) const {
    for (const auto& [key, value] : object_.items()) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        std::string valid;
        for (std::string_view k : known) valid += (valid.empty() ? "" : ", ") + std::string(k);
        fail("unknown key '" + printable(key) + "' (valid: " + valid + ")");
      }
    }
  }

  bool has(const char* key) const { return object_.contains(key); }
  const Json& at(const char* key) const {
    const auto it = object_.find(key);
    if (it == object_.end()) fail(std::string("missing key '") + key + "'");
    return *it;
  }

  int64_t integer(const char* key, int64_t low, int64_t high) const {
    return checked_integer(at(key), key, low, high);
  }
  int64_t integer(const char* key, int64_t low, int64_t high, int64_t fallback) const {
    return has(key) ? integer(key, low, high) : fallback;
  }
  int64_t checked_integer(const Json& value, const std::string& what, int64_t low,
                          int64_t high) const {
    if (value.is_number_integer() && !value.is_number_unsigned()) {
      const auto v = value.get<int64_t>();
      if (v < low || v > high) {
        fail(what + " must be in " + std::to_string(low) + ".." + std::to_string(high) + ", got " +
             std::to_string(v));
      }
      return v;
    }
    if (value.is_number_unsigned()) {
      const auto v = value.get<uint64_t>();
      if (v > static_cast<uint64_t>(high) || (low > 0 && v < static_cast<uint64_t>(low))) {
        fail(what + " must be in " + std::to_string(low) + ".." + std::to_string(high) + ", got " +
             std::to_string(v));
      }
      return static_cast<int64_t>(v);
    }
    if (value.is_number_float()) {
      const double v = value.get<double>();
      if (!std::isfinite(v)) fail(what + " must be a finite integer, got " + value.dump());
      if (v < 0) fail(what + " must be >= 0, got " + value.dump());
      fail(what + " must be an integer, got " + value.dump());
    }
    fail(what + " must be an integer, got " + kind(value));
  }
  std::string text(const char* key) const {
    const Json& value = at(key);
    if (!value.is_string()) fail(std::string(key) + " must be a string, got " + kind(value));
    const auto& s = value.get_ref<const std::string&>();
    if (static_cast<int64_t>(s.size()) > L::max_name_bytes) {
      fail(std::string(key) + " is " + std::to_string(s.size()) + " bytes, more than " +
           std::to_string(L::max_name_bytes));
    }
    return s;
  }
  const Json& array(const char* key, int64_t max_size) const {
    const Json& value = at(key);
    if (!value.is_array()) fail(std::string(key) + " must be an array, got " + kind(value));
    if (static_cast<int64_t>(value.size()) > max_size) {
      fail(std::string(key) + " has " + std::to_string(value.size()) + " entries, more than " +
           std::to_string(max_size));
    }
    return value;
  }

  static std::string kind(const Json& value) {
    return value.is_null() ? "null" : std::string(value.type_name()) + " " + shorten(value.dump());
  }
  static std::string shorten(const std::string& text) {
    return text.size() > 40 ? text.substr(0, 37) + "..." : text;
  }
  static std::string printable(const std::string& text) {
    std::string out;
    for (char c : shorten(text)) out += has_control_character(std::string_view(&c, 1)) ? '?' : c;
    return out;
  }

 private:
  const Json& object_;
  std::string where_;
  std::string_view source_;
};

// One node as read, before the graph exists.
struct RawNode {
  int64_t id = 0;
  NodeSpec spec;
  std::vector<int64_t> input_ids;
};

const std::set<std::string, std::less<>>& known_ops() {
  static const std::set<std::string, std::less<>> ops = [] {
    std::set<std::string, std::less<>> all(layer_op_names().begin(), layer_op_names().end());
    all.insert("input");
    all.insert(std::string(kOpaqueOp));
    return all;
  }();
  return ops;
}

std::string known_ops_text() {
  std::string out;
  for (const std::string& op : known_ops()) out += (out.empty() ? "" : ", ") + op;
  return out;
}

Attributes read_attributes(const Fields& node, const Json& json) {
  if (!json.is_object()) node.fail("attributes must be an object, got " + Fields::kind(json));
  if (static_cast<int64_t>(json.size()) > L::max_attributes) {
    node.fail("has " + std::to_string(json.size()) + " attributes, more than " +
              std::to_string(L::max_attributes));
  }
  Attributes attributes;
  for (const auto& [key, value] : json.items()) {
    const std::string what = "attribute '" + Fields::printable(key) + "'";
    if (key.empty() || has_control_character(key)) node.fail(what + ": bad attribute name");
    if (value.is_number_integer() && !value.is_number_unsigned()) {
      attributes[key] = value.get<int64_t>();
    } else if (value.is_number_unsigned()) {
      attributes[key] = node.checked_integer(value, what, 0, std::numeric_limits<int64_t>::max());
    } else if (value.is_number_float()) {
      const double v = value.get<double>();
      if (!std::isfinite(v)) node.fail(what + " must be finite, got " + value.dump());
      attributes[key] = v;
    } else if (value.is_string()) {
      const auto& s = value.get_ref<const std::string&>();
      if (static_cast<int64_t>(s.size()) > L::max_name_bytes) node.fail(what + " is too long");
      attributes[key] = s;
    } else {
      node.fail(what + " must be a number or a string, got " + Fields::kind(value));
    }
  }
  return attributes;
}

std::string node_label(const RawNode& node) {
  return "node '" + node.spec.name + "'";
}

// The layer's own view of a node (shapes only): its output shape, FLOPs and parameters
// must be the file's. Returns nothing for input and opaque nodes.
void check_against_layer(const NodeSpec& spec, const std::vector<Shape>& input_shapes,
                         const std::string& where) {
  if (spec.op == "input" || spec.op == kOpaqueOp) return;
  const kernels::ShapesOnlyScope shapes_only;
  std::unique_ptr<kernels::Layer> layer;
  Shape shape;
  kernels::FlopCount flops;
  int64_t parameters = 0;
  try {
    layer = make_layer(spec.op, spec.attributes);
    shape = layer->output_shape(input_shapes);
    flops = layer->flops(input_shapes);
    parameters = layer->parameter_count();
  } catch (const Error& e) {
    throw_invalid(where + ": " + e.what());
  }
  auto differs = [&](const char* field, const std::string& file, const std::string& kernel) {
    throw_invalid(where + ": " + field + " " + file + " differs from the " + spec.op +
                  " kernel layer's " + kernel +
                  " (a node with a kernel layer must carry its costs; "
                  "make it 'opaque' to give others)");
  };
  if (shape != spec.output_shape) {
    differs("output_shape", kernels::to_string(spec.output_shape), kernels::to_string(shape));
  }
  if (flops.forward_flops != spec.forward_flops) {
    differs("forward_flops", std::to_string(spec.forward_flops),
            std::to_string(flops.forward_flops));
  }
  if (flops.backward_flops != spec.backward_flops) {
    differs("backward_flops", std::to_string(spec.backward_flops),
            std::to_string(flops.backward_flops));
  }
  if (flops.parameter_grad_flops != spec.parameter_grad_flops) {
    differs("parameter_grad_flops", std::to_string(spec.parameter_grad_flops),
            std::to_string(flops.parameter_grad_flops));
  }
  if (parameters != spec.parameter_count) {
    differs("parameter_count", std::to_string(spec.parameter_count), std::to_string(parameters));
  }
  const int64_t bytes = kernels::numel(shape) * static_cast<int64_t>(sizeof(float));
  if (spec.output_bytes && *spec.output_bytes != bytes) {
    differs("output_bytes", std::to_string(*spec.output_bytes), std::to_string(bytes));
  }
}

RawNode read_node(const Json& json, size_t index, int64_t node_count, int64_t batch_size,
                  std::string_view source) {
  // The name first, so that every later error can name the node.
  std::string where = "nodes[" + std::to_string(index) + "]";
  if (json.is_object() && json.contains("name") && json["name"].is_string()) {
    where = "node '" + Fields::printable(json["name"].get<std::string>()) + "'";
  }
  const Fields f(json, where, source);
  f.only({"id", "name", "op", "inputs", "successors", "output_shape", "forward_flops",
          "backward_flops", "parameter_grad_flops", "parameter_count", "output_bytes", "attributes",
          "module"});
  RawNode node;
  node.spec.name = f.text("name");
  if (node.spec.name.empty()) f.fail("name must not be empty");
  if (has_control_character(node.spec.name)) f.fail("name contains a control character");
  node.id = f.integer("id", 0, node_count - 1);
  node.spec.op = f.text("op");
  if (known_ops().count(node.spec.op) == 0) {
    f.fail("unknown op type '" + Fields::printable(node.spec.op) + "' (known: " + known_ops_text() +
           "; an op without a kernel layer is '" + std::string(kOpaqueOp) +
           "' with its own op in the attribute 'source_op')");
  }
  const Json& inputs = f.array("inputs", L::max_inputs);
  node.input_ids.reserve(inputs.size());
  for (const Json& input : inputs) {
    node.input_ids.push_back(f.checked_integer(input, "input id", 0, node_count - 1));
  }
  if (f.has("successors")) {
    for (const Json& s : f.array("successors", node_count)) {
      f.checked_integer(s, "successor id", 0, node_count - 1);
    }
  }
  const Json& shape = f.array("output_shape", L::max_rank);
  if (shape.empty()) f.fail("output_shape must have a batch dimension");
  int64_t elements = 1;
  for (const Json& extent : shape) {
    const int64_t e = f.checked_integer(extent, "output_shape extent", 1, L::max_elements);
    if (elements > L::max_elements / e) {
      f.fail("output_shape " + Fields::shorten(shape.dump()) + " has more than " +
             std::to_string(L::max_elements) + " elements");
    }
    elements *= e;
    node.spec.output_shape.push_back(e);
  }
  if (node.spec.output_shape.front() != batch_size) {
    f.fail("output_shape " + kernels::to_string(node.spec.output_shape) +
           " must begin with the file's batch_size " + std::to_string(batch_size));
  }
  node.spec.forward_flops = f.integer("forward_flops", 0, L::max_flops);
  node.spec.backward_flops = f.integer("backward_flops", 0, L::max_flops);
  node.spec.parameter_grad_flops = f.integer("parameter_grad_flops", 0, L::max_flops, 0);
  if (node.spec.parameter_grad_flops > node.spec.backward_flops) {
    f.fail("parameter_grad_flops " + std::to_string(node.spec.parameter_grad_flops) +
           " exceed backward_flops " + std::to_string(node.spec.backward_flops));
  }
  node.spec.parameter_count = f.integer("parameter_count", 0, L::max_parameters);
  node.spec.output_bytes =
      f.integer("output_bytes", 0, L::max_elements * static_cast<int64_t>(sizeof(double)));
  if (f.has("attributes")) node.spec.attributes = read_attributes(f, f.at("attributes"));
  if (f.has("module")) {
    node.spec.module = f.text("module");
    if (has_control_character(node.spec.module)) f.fail("module contains a control character");
  }
  if (node.spec.op == "input") {
    if (!node.input_ids.empty()) f.fail("an input node takes no inputs");
    if (node.spec.forward_flops != 0 || node.spec.backward_flops != 0 ||
        node.spec.parameter_count != 0) {
      f.fail("an input node has no FLOPs and no parameters");
    }
  } else if (node.spec.op == kOpaqueOp) {
    const auto it = node.spec.attributes.find("source_op");
    if (it == node.spec.attributes.end() || !std::holds_alternative<std::string>(it->second) ||
        std::get<std::string>(it->second).empty()) {
      f.fail("an opaque node needs its original op as the string attribute 'source_op'");
    }
    if (node.input_ids.empty()) f.fail("an opaque node needs at least one input");
  } else if (node.input_ids.empty()) {
    f.fail("op '" + node.spec.op + "' needs at least one input");
  }
  return node;
}

// One cycle among the nodes Kahn's algorithm left over, as "'a' -> 'b' -> 'a'".
std::string describe_cycle(const std::vector<RawNode>& nodes, const std::vector<size_t>& slot_of_id,
                           const std::vector<int>& remaining) {
  // Walk back along inputs that are still unordered: every such node has one, so the walk
  // repeats a node within n steps.
  size_t at = 0;
  while (remaining[at] == 0) ++at;
  std::vector<int> seen_at(nodes.size(), -1);
  std::vector<size_t> path;
  while (seen_at[at] < 0) {
    seen_at[at] = static_cast<int>(path.size());
    path.push_back(at);
    for (int64_t input : nodes[at].input_ids) {
      const size_t next = slot_of_id[static_cast<size_t>(input)];
      if (remaining[next] > 0) {
        at = next;
        break;
      }
    }
  }
  std::string out;
  std::vector<size_t> cycle(path.begin() + seen_at[at], path.end());
  std::reverse(cycle.begin(), cycle.end());  // producer -> consumer
  for (size_t slot : cycle) out += "'" + nodes[slot].spec.name + "' -> ";
  return out + "'" + nodes[cycle.front()].spec.name + "'";
}

}  // namespace

GraphFile parse_graph_file(std::string_view text, std::string_view source) {
  const std::string file = "graph file " + std::string(source);
  if (static_cast<int64_t>(text.size()) > L::max_file_bytes) {
    throw_invalid(file + ": " + std::to_string(text.size()) + " bytes, more than the " +
                  std::to_string(L::max_file_bytes) + " a graph file may have");
  }
  int depth = 0;
  if (const size_t at = nesting_past_limit(text, L::max_depth, depth);
      at != std::string_view::npos) {
    throw_invalid(file + ": line " + std::to_string(line_of(text, at)) + ": nested more than " +
                  std::to_string(L::max_depth) +
                  " levels deep (a graph file needs 4); refused before parsing");
  }
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {  // parse_error, out_of_range (1e400)
    // "[json.exception.parse_error.101] parse error at line 3, column 5: ..." without the tag.
    std::string what = e.what();
    if (const size_t cut = what.find("] "); cut != std::string::npos) what = what.substr(cut + 2);
    throw_invalid(file + ": not valid JSON: " + what);
  }
  const Fields top(root, "top level", source);
  top.only({"format", "format_version", "name", "family", "source", "batch_size", "node_count",
            "edge_count", "nodes", "edges"});
  if (top.text("format") != kGraphFormatName) {
    top.fail("format must be '" + std::string(kGraphFormatName) + "', got '" +
             Fields::printable(top.text("format")) + "'");
  }
  const int64_t version = top.integer("format_version", 0, std::numeric_limits<int64_t>::max());
  if (version != kGraphFormatVersion) {
    top.fail("format_version " + std::to_string(version) + " is not one this interplace reads (" +
             std::to_string(kGraphFormatVersion) + ")");
  }
  GraphFile out;
  const std::string name = top.text("name");
  if (name.empty() || has_control_character(name))
    top.fail("name must be a printable, non-empty string");
  out.family = top.has("family") ? top.text("family") : "imported";
  if (out.family.empty() || has_control_character(out.family)) {
    top.fail("family must be a printable, non-empty string");
  }
  out.source = top.has("source") ? top.text("source") : "";
  if (has_control_character(out.source)) top.fail("source contains a control character");
  const int64_t batch_size = top.integer("batch_size", 1, int64_t{1} << 20);
  const Json& nodes_json = top.array("nodes", L::max_nodes);
  if (nodes_json.empty()) top.fail("nodes must not be empty");
  const auto node_count = static_cast<int64_t>(nodes_json.size());
  if (top.has("node_count") && top.integer("node_count", 0, L::max_nodes) != node_count) {
    top.fail("node_count " + top.at("node_count").dump() + " but nodes has " +
             std::to_string(node_count) + " entries");
  }

  // Nodes, ids and names.
  std::vector<RawNode> nodes;
  nodes.reserve(nodes_json.size());  // bounded by max_nodes, checked above
  for (size_t i = 0; i < nodes_json.size(); ++i) {
    nodes.push_back(read_node(nodes_json[i], i, node_count, batch_size, source));
  }
  std::vector<size_t> slot_of_id(nodes.size(), nodes.size());
  std::map<std::string_view, size_t> slot_of_name;
  for (size_t slot = 0; slot < nodes.size(); ++slot) {
    const RawNode& node = nodes[slot];
    size_t& by_id = slot_of_id[static_cast<size_t>(node.id)];
    if (by_id != nodes.size()) {
      throw_invalid(file + ": " + node_label(node) + ": id " + std::to_string(node.id) +
                    " is also the id of node '" + nodes[by_id].spec.name + "'");
    }
    by_id = slot;
    if (!slot_of_name.emplace(node.spec.name, slot).second) {
      throw_invalid(file + ": duplicate node name '" + node.spec.name + "' (nodes[" +
                    std::to_string(slot_of_name[node.spec.name]) + "] and nodes[" +
                    std::to_string(slot) + "])");
    }
  }

  // Edges: exactly the distinct (producer, consumer) pairs of the inputs.
  std::set<std::pair<int64_t, int64_t>> from_inputs;
  for (const RawNode& node : nodes) {
    for (int64_t input : node.input_ids) from_inputs.emplace(input, node.id);
  }
  const Json& edges = top.array("edges", static_cast<int64_t>(from_inputs.size()) + 1);
  std::set<std::pair<int64_t, int64_t>> listed;
  for (size_t i = 0; i < edges.size(); ++i) {
    const Json& edge = edges[i];
    const std::string where = "edges[" + std::to_string(i) + "]";
    if (!edge.is_array() || edge.size() != 2) {
      top.fail(where + " must be a [producer, consumer] pair of node ids, got " +
               Fields::kind(edge));
    }
    const int64_t producer =
        top.checked_integer(edge[0], where + " producer", 0, std::numeric_limits<int64_t>::max());
    const int64_t consumer =
        top.checked_integer(edge[1], where + " consumer", 0, std::numeric_limits<int64_t>::max());
    const std::string pair = "[" + std::to_string(producer) + ", " + std::to_string(consumer) + "]";
    for (const int64_t end : {producer, consumer}) {
      if (end >= node_count) {
        throw_invalid(file + ": " + where + " " + pair + " is dangling: there is no node " +
                      std::to_string(end) + " (ids are 0.." + std::to_string(node_count - 1) + ")");
      }
    }
    const std::string named = pair + " ('" + nodes[slot_of_id[producer]].spec.name + "' -> '" +
                              nodes[slot_of_id[consumer]].spec.name + "')";
    if (from_inputs.count({producer, consumer}) == 0) {
      throw_invalid(file + ": " + where + " " + named +
                    " is dangling: the consumer does not take "
                    "the producer as an input");
    }
    if (!listed.emplace(producer, consumer).second) {
      throw_invalid(file + ": " + where + " " + named + " is listed twice");
    }
  }
  for (const auto& [producer, consumer] : from_inputs) {
    if (listed.count({producer, consumer}) == 0) {
      throw_invalid(file + ": node '" + nodes[slot_of_id[consumer]].spec.name + "' takes '" +
                    nodes[slot_of_id[producer]].spec.name + "' as an input but edges has no [" +
                    std::to_string(producer) + ", " + std::to_string(consumer) + "]");
    }
  }
  if (top.has("edge_count") && top.integer("edge_count", 0, std::numeric_limits<int64_t>::max()) !=
                                   static_cast<int64_t>(listed.size())) {
    top.fail("edge_count " + top.at("edge_count").dump() + " but edges has " +
             std::to_string(listed.size()) + " entries");
  }
  for (const RawNode& node : nodes) {
    if (!node.spec.attributes.count("tied_to")) continue;
    const auto& tied = node.spec.attributes.at("tied_to");
    if (!std::holds_alternative<std::string>(tied) ||
        slot_of_name.count(std::get<std::string>(tied)) == 0) {
      throw_invalid(file + ": " + node_label(node) + ": tied_to '" + to_string(tied) +
                    "' names no node of the graph");
    }
  }

  // Topological order (Kahn's, the smallest id first, so a file in id order keeps its ids);
  // what is left over lies on or behind a cycle.
  std::vector<int> remaining(nodes.size(), 0);
  std::vector<std::vector<size_t>> consumers(nodes.size());
  for (size_t slot = 0; slot < nodes.size(); ++slot) {
    std::set<int64_t> distinct(nodes[slot].input_ids.begin(), nodes[slot].input_ids.end());
    remaining[slot] = static_cast<int>(distinct.size());
    for (int64_t input : distinct)
      consumers[slot_of_id[static_cast<size_t>(input)]].push_back(slot);
  }
  std::priority_queue<std::pair<int64_t, size_t>, std::vector<std::pair<int64_t, size_t>>,
                      std::greater<>>
      ready;
  for (size_t slot = 0; slot < nodes.size(); ++slot) {
    if (remaining[slot] == 0) ready.emplace(nodes[slot].id, slot);
  }
  std::vector<size_t> order;
  order.reserve(nodes.size());
  while (!ready.empty()) {
    const size_t slot = ready.top().second;
    ready.pop();
    order.push_back(slot);
    for (size_t consumer : consumers[slot]) {
      if (--remaining[consumer] == 0) ready.emplace(nodes[consumer].id, consumer);
    }
  }
  if (order.size() != nodes.size()) {
    throw_invalid(file +
                  ": the graph has a cycle: " + describe_cycle(nodes, slot_of_id, remaining));
  }

  // The graph, in that order, every node with a kernel layer checked against it.
  out.graph = Graph(name, batch_size);
  std::vector<NodeId> new_id(nodes.size(), -1);  // by file id
  for (size_t slot : order) {
    RawNode& node = nodes[slot];
    const std::string where = file + ": " + node_label(node);
    std::vector<Shape> input_shapes;
    for (int64_t input : node.input_ids) {
      const NodeId id = new_id[static_cast<size_t>(input)];
      node.spec.inputs.push_back(id);
      input_shapes.push_back(out.graph.node(id).output_shape);
    }
    check_against_layer(node.spec, input_shapes, where);
    try {
      new_id[static_cast<size_t>(node.id)] = out.graph.add_node(std::move(node.spec));
    } catch (const Error& e) {
      throw_invalid(where + ": " + e.what());
    }
  }
  return out;
}

GraphFile read_graph_file(const std::filesystem::path& path) {
  check_input_file(path, "graph file", GraphFileLimits::max_file_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_invalid("graph file '" + path.string() + "': cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_graph_file(text.str(), "'" + path.string() + "'");
}

void write_graph_file(const std::filesystem::path& path, const Graph& graph,
                      std::string_view family) {
  const std::string text = to_json(graph, family);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw_runtime("cannot write the graph file '" + path.string() + "'");
  out << text;
  out.close();
  if (!out) throw_runtime("writing the graph file '" + path.string() + "' failed");
}

Graph rebatch_graph(const Graph& graph, int64_t batch_size) {
  if (batch_size == graph.batch_size()) return graph;
  if (batch_size < 1) throw_invalid("batch size must be >= 1, got " + std::to_string(batch_size));
  const double scale = static_cast<double>(batch_size) / static_cast<double>(graph.batch_size());
  auto scaled = [&](int64_t value, const Node& node, const char* what) {
    const double v = std::round(static_cast<double>(value) * scale);
    if (v > static_cast<double>(GraphFileLimits::max_flops)) {
      throw_invalid("graph '" + graph.name() + "' at batch size " + std::to_string(batch_size) +
                    ": node '" + node.name + "': " + what + " out of range");
    }
    return static_cast<int64_t>(v);
  };
  Graph out(graph.name(), batch_size);
  const kernels::ShapesOnlyScope shapes_only;
  for (const Node& node : graph.nodes()) {
    NodeSpec spec;
    spec.name = node.name;
    spec.op = node.op;
    spec.attributes = node.attributes;
    spec.module = node.module;
    spec.inputs = node.inputs;
    spec.output_shape = node.output_shape;
    if (spec.output_shape.empty() || spec.output_shape.front() != graph.batch_size()) {
      throw_invalid("graph '" + graph.name() + "': node '" + node.name + "': output shape " +
                    kernels::to_string(node.output_shape) +
                    " does not begin with the batch dimension");
    }
    spec.output_shape.front() = batch_size;
    if (kernels::numel(node.output_shape) / graph.batch_size() >
        GraphFileLimits::max_elements / batch_size) {
      throw_invalid("graph '" + graph.name() + "' at batch size " + std::to_string(batch_size) +
                    ": node '" + node.name + "' has more than " +
                    std::to_string(GraphFileLimits::max_elements) + " output elements");
    }
    spec.parameter_count = node.parameter_count;
    if (node.op == "input") {
      // no costs
    } else if (node.op == kOpaqueOp) {
      spec.forward_flops = scaled(node.forward_flops, node, "forward_flops");
      spec.backward_flops = scaled(node.backward_flops, node, "backward_flops");
      spec.parameter_grad_flops =
          std::min(spec.backward_flops, scaled(node.parameter_grad_flops, node, "flops"));
      spec.output_bytes = scaled(node.output_bytes, node, "output_bytes");
    } else {
      std::vector<Shape> input_shapes;
      for (NodeId input : node.inputs) input_shapes.push_back(out.node(input).output_shape);
      const auto layer = make_layer(node.op, node.attributes);
      try {
        spec.output_shape = layer->output_shape(input_shapes);
      } catch (const Error& e) {
        throw_invalid("graph '" + graph.name() + "' at batch size " + std::to_string(batch_size) +
                      ": node '" + node.name + "': " + e.what());
      }
      const kernels::FlopCount flops = layer->flops(input_shapes);
      spec.forward_flops = flops.forward_flops;
      spec.backward_flops = flops.backward_flops;
      spec.parameter_grad_flops = flops.parameter_grad_flops;
    }
    out.add_node(std::move(spec));
  }
  return out;
}

std::vector<NodeId> opaque_nodes(const Graph& graph) {
  std::vector<NodeId> ids;
  for (const Node& node : graph.nodes()) {
    if (node.op == kOpaqueOp) ids.push_back(node.id);
  }
  return ids;
}

std::string opaque_summary(const Graph& graph, int listed) {
  const std::vector<NodeId> ids = opaque_nodes(graph);
  if (ids.empty()) return "";
  std::string out = std::to_string(ids.size()) + (ids.size() == 1 ? " node has" : " nodes have") +
                    " no kernel layer: ";
  std::map<std::string, int> by_op;
  for (NodeId id : ids) {
    const auto& source = graph.node(id).attributes.at("source_op");
    ++by_op[to_string(source)];
  }
  std::string ops;
  for (const auto& [op, count] : by_op) {
    ops += (ops.empty() ? "" : ", ") + op + (count > 1 ? " x" + std::to_string(count) : "");
  }
  out += ops + " (";
  for (size_t i = 0; i < ids.size() && static_cast<int>(i) < listed; ++i) {
    out += (i ? ", '" : "'") + graph.node(ids[i]).name + "'";
  }
  if (static_cast<int>(ids.size()) > listed) out += ", ...";
  return out + ")";
}

void check_graph_file_options(const ModelOptions& o, std::string_view prefix) {
  const ModelOptions defaults;
  for (const ModelOptionField& f : kModelOptionFields) {
    const bool given =
        f.integer != nullptr ? o.*f.integer != defaults.*f.integer : o.*f.real != defaults.*f.real;
    if (!given) continue;
    std::string name = f.key;  // a spec key; as a flag with '-' for '_'
    if (prefix == "--") std::replace(name.begin(), name.end(), '_', '-');
    throw_invalid(std::string(prefix) + name +
                  " does not apply to a graph file: the file fixes the network's shapes (only the "
                  "batch size and micro-batches rebuild it); change the network and import it "
                  "again");
  }
}

std::string graph_file_digest(const std::filesystem::path& path) {
  check_input_file(path, "graph file", GraphFileLimits::max_file_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_invalid("graph file '" + path.string() + "': cannot open");
  uint64_t hash = 14695981039346656037ull;
  char buffer[65536];
  while (in) {
    in.read(buffer, sizeof buffer);
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      hash ^= static_cast<unsigned char>(buffer[i]);
      hash *= 1099511628211ull;
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

}  // namespace interplace::placement
