// Node-level schedules (schedule.hpp's node_level_schedule) for placements that are not
// stage chains: the list schedule of step_estimate.hpp as per-device action lists with a
// message per tensor that crosses devices, run by the one event simulator (simulator.hpp)
// as the runtime runs them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "graph_fixtures.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/simulator.hpp"
#include "interplace/placement/stage_chain.hpp"
#include "interplace/placement/stage_costs.hpp"
#include "interplace/placement/step_estimate.hpp"

namespace interplace::placement {
namespace {

// 0 -> 1 -> 2 -> 4 and 0 -> 3 -> 4; node 1 on device 1, the rest on device 0. Device 0
// can run the heavy branch 3 while node 1 is computed elsewhere.
struct Branches {
  Graph graph = testing::graph_from_inputs({{}, {0}, {1}, {0}, {2, 3}});
  Placement placement{2, {0, 1, 0, 0, 0}};
  CostModel model = testing::timed_cost_model(graph, {1, 1, 1, 4, 1}, {1, 1, 1, 4, 1}, LinkSpec{});
  NodeCosts costs = model.node_costs(graph);
};

ScheduleRequest request(int micro_batches, int mini_batches = 1) {
  return {.strategy = "global",
          .pipeline = PipelineKind::gpipe,
          .stage_count = 2,
          .micro_batches = micro_batches,
          .mini_batches = mini_batches};
}

// GPipe in ascending node order (what the runtime ran before the list schedule): per
// device all forwards by micro-batch then node id, then all backwards in reverse.
std::vector<std::vector<NodeTask>> ascending_gpipe(const Graph& graph, const Placement& p,
                                                   int micro_batches) {
  std::vector<std::vector<NodeTask>> tasks(static_cast<size_t>(p.device_count));
  for (int m = 0; m < micro_batches; ++m) {
    for (NodeId v = 0; v < graph.node_count(); ++v) {
      tasks[static_cast<size_t>(p.device_of_node[v])].push_back({v, m, false});
    }
  }
  for (int m = 0; m < micro_batches; ++m) {
    for (NodeId v = graph.node_count() - 1; v >= 0; --v) {
      tasks[static_cast<size_t>(p.device_of_node[v])].push_back({v, m, true});
    }
  }
  return tasks;
}

// The event simulator's step time of a node-level schedule: the optimiser steps cost
// nothing here (node_pipeline_costs leaves them to the caller), as in the estimate.
double replay(const Graph& graph, const NodeCosts& node_costs, const LinkSpec& link,
              const Placement& placement, const Schedule& schedule,
              const ComputeSharing& sharing = {}, double mini_batch_overhead_s = 0.0) {
  PipelineCosts costs = node_pipeline_costs(graph, placement, node_costs, link);
  costs.sharing = sharing;
  costs.mini_batch_overhead_s = mini_batch_overhead_s;
  return simulate(schedule, costs).step_time_s;
}

std::string list_text(const std::vector<Action>& actions) {
  std::string text;
  for (const Action& action : actions) text += to_string(action) + "; ";
  return text;
}

// a -> b -> c on devices 0, 1, 0: each tensor crosses once each way; the header's example.
TEST(NodeSchedule, AMessagePerTensorThatCrossesDevices) {
  const Graph graph = testing::chain(3);
  const Placement placement{2, {0, 1, 0}};
  const CostModel model = testing::timed_cost_model(graph, {1, 1, 1}, {1, 1, 1});
  const NodeCosts costs = model.node_costs(graph);
  const Schedule schedule = node_level_schedule(
      request(1), list_schedule_tasks(graph, costs, model.link(), placement, 1), graph, placement);
  EXPECT_EQ(list_text(schedule.stage_actions[0]),
            "fwd 0.0 n0; send act>1 0.0 n0; recv act<1 0.0 n1; fwd 0.0 n2; "
            "bwd 0.0 n2 loss1 upd prop; send grad1>1 0.0 n1; recv grad1<1 0.0 n0; "
            "bwd 0.0 n0 loss1 upd prop; step 0; ");
  EXPECT_EQ(list_text(schedule.stage_actions[1]),
            "recv act<0 0.0 n0; fwd 0.0 n1; send act>0 0.0 n1; recv grad1<0 0.0 n1; "
            "bwd 0.0 n1 loss1 upd prop; send grad1>0 0.0 n0; step 0; ");
  // Every action reads back from its text (logs, tests).
  for (const auto& list : schedule.stage_actions) {
    for (const Action& action : list) EXPECT_EQ(parse_action(to_string(action)), action);
  }
}

TEST(NodeSchedule, SimulatingTheListScheduleGivesTheEstimate) {
  const Branches b;
  ASSERT_FALSE(is_stage_chain(b.graph, b.placement));
  for (int m : {1, 3}) {
    const auto tasks = list_schedule_tasks(b.graph, b.costs, b.model.link(), b.placement, m);
    const Schedule schedule = node_level_schedule(request(m, 2), tasks, b.graph, b.placement);
    EXPECT_EQ(schedule.messages, MessageLevel::node);
    EXPECT_DOUBLE_EQ(replay(b.graph, b.costs, b.model.link(), b.placement, schedule),
                     estimate_step_time_s(b.graph, b.costs, b.model.link(), b.placement, m))
        << "M=" << m;
    // Every task once, on its node's device, 4 messages per micro-batch (0 to device 1 and
    // back, 1 to device 0 and back), one optimiser step per device and mini-batch.
    size_t count = 0;
    for (const auto& list : schedule.stage_actions) count += list.size();
    EXPECT_EQ(count, 2 * ((2 * 5 + 2 * 4) * static_cast<size_t>(m) + 2));
  }
}

// The receiver's own share of each tensor it takes (LinkSpec::receive_cpu, 0.25 s here of a
// 0.5 s transfer). Diamond 0 -> {1, 2} -> 3, nodes 1 and 2 on device 1, every task 1 s.
// The estimate charges a task the shares of its inputs: F0 [0, 1]; F1 takes 0's output at
// 1.25, [1.25, 2.5]; F2 finds it taken, [2.5, 3.5]; F3 takes 1's and 2's outputs, [3.75,
// 5.25]; B3 [5.25, 6.25]; B1 and B2 each take their output's gradient from device 0, [6.5,
// 7.75], [7.75, 9]; B0 takes one gradient from device 1 (its two consumers there sum theirs
// first), [9.25, 10.5]. Without the share (the whole 0.5 s a delay): 10.
// The schedule the runtime executes has a receive per tensor, which takes its share when
// it runs: device 0 takes 1's output at 2.75 (its own [2.75, 3]) while 2's is on the way,
// 2's [3.75, 4], F3 [4, 5]; the rest as above, 0.25 earlier: 10.25.
TEST(NodeSchedule, TheReceiverPaysItsShareOfEveryTensorItTakes) {
  const Graph graph = testing::diamond();
  const Placement placement{2, {0, 1, 1, 0}};
  LinkSpec link{.latency_s = 0.5};
  const CostModel model = testing::timed_cost_model(graph, {1, 1, 1, 1}, {1, 1, 1, 1}, link);
  const NodeCosts costs = model.node_costs(graph);
  EXPECT_DOUBLE_EQ(estimate_step_time_s(graph, costs, link, placement, 1), 10.0);
  link.receive_cpu = {{1, 0.25}, {int64_t{1} << 40, 0.25}};
  EXPECT_DOUBLE_EQ(estimate_step_time_s(graph, costs, link, placement, 1), 10.5);
  const auto replayed = [&](int m) {
    return replay(
        graph, costs, link, placement,
        node_level_schedule(request(m, 2), list_schedule_tasks(graph, costs, link, placement, m),
                            graph, placement));
  };
  EXPECT_DOUBLE_EQ(replayed(1), 10.25);
  EXPECT_LE(replayed(3), estimate_step_time_s(graph, costs, link, placement, 3));
  // On one device nothing crosses: no share.
  EXPECT_DOUBLE_EQ(estimate_step_time_s(graph, costs, link, Placement{1, {0, 0, 0, 0}}, 1), 8.0);
}

// Ranks on one host that compute at once slow each other down (factor 2 with both busy):
// worked by hand from the list order 0 3 2 4 b4 b2 b3 b0 on device 0 and 1 b1 on device 1.
// Node 1 and node 3 start together at 1 and share: node 1 ends at 3, node 3 has 3 s of work
// left, alone, so ends at 6; 2 [6, 7], 4 [7, 8], b4 [8, 9], b2 [9, 10]; then b1 and b3 share
// from 10: b1 ends at 12, b3 at 15; b0 [15, 16]. Without sharing the step is 14.
TEST(NodeSchedule, RanksSharingAHostSlowEachOtherDown) {
  const Branches b;
  const auto tasks = list_schedule_tasks(b.graph, b.costs, b.model.link(), b.placement, 1);
  const Schedule schedule = node_level_schedule(request(1), tasks, b.graph, b.placement);
  HostSharing table;
  table.slowdown[2] = {1.0, 2.0};
  const ComputeSharing one_host = ComputeSharing::consecutive(2, 2, table);
  EXPECT_DOUBLE_EQ(replay(b.graph, b.costs, b.model.link(), b.placement, schedule), 14.0);
  EXPECT_DOUBLE_EQ(replay(b.graph, b.costs, b.model.link(), b.placement, schedule, one_host), 16.0);
  // One rank per host: nothing is shared.
  EXPECT_DOUBLE_EQ(replay(b.graph, b.costs, b.model.link(), b.placement, schedule,
                          ComputeSharing::consecutive(2, 1, table)),
                   14.0);
  // A table for another number of ranks per host does not apply.
  HostSharing other;
  other.slowdown[3] = {1.0, 2.0, 3.0};
  EXPECT_DOUBLE_EQ(replay(b.graph, b.costs, b.model.link(), b.placement, schedule,
                          ComputeSharing::consecutive(2, 2, other)),
                   14.0);
}

// Each device draws the mini-batch (0.5) before its first task: the schedule of 14 starts
// 0.5 later everywhere; sharing one host with factor 2, both draw at once for 1.
TEST(NodeSchedule, EveryDeviceDrawsTheMiniBatchFirst) {
  const Branches b;
  const auto tasks = list_schedule_tasks(b.graph, b.costs, b.model.link(), b.placement, 1);
  const Schedule schedule = node_level_schedule(request(1), tasks, b.graph, b.placement);
  EXPECT_DOUBLE_EQ(replay(b.graph, b.costs, b.model.link(), b.placement, schedule, {}, 0.5), 14.5);
  HostSharing table;
  table.slowdown[2] = {1.0, 2.0};
  EXPECT_DOUBLE_EQ(replay(b.graph, b.costs, b.model.link(), b.placement, schedule,
                          ComputeSharing::consecutive(2, 2, table), 0.5),
                   17.0);
  EXPECT_THROW(replay(b.graph, b.costs, b.model.link(), b.placement, schedule, {}, -1.0), Error);
}

TEST(NodeSchedule, ListOrderUsesBranchParallelismAscendingOrderDoesNot) {
  const Branches b;
  // Hand-computed, M = 1: list: device 0 runs F0 [0,1], F3 [1,5] while device 1 runs F1
  // [1,2], then F2 [5,6], F4 [6,7], B4 [7,8], B2 [8,9] (ties: lower node id first), B3
  // [9,13] while device 1 runs B1 [9,10], B0 [13,14]. Ascending: F2 waits for F1 ([2,3]), F3 [3,7],
  // F4 [7,8], B4 [8,9], B3 [9,13], B2 [13,14], B1 [14,15], B0 [15,16].
  const Schedule list = node_level_schedule(
      request(1), list_schedule_tasks(b.graph, b.costs, b.model.link(), b.placement, 1), b.graph,
      b.placement);
  const Schedule ascending = node_level_schedule(
      request(1), ascending_gpipe(b.graph, b.placement, 1), b.graph, b.placement);
  EXPECT_DOUBLE_EQ(replay(b.graph, b.costs, b.model.link(), b.placement, list), 14.0);
  EXPECT_DOUBLE_EQ(replay(b.graph, b.costs, b.model.link(), b.placement, ascending), 16.0);
  // Rank 0's list as docs/runtime.md prints it.
  EXPECT_EQ(list_text(list.stage_actions[0]),
            "fwd 0.0 n0; send act>1 0.0 n0; fwd 0.0 n3; recv act<1 0.0 n1; fwd 0.0 n2; "
            "fwd 0.0 n4; bwd 0.0 n4 loss1 upd prop; bwd 0.0 n2 loss1 upd prop; "
            "send grad1>1 0.0 n1; bwd 0.0 n3 loss1 upd prop; recv grad1<1 0.0 n0; "
            "bwd 0.0 n0 loss1 upd prop; step 0; ");
}

TEST(NodeSchedule, RefusesWhatCannotRun) {
  const Branches b;
  auto tasks = list_schedule_tasks(b.graph, b.costs, b.model.link(), b.placement, 1);
  // F2 before F0 on device 0: F2 needs F1, which needs F0: a deadlock, reported.
  auto& device0 = tasks[0];
  const auto f2 = std::find_if(device0.begin(), device0.end(),
                               [](const NodeTask& t) { return t.node == 2 && !t.backward; });
  std::rotate(device0.begin(), f2, f2 + 1);
  EXPECT_THROW(replay(b.graph, b.costs, b.model.link(), b.placement,
                      node_level_schedule(request(1), tasks, b.graph, b.placement)),
               Error);
  EXPECT_THROW(
      node_level_schedule({.strategy = "global", .stage_count = 2}, tasks, b.graph, b.placement),
      Error);
  EXPECT_THROW(node_level_schedule(request(1), {tasks[0]}, b.graph, b.placement), Error);
  // A task of a node on the other device.
  EXPECT_THROW(node_level_schedule(request(1), {tasks[1], tasks[0]}, b.graph, b.placement), Error);
}

}  // namespace
}  // namespace interplace::placement
