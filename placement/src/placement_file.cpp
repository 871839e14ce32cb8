// Placement files: see placement_file.hpp and docs/placers.md#placement-files.
#include "interplace/placement/placement_file.hpp"

#include <charconv>
#include <fstream>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/input_file.hpp"

namespace interplace::placement {
namespace {

constexpr const char* kMagic = "interplace-placement 1";

int parse_count(const std::string& text, const std::string& where) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) {
    throw_invalid(where + ": expected a non-negative integer, got '" + text + "'");
  }
  return value;
}

}  // namespace

void write_placement_file(const std::string& path, const Graph& graph, const Placement& placement) {
  require_valid_placement(graph, placement);
  std::ofstream out(path);
  if (!out) throw_invalid("cannot write the placement file " + path);
  out << kMagic << "\ndevices " << placement.device_count << "\nnodes " << graph.node_count()
      << "\n";
  for (NodeId id = 0; id < graph.node_count(); ++id) {
    out << graph.node(id).name << '\t' << placement.device_of_node[static_cast<size_t>(id)] << '\n';
  }
  out.close();
  if (!out) throw_invalid("writing the placement file " + path + " failed");
}

Placement read_placement_file(const std::string& path, const Graph& graph) {
  check_input_file(path, "placement file", kMaxTextInputBytes);  // not /dev/zero, not a FIFO
  std::ifstream in(path);
  if (!in) throw_invalid("cannot read the placement file " + path);
  std::string line;
  int number = 0;
  auto next = [&](const char* what) {
    if (!std::getline(in, line)) {
      throw_invalid(path + ": ends before " + std::string(what) + " (line " +
                    std::to_string(number + 1) + ")");
    }
    ++number;
    return path + ":" + std::to_string(number);
  };
  std::string where = next("the header");
  if (line != kMagic) throw_invalid(where + ": not a placement file (expected '" + kMagic + "')");
  auto field = [&](const char* key) {
    where = next(key);
    const std::string prefix = std::string(key) + " ";
    if (line.rfind(prefix, 0) != 0) throw_invalid(where + ": expected '" + prefix + "N'");
    return parse_count(line.substr(prefix.size()), where);
  };
  Placement placement;
  placement.device_count = field("devices");
  if (placement.device_count < 1) throw_invalid(where + ": devices must be >= 1");
  const int nodes = field("nodes");
  if (nodes != graph.node_count()) {
    throw_invalid(where + ": the placement has " + std::to_string(nodes) + " nodes, the graph '" +
                  graph.name() + "' " + std::to_string(graph.node_count()));
  }
  placement.device_of_node.resize(static_cast<size_t>(nodes));
  for (NodeId id = 0; id < nodes; ++id) {
    where = next("every node");
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) throw_invalid(where + ": expected 'name<TAB>device'");
    const std::string name = line.substr(0, tab);
    if (name != graph.node(id).name) {
      throw_invalid(where + ": node " + std::to_string(id) + " is '" + graph.node(id).name +
                    "' in the graph, '" + name + "' in the file");
    }
    const int device = parse_count(line.substr(tab + 1), where);
    if (device >= placement.device_count) {
      throw_invalid(where + ": device " + std::to_string(device) + " is not in 0.." +
                    std::to_string(placement.device_count - 1));
    }
    placement.device_of_node[static_cast<size_t>(id)] = device;
  }
  if (std::getline(in, line) && !line.empty()) {
    throw_invalid(path + ":" + std::to_string(number + 1) + ": text after the last node");
  }
  return placement;
}

}  // namespace interplace::placement
