#include <gtest/gtest.h>

#include "graph_fixtures.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/stage_chain.hpp"
#include "interplace/placement/step_estimate.hpp"

namespace interplace::placement {
namespace {

Placement on(int k, std::vector<int> devices) {
  return {k, std::move(devices)};
}

// 0 -> 1 -> 2 -> 3 -> 4 with a skip 1 -> 3 (a residual block).
Graph residual() {
  return testing::graph_from_inputs({{}, {0}, {1}, {2, 1}, {3}});
}

TEST(StageChain, DetectsChains) {
  const Graph graph = residual();
  EXPECT_TRUE(is_stage_chain(graph, on(2, {0, 0, 1, 1, 1})));
  EXPECT_TRUE(is_stage_chain(graph, on(1, {0, 0, 0, 0, 0})));
  const auto backwards = stage_chain_violation(graph, on(2, {0, 1, 0, 1, 1}));
  ASSERT_TRUE(backwards.has_value());
  EXPECT_NE(backwards->find("'n1' (device 1) -> 'n2' (device 0)"), std::string::npos) << *backwards;
  const auto empty = stage_chain_violation(graph, on(3, {0, 0, 2, 2, 2}));
  ASSERT_TRUE(empty.has_value());
  EXPECT_NE(empty->find("device 1 holds no node"), std::string::npos) << *empty;
  EXPECT_THROW(is_stage_chain(graph, on(2, {0, 0, 1})), Error);
  EXPECT_THROW(is_stage_chain(graph, on(2, {0, 0, 1, 1, 2})), Error);
}

TEST(StageChain, SingleTensorBoundaries) {
  const Graph graph = residual();
  // Cut after node 3 (the block output): one tensor crosses.
  EXPECT_FALSE(local_strategy_ineligibility(graph, on(2, {0, 0, 0, 0, 1})).has_value());
  EXPECT_EQ(boundary_producers(graph, on(2, {0, 0, 0, 0, 1})), (std::vector<NodeId>{3}));
  EXPECT_EQ(boundary_producers(graph, on(3, {0, 1, 1, 1, 2})), (std::vector<NodeId>{0, 3}));
  // Cut at the block input: n1 feeds both branches, still one tensor.
  EXPECT_EQ(boundary_producers(graph, on(2, {0, 0, 1, 1, 1})), (std::vector<NodeId>{1}));
  // Cut inside the block: n1 (skip) and n2 (branch) both send to stage 1.
  const auto two = local_strategy_ineligibility(graph, on(2, {0, 0, 0, 1, 1}));
  ASSERT_TRUE(two.has_value());
  EXPECT_NE(two->find("outputs of 'n1' and 'n2'"), std::string::npos) << *two;
  // 1 -> 3 skips stage 1.
  const auto skip = local_strategy_ineligibility(graph, on(3, {0, 0, 1, 2, 2}));
  ASSERT_TRUE(skip.has_value());
  EXPECT_NE(skip->find("skips a stage"), std::string::npos) << *skip;
  // Not a chain at all: the reason says so.
  const auto not_chain = local_strategy_ineligibility(graph, on(2, {1, 1, 0, 0, 0}));
  ASSERT_TRUE(not_chain.has_value());
  EXPECT_NE(not_chain->find("not a stage chain"), std::string::npos);
  EXPECT_THROW(boundary_producers(graph, on(2, {0, 0, 0, 1, 1})), Error);
  // Two components, one per device: a chain, but nothing crosses the boundary.
  const Graph split = testing::graph_from_inputs({{}, {0}, {}, {2}});
  const auto disconnected = local_strategy_ineligibility(split, on(2, {0, 0, 1, 1}));
  ASSERT_TRUE(disconnected.has_value());
  EXPECT_NE(disconnected->find("no tensor crosses boundary 0 -> 1"), std::string::npos);
}

TEST(StepEstimate, ChainOnTwoDevicesHandComputed) {
  const Graph graph = testing::chain(2);
  const CostModel model = testing::timed_cost_model(graph, {1, 1}, {2, 2}, {.latency_s = 0.5});
  const NodeCosts costs = model.node_costs(graph);
  // F0, transfer, F1, B1, transfer, B0.
  EXPECT_DOUBLE_EQ(estimate_step_time_s(graph, costs, model.link(), on(2, {0, 1})),
                   1 + 0.5 + 1 + 2 + 0.5 + 2);
  EXPECT_DOUBLE_EQ(estimate_step_time_s(graph, costs, model.link(), on(2, {0, 0})), 6.0);
  // Two micro-batches, free link: dev0 F0m0 [0,1] F0m1 [1,2]; dev1 F1m0 [1,2] B1m0 [2,4]
  // F1m1 [4,5] B1m1 [5,7]; dev0 B0m0 [4,6] B0m1 [7,9].
  const LinkSpec free_link{};
  EXPECT_DOUBLE_EQ(estimate_step_time_s(graph, costs, free_link, on(2, {0, 1}), 2), 9.0);
  EXPECT_DOUBLE_EQ(estimate_step_time_s(graph, costs, free_link, on(2, {0, 0}), 2), 12.0);
  EXPECT_THROW(estimate_step_time_s(graph, costs, free_link, on(2, {0, 1}), 0), Error);
}

TEST(StepEstimate, ParallelBranchesOverlap) {
  // Diamond with free link: branches 1 and 2 on different devices run at the same time.
  const Graph graph = testing::diamond();
  const CostModel model = testing::timed_cost_model(graph, {1, 3, 3, 1}, {1, 3, 3, 1});
  const NodeCosts costs = model.node_costs(graph);
  EXPECT_DOUBLE_EQ(estimate_step_time_s(graph, costs, model.link(), on(2, {0, 0, 1, 0})),
                   1 + 3 + 1 + 1 + 3 + 1);
  EXPECT_DOUBLE_EQ(estimate_step_time_s(graph, costs, model.link(), on(2, {0, 0, 0, 0})), 16.0);
}

}  // namespace
}  // namespace interplace::placement
