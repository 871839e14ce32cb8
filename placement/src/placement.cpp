#include "interplace/placement/placement.hpp"

#include <algorithm>
#include <string>

#include "interplace/kernels/error.hpp"

namespace interplace::placement {

void require_valid_placement(const Graph& graph, const Placement& placement) {
  if (placement.device_count < 1) {
    throw_invalid("placement: device count must be >= 1, got " +
                  std::to_string(placement.device_count));
  }
  if (static_cast<int>(placement.device_of_node.size()) != graph.node_count()) {
    throw_invalid("placement has " + std::to_string(placement.device_of_node.size()) +
                  " entries for a graph of " + std::to_string(graph.node_count()) + " nodes");
  }
  for (NodeId id = 0; id < graph.node_count(); ++id) {
    const int device = placement.device_of_node[id];
    if (device < 0 || device >= placement.device_count) {
      throw_invalid("placement puts node '" + graph.nodes()[id].name + "' on device " +
                    std::to_string(device) + " (valid: 0.." +
                    std::to_string(placement.device_count - 1) + ")");
    }
  }
}

std::vector<int> device_node_counts(const Placement& placement) {
  std::vector<int> counts(std::max(placement.device_count, 0), 0);
  for (int device : placement.device_of_node) ++counts.at(device);
  return counts;
}

std::vector<int64_t> device_memory_bytes(const Placement& placement, const NodeCosts& costs,
                                         int in_flight_micro_batches) {
  std::vector<int64_t> memory =
      costs.replica_bytes_per_device(placement.device_of_node, placement.device_count);
  for (size_t id = 0; id < placement.device_of_node.size(); ++id) {
    memory.at(placement.device_of_node[id]) +=
        costs.memory_bytes(static_cast<NodeId>(id), in_flight_micro_batches);
  }
  return memory;
}

std::vector<double> device_loads_s(const Graph& graph, const Placement& placement,
                                   const NodeCosts& costs, const CostModel& cost_model) {
  require_valid_placement(graph, placement);
  std::vector<double> load(placement.device_count, 0.0);
  std::vector<int> receivers;
  for (const Node& node : graph.nodes()) {
    const int home = placement.device_of_node[node.id];
    load[home] += costs.compute_s(node.id);
    receivers.clear();
    for (NodeId consumer : node.successors) {
      const int device = placement.device_of_node[consumer];
      if (device != home &&
          std::find(receivers.begin(), receivers.end(), device) == receivers.end()) {
        receivers.push_back(device);
      }
    }
    if (receivers.empty()) continue;
    // Activation forward and gradient backward: two transfers of the same size, each over
    // the link between the two devices (intra- or inter-node); the sender pays once, for
    // its slowest receiver.
    double home_s = 0.0;
    for (int device : receivers) {
      const double round_trip_s =
          2.0 * cost_model.link().transfer_s(costs.output_bytes[node.id], home, device);
      load[device] += round_trip_s;
      home_s = std::max(home_s, round_trip_s);
    }
    load[home] += home_s;
  }
  return load;
}

}  // namespace interplace::placement
