#include "interplace/placement/stage_chain.hpp"

#include <algorithm>

#include <string>

#include "interplace/kernels/error.hpp"

namespace interplace::placement {
namespace {

std::string edge_text(const Graph& graph, const Placement& placement, NodeId from, NodeId to) {
  return "edge '" + graph.nodes()[from].name + "' (device " +
         std::to_string(placement.device_of_node[from]) + ") -> '" + graph.nodes()[to].name +
         "' (device " + std::to_string(placement.device_of_node[to]) + ")";
}

}  // namespace

std::optional<std::string> stage_chain_violation(const Graph& graph, const Placement& placement) {
  require_valid_placement(graph, placement);
  const std::vector<int> counts = device_node_counts(placement);
  for (int device = 0; device < placement.device_count; ++device) {
    if (counts[device] == 0) {
      return "not a stage chain: device " + std::to_string(device) + " holds no node";
    }
  }
  for (const Node& node : graph.nodes()) {
    for (NodeId consumer : node.successors) {
      if (placement.device_of_node[consumer] < placement.device_of_node[node.id]) {
        return "not a stage chain: " + edge_text(graph, placement, node.id, consumer) +
               " goes back to an earlier device";
      }
    }
  }
  return std::nullopt;
}

Placement interleaved_devices(const Placement& stages, StageMap map, int devices) {
  if (devices < 1 || stages.device_count % devices != 0) {
    throw_invalid("interleaved_devices: " + std::to_string(stages.device_count) +
                  " stages are not a multiple of " + std::to_string(devices) + " devices");
  }
  Placement placed{.device_count = devices, .device_of_node = stages.device_of_node};
  for (int& device : placed.device_of_node) device = device_of_stage(map, device, devices);
  return placed;
}

std::optional<std::string> interleaved_violation(const Graph& graph, const Placement& stages) {
  if (auto why = stage_chain_violation(graph, stages)) return why;
  for (const Node& node : graph.nodes()) {
    const int from = stages.device_of_node[static_cast<size_t>(node.id)];
    for (NodeId next : node.successors) {
      const int to = stages.device_of_node[static_cast<size_t>(next)];
      if (to > from + 1) {
        return "'" + graph.node(next).name + "' on stage " + std::to_string(to) + " consumes '" +
               node.name + "' of stage " + std::to_string(from) + ", past the next stage";
      }
    }
  }
  return std::nullopt;
}

void require_chunk_chain(PipelineKind pipeline, const Graph& graph, const Placement& stages) {
  if (auto why = interleaved_violation(graph, stages)) {
    throw_invalid("pipeline '" + to_string(pipeline) + "' cannot run on this placement of " +
                  std::to_string(stages.device_count) + " stages (" + *why +
                  "). HINT: fewer --virtual-stages (stages longer than the network's skip "
                  "connections), --pipeline 1f1b, or a placer that makes stage chains "
                  "(contiguous, stages)");
  }
}

bool is_stage_chain(const Graph& graph, const Placement& placement) {
  // The test of stage_chain_violation without building its message: callers such as the
  // rl placer's reward ask it once per move.
  require_valid_placement(graph, placement);
  const std::vector<int>& device = placement.device_of_node;
  std::vector<char> used(static_cast<size_t>(placement.device_count), 0);
  for (const Node& node : graph.nodes()) {
    used[static_cast<size_t>(device[node.id])] = 1;
    for (NodeId consumer : node.successors) {
      if (device[consumer] < device[node.id]) return false;
    }
  }
  return std::find(used.begin(), used.end(), 0) == used.end();
}

std::optional<std::string> local_strategy_ineligibility(const Graph& graph,
                                                        const Placement& placement) {
  if (auto violation = stage_chain_violation(graph, placement)) return violation;
  const int k = placement.device_count;
  std::vector<NodeId> producer(k, -1);  // the one producer sending across boundary i
  for (const Node& node : graph.nodes()) {
    const int stage = placement.device_of_node[node.id];
    for (NodeId consumer : node.successors) {
      const int to = placement.device_of_node[consumer];
      if (to == stage) continue;
      if (to != stage + 1) {
        return "boundaries are not single-tensor: " +
               edge_text(graph, placement, node.id, consumer) + " skips a stage";
      }
      if (producer[stage] >= 0 && producer[stage] != node.id) {
        return "boundaries are not single-tensor: boundary " + std::to_string(stage) + " -> " +
               std::to_string(stage + 1) + " is crossed by the outputs of '" +
               graph.nodes()[producer[stage]].name + "' and '" + node.name + "'";
      }
      producer[stage] = node.id;
    }
  }
  for (int stage = 0; stage + 1 < k; ++stage) {
    if (producer[stage] < 0) {
      return "boundaries are not single-tensor: no tensor crosses boundary " +
             std::to_string(stage) + " -> " + std::to_string(stage + 1) +
             " (the stages are not connected)";
    }
  }
  return std::nullopt;
}

std::vector<NodeId> boundary_producers(const Graph& graph, const Placement& placement) {
  if (auto reason = local_strategy_ineligibility(graph, placement)) throw_invalid(*reason);
  std::vector<NodeId> producers(placement.device_count - 1, -1);
  for (const Node& node : graph.nodes()) {
    const int stage = placement.device_of_node[node.id];
    for (NodeId consumer : node.successors) {
      if (placement.device_of_node[consumer] != stage) producers[stage] = node.id;
    }
  }
  return producers;
}

}  // namespace interplace::placement
