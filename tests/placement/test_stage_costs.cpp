#include <gtest/gtest.h>

#include <limits>

#include <cmath>

#include "graph_fixtures.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/stage_chain.hpp"
#include "interplace/placement/stage_costs.hpp"

namespace interplace::placement {
namespace {

TEST(StageCosts, SumsNodesAndRelaysSkipTensors) {
  // 0 -> 1 -> 2 -> 3 -> 4 with 1 -> 3; stages {0, 0, 1, 2, 2}: n1's tensor goes to stage 1
  // (n2) and stage 2 (n3), so it crosses both boundaries; n2's crosses boundary 1.
  const Graph graph = testing::graph_from_inputs({{}, {0}, {1}, {2, 1}, {3}});
  const CostModel model = testing::timed_cost_model(graph, {1, 2, 3, 4, 5}, {10, 20, 30, 40, 50});
  const NodeCosts costs = model.node_costs(graph);
  const PipelineCosts pipeline =
      pipeline_costs(graph, {3, {0, 0, 1, 2, 2}}, costs, {.latency_s = 0.5});
  ASSERT_EQ(pipeline.stages.size(), 3u);
  EXPECT_DOUBLE_EQ(pipeline.stages[0].forward_s, 3.0);
  EXPECT_DOUBLE_EQ(pipeline.stages[1].backward_s, 30.0);
  EXPECT_DOUBLE_EQ(pipeline.stages[2].forward_s, 9.0);
  EXPECT_EQ(pipeline.stages[0].output_bytes, 16);
  EXPECT_EQ(pipeline.stages[1].output_bytes, 32);
  EXPECT_EQ(pipeline.stages[2].output_bytes, 0);
  EXPECT_EQ(pipeline.stages[2].parameter_state_bytes, 2 * 120);
  EXPECT_EQ(pipeline.stages[2].activation_bytes, 2 * 16);
  EXPECT_DOUBLE_EQ(pipeline.link.latency_s, 0.5);
  EXPECT_THROW(pipeline_costs(graph, {2, {0, 1, 0, 1, 1}}, costs, {}), Error);
}

TEST(StageCosts, SimulatorPlugsIntoRefine) {
  const Graph graph = testing::chain(8);
  const CostModel model = testing::timed_cost_model(graph, {1, 1, 1, 1, 1, 1, 1, 5},
                                                    {2, 2, 2, 2, 2, 2, 2, 10}, {.latency_s = 0.1});
  const NodeCosts costs = model.node_costs(graph);
  const ScheduleRequest schedule{.strategy = "global", .micro_batches = 4};
  // The simulated step of the schedule on chains (refine's objective can be any estimator).
  const auto estimate = [&](const Placement& placement) {
    if (!is_stage_chain(graph, placement)) return std::numeric_limits<double>::infinity();
    ScheduleRequest request = schedule;
    request.stage_count = placement.device_count;
    return simulate(build_schedule(request), pipeline_costs(graph, placement, costs, model.link()))
        .step_time_s;
  };
  EXPECT_TRUE(std::isinf(estimate({2, {0, 1, 0, 1, 1, 1, 1, 1}})));
  PlacementRequest request{.device_count = 2, .cost_model = model, .micro_batches = 4};
  request.refine_start = "round-robin";  // not a chain: every move is judged +infinity
  EXPECT_EQ(place_refine(graph, topological_order(graph), request),
            place_round_robin(graph, topological_order(graph), request));
  request.refine_start = "contiguous";
  int calls = 0;
  request.refine_estimator = [&](const Placement& placement) {
    ++calls;
    return estimate(placement);
  };
  request.refine_all_devices = true;
  const Placement start = place_contiguous(graph, topological_order(graph), request);
  const Placement refined = place_refine(graph, topological_order(graph), request);
  EXPECT_TRUE(is_stage_chain(graph, refined));
  EXPECT_GT(calls, 8);
  EXPECT_LE(estimate(refined), estimate(start));
  // Six light nodes (3 s each) against one light and the heavy one (3 + 15 s): 18 s each,
  // and no single move keeps a chain and does better.
  EXPECT_EQ(refined.device_of_node, (std::vector<int>{0, 0, 0, 0, 0, 0, 1, 1}));
}

}  // namespace
}  // namespace interplace::placement
