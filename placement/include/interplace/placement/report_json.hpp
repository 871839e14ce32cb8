// JSON text (snake_case keys, numbers that read back exactly) of the placement library's
// results, for the CLI's --format json and the result files.
#pragma once

#include <string>

#include "interplace/placement/graph_stats.hpp"
#include "interplace/placement/placement.hpp"
#include "interplace/placement/simulator.hpp"

namespace interplace::placement {

// {"node_count", "edge_count", "depth", "max_width", "mean_branching_factor",
//  "critical_path_cost_share"}
std::string to_json(const GraphStats& stats);
// {"device_count": K, "device_of_node": [...]}
std::string to_json(const Placement& placement);
// {"makespan_s", "step_time_s", "idle_fraction", "stages": [{"busy_s", "idle_s",
//  "first_start_s", "last_end_s", "internal_idle_s", "peak_memory_bytes",
//  "step_end_s": [...]}]}; the trace is left out.
std::string to_json(const SimulationResult& result);

}  // namespace interplace::placement
