#include "interplace/placement/stage_costs.hpp"

#include <algorithm>
#include <limits>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/stage_chain.hpp"

namespace interplace::placement {

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
    s.parameter_state_bytes += costs.parameter_state_bytes[node.id];
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
  const std::vector<int64_t> replicas =
      costs.replica_bytes_per_device(placement.device_of_node, placement.device_count);
  for (int stage = 0; stage < placement.device_count; ++stage) {
    pipeline.stages[stage].parameter_state_bytes += replicas[static_cast<size_t>(stage)];
  }
  return pipeline;
}

StepTimeEstimator simulator_estimator(const Graph& graph, const NodeCosts& costs,
                                      const LinkSpec& link, ScheduleRequest schedule) {
  return [&graph, &costs, link, schedule](const Placement& placement) mutable {
    if (!is_stage_chain(graph, placement)) return std::numeric_limits<double>::infinity();
    schedule.stage_count = placement.device_count;
    return simulate(build_schedule(schedule), pipeline_costs(graph, placement, costs, link))
        .step_time_s;
  };
}

}  // namespace interplace::placement
