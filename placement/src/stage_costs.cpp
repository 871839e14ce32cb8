#include "interplace/placement/stage_costs.hpp"

#include <algorithm>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/stage_chain.hpp"

namespace interplace::placement {
namespace {

// Each stage's (device's) parameter state: its nodes' and its tied-weight replicas', the
// memory it holds with no activation kept.
void set_parameter_state(PipelineCosts& pipeline, const Placement& placement,
                         const NodeCosts& costs) {
  const std::vector<int64_t> bytes = device_memory_bytes(placement, costs, 0);
  for (size_t stage = 0; stage < bytes.size(); ++stage) {
    pipeline.stages[stage].parameter_state_bytes = bytes[stage];
  }
}

}  // namespace

PipelineCosts pipeline_costs(const Graph& graph, const Placement& placement, const NodeCosts& costs,
                             const LinkSpec& link) {
  if (auto violation = stage_chain_violation(graph, placement)) throw_invalid(*violation);
  PipelineCosts pipeline;
  pipeline.link = link;
  pipeline.stages.resize(placement.device_count);
  for (const Node& node : graph.nodes()) {
    const int stage = placement.device_of_node[node.id];
    StageCosts& s = pipeline.stages[stage];
    s.forward_s += costs.forward_s[node.id];
    s.backward_s += costs.backward_s[node.id];
    s.backward_input_s += costs.backward_input_s[node.id];
    s.activation_bytes += costs.output_bytes[node.id];
    // The tensor crosses every boundary from its stage up to its farthest consumer's.
    int farthest = stage;
    for (NodeId consumer : node.successors) {
      farthest = std::max(farthest, placement.device_of_node[consumer]);
    }
    for (int boundary = stage; boundary < farthest; ++boundary) {
      pipeline.stages[boundary].output_bytes += costs.output_bytes[node.id];
    }
  }
  set_parameter_state(pipeline, placement, costs);
  return pipeline;
}

PipelineCosts node_pipeline_costs(const Graph& graph, const Placement& placement,
                                  const NodeCosts& costs, const LinkSpec& link) {
  require_valid_placement(graph, placement);
  PipelineCosts pipeline;
  pipeline.link = link;
  pipeline.stages.resize(static_cast<size_t>(placement.device_count));
  pipeline.nodes.resize(static_cast<size_t>(graph.node_count()));
  for (const Node& node : graph.nodes()) {
    StageCosts& n = pipeline.nodes[static_cast<size_t>(node.id)];
    n.forward_s = costs.forward_s[node.id];
    n.backward_s = costs.backward_s[node.id];
    n.backward_input_s = costs.backward_input_s[node.id];
    n.output_bytes = costs.output_bytes[node.id];
    n.activation_bytes = costs.output_bytes[node.id];
  }
  set_parameter_state(pipeline, placement, costs);
  return pipeline;
}

}  // namespace interplace::placement
