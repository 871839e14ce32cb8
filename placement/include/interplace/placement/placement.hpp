// A placement: the device of every node, and what follows from it (per-device memory and
// the load the contiguous placer balances).
#pragma once

#include <cstdint>
#include <vector>

#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/graph.hpp"

namespace interplace::placement {

struct Placement {
  int device_count = 0;
  std::vector<int> device_of_node;  // indexed by node id, values in 0..device_count-1

  bool operator==(const Placement&) const = default;
};

// Throws invalid_input unless the placement has one device in 0..device_count-1 per node.
void require_valid_placement(const Graph& graph, const Placement& placement);

// Nodes per device.
std::vector<int> device_node_counts(const Placement& placement);

// Parameter state plus activations of `in_flight_micro_batches` micro-batches, per device.
std::vector<int64_t> device_memory_bytes(const Placement& placement, const NodeCosts& costs,
                                         int in_flight_micro_batches);

// Per device: forward+backward compute of its nodes plus boundary communication. A tensor
// that leaves the device is charged once to the sender and once to every device that
// consumes it, each time twice (activation forward, gradient backward). This is the
// quantity the contiguous placer minimises the maximum of.
std::vector<double> device_loads_s(const Graph& graph, const Placement& placement,
                                   const NodeCosts& costs, const CostModel& cost_model);

}  // namespace interplace::placement
