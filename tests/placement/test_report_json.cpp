#include <gtest/gtest.h>

#include "graph_fixtures.hpp"
#include "interplace/placement/report_json.hpp"

namespace interplace::placement {
namespace {

TEST(ReportJson, GraphStatsAndPlacement) {
  EXPECT_EQ(to_json(compute_graph_stats(testing::diamond())),
            "{\"node_count\": 4, \"edge_count\": 4, \"depth\": 3, \"max_width\": 2, "
            "\"mean_branching_factor\": 1.3333333333333333, \"critical_path_cost_share\": 0.75}");
  EXPECT_EQ(to_json(Placement{2, {0, 0, 1}}),
            "{\"device_count\": 2, \"device_of_node\": [0, 0, 1]}");
}

TEST(ReportJson, SimulationResult) {
  SimulationResult result;
  result.makespan_s = 12.5;
  result.step_time_s = 6.25;
  result.idle_fraction = 0.1;
  StageTimeline stage;
  stage.busy_s = 10;
  stage.idle_s = 2.5;
  stage.last_end_s = 12.5;
  stage.internal_idle_s = 2.5;
  stage.peak_memory_bytes = 1024;
  stage.step_end_s = {6, 12.5};
  result.stages = {stage};
  result.trace = {{0, 0, 0.0, 1.0}};
  EXPECT_EQ(to_json(result),
            "{\"makespan_s\": 12.5, \"step_time_s\": 6.25, \"idle_fraction\": 0.1, \"stages\": "
            "[{\"busy_s\": 10, \"idle_s\": 2.5, \"first_start_s\": 0, \"last_end_s\": 12.5, "
            "\"internal_idle_s\": 2.5, \"peak_memory_bytes\": 1024, \"step_end_s\": [6, 12.5]}]}");
}

}  // namespace
}  // namespace interplace::placement
