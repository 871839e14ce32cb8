#include <gtest/gtest.h>

#include <algorithm>

#include "graph_fixtures.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/step_estimate.hpp"

namespace interplace::placement {
namespace {

// Fixture nodes need 120 bytes of parameter state (10 params, SGD momentum) + 16 bytes of
// activation per micro-batch.
constexpr int64_t kNodeBytes = 136;

PlacementRequest request_for(const CostModel& model, int k) {
  return {.device_count = k, .cost_model = model};
}

TEST(GreedyEft, PutsEachNodeWhereItFinishesFirst) {
  // Diamond, compute (forward+backward) 1, 2, 2, 1 s, latency 0.5 s:
  //   0 -> dev0 [0, 1]; 1 -> dev0 [1, 3] (dev1 would finish 3.5);
  //   2 -> dev1 [1.5, 3.5] (dev0 would finish 5);
  //   3 -> dev1: ready max(3 + 0.5, 3.5) = 3.5, finishes 4.5 (dev0: max(3, 4) + 1 = 5).
  const Graph graph = testing::diamond();
  const CostModel model =
      testing::timed_cost_model(graph, {0.5, 1, 1, 0.5}, {0.5, 1, 1, 0.5}, {0.5, 1e15});
  const Placement placement =
      place_greedy_eft(graph, topological_order(graph), request_for(model, 2));
  EXPECT_EQ(placement.device_of_node, (std::vector<int>{0, 0, 1, 1}));
}

TEST(GreedyEft, IsMemoryAware) {
  // A chain over a slow link finishes earliest all on device 0; with room for two nodes
  // per device, nodes 2 and 3 must go to device 1.
  const Graph graph = testing::chain(4);
  const std::vector<double> one(4, 1.0);
  const CostModel roomy = testing::timed_cost_model(graph, one, one, {10.0, 1e15});
  EXPECT_EQ(place_greedy_eft(graph, topological_order(graph), request_for(roomy, 2)).device_of_node,
            (std::vector<int>{0, 0, 0, 0}));
  const CostModel tight = testing::timed_cost_model(graph, one, one, {10.0, 1e15}, 2 * kNodeBytes);
  EXPECT_EQ(place_greedy_eft(graph, topological_order(graph), request_for(tight, 2)).device_of_node,
            (std::vector<int>{0, 0, 1, 1}));
  // In a reversed order no input is placed yet, so only device time counts: 3 -> dev0
  // [0, 2], 2 -> dev1 [0, 2], 1 -> dev0 (tie at 4, lower device), 0 -> dev1 (dev0 full).
  const Placement reversed = place_greedy_eft(graph, Order{3, 2, 1, 0}, request_for(tight, 2));
  EXPECT_EQ(reversed.device_of_node, (std::vector<int>{1, 0, 1, 0}));
}

TEST(Balanced, FillsDevicesInOrderUpToTheirShare) {
  const Graph graph = testing::chain(8);
  const CostModel uniform =
      testing::timed_cost_model(graph, std::vector<double>(8, 1.0), std::vector<double>(8, 1.0));
  EXPECT_EQ(place_balanced(graph, topological_order(graph), request_for(uniform, 4)).device_of_node,
            (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  // Costs 1,1,1,5 over two devices: share 4; midpoints 0.5, 1.5, 2.5 | 5.5.
  const Graph four = testing::chain(4);
  const CostModel skewed = testing::timed_cost_model(four, {1, 1, 1, 5}, {0, 0, 0, 0});
  EXPECT_EQ(place_balanced(four, topological_order(four), request_for(skewed, 2)).device_of_node,
            (std::vector<int>{0, 0, 0, 1}));
  // The order decides: reversed, the heavy node comes first and fills device 0 alone.
  Order reversed = topological_order(four);
  std::reverse(reversed.begin(), reversed.end());
  EXPECT_EQ(place_balanced(four, reversed, request_for(skewed, 2)).device_of_node,
            (std::vector<int>{1, 1, 1, 0}));
}

TEST(Balanced, MemoryPushesNodesToLaterDevices) {
  const Graph graph = testing::chain(6);
  // Share 10/3; by cost nodes 0..2 belong on device 0, but it holds only two nodes, and
  // node 4 finds device 1 full too.
  const CostModel model = testing::timed_cost_model(
      graph, {1, 1, 1, 1, 1, 5}, std::vector<double>(6, 0.0), {}, 2 * kNodeBytes);
  const Placement placement =
      place_balanced(graph, topological_order(graph), request_for(model, 3));
  EXPECT_EQ(placement.device_of_node, (std::vector<int>{0, 0, 1, 1, 2, 2}));
  // Devices are filled in order and never revisited: with the heavy node first, nodes
  // 1..5 all belong to devices 1 and 2, which hold only four. Greedy, so it gives up.
  const CostModel heavy_first = testing::timed_cost_model(
      graph, {5, 1, 1, 1, 1, 1}, std::vector<double>(6, 0.0), {}, 2 * kNodeBytes);
  try {
    place_balanced(graph, topological_order(graph), request_for(heavy_first, 3));
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_input);
    EXPECT_NE(std::string(error.what()).find("'n5'"), std::string::npos) << error.what();
  }
}

TEST(RoundRobin, CyclesThroughDevicesInTheOrder) {
  const Graph graph = testing::diamond();
  const CostModel model = testing::timed_cost_model(graph, {1, 1, 1, 1}, {1, 1, 1, 1});
  const Placement placement = place_round_robin(graph, Order{3, 1, 0, 2}, request_for(model, 2));
  EXPECT_EQ(placement.device_of_node, (std::vector<int>{0, 1, 1, 0}));
  // A node that does not fit its turn's device goes to the next one with room: node 0
  // holds 1216 bytes, so device 0 (1220 bytes) cannot also take node 2 (16 bytes).
  Graph skewed("skewed", 1);
  for (int i = 0; i < 4; ++i) {
    NodeSpec spec;
    spec.name = std::string("n").append(std::to_string(i));
    spec.op = "op";
    spec.output_shape = {1, 4};
    spec.parameter_count = i == 0 ? 100 : 0;
    if (i > 0) spec.inputs = {i - 1};
    skewed.add_node(spec);
  }
  PlacementRequest tight = request_for(
      testing::timed_cost_model(skewed, std::vector<double>(4, 1.0), std::vector<double>(4, 1.0)),
      2);
  tight.memory_capacity_bytes = 1220;
  const Placement skipped = place_round_robin(skewed, topological_order(skewed), tight);
  EXPECT_EQ(skipped.device_of_node, (std::vector<int>{0, 1, 1, 1}));
}

TEST(RandomPlacer, IsSeededAndUsesEveryDevice) {
  const Graph graph = testing::random_dag(200, 0.05, 3);
  const CostModel model({"d", 1e12, 1e11, int64_t{1} << 40}, {});
  PlacementRequest request = request_for(model, 4);
  request.seed = 9;
  const Placement a = place_random(graph, topological_order(graph), request);
  const Placement b = place_random(graph, topological_order(graph), request);
  request.seed = 10;
  const Placement c = place_random(graph, topological_order(graph), request);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (int count : device_node_counts(a)) EXPECT_GT(count, 25);
}

TEST(Refine, ConvergesToALocalOptimumNoWorseThanItsStart) {
  // A chain with an expensive link, pipelined over 4 micro-batches: round-robin
  // alternates devices on every edge, which refine must largely undo.
  const Graph graph = testing::chain(12);
  const CostModel model = testing::timed_cost_model(graph, std::vector<double>(12, 1.0),
                                                    std::vector<double>(12, 2.0), {5.0, 1e15});
  PlacementRequest request = request_for(model, 3);
  request.micro_batches = 4;
  request.refine_start = "round-robin";
  request.refine_rounds = 100;  // until no move helps
  request.refine_all_devices = true;
  const Order order = topological_order(graph);
  const NodeCosts costs = model.node_costs(graph);
  auto estimate = [&](const Placement& placement) {
    return estimate_step_time_s(graph, costs, model.link(), placement, 4);
  };
  const double start_s = estimate(place_round_robin(graph, order, request));
  Placement refined = place_refine(graph, order, request);
  const double refined_s = estimate(refined);
  EXPECT_LT(refined_s, start_s);
  // No single move improves it any more.
  for (NodeId node = 0; node < graph.node_count(); ++node) {
    const int home = refined.device_of_node[node];
    for (int device = 0; device < 3; ++device) {
      refined.device_of_node[node] = device;
      EXPECT_GE(estimate(refined), refined_s - 1e-9) << "node " << node << " -> " << device;
    }
    refined.device_of_node[node] = home;
  }
  request.refine_rounds = 2;
  request.refine_all_devices = false;  // neighbours' devices and the least-loaded one
  for (const std::string start : {"contiguous", "balanced", "greedy-eft", "random"}) {
    request.refine_start = start;
    const double before = estimate(placer_by_name(start)(graph, order, request));
    EXPECT_LE(estimate(place_refine(graph, order, request)), before) << start;
  }
}

TEST(Refine, UsesThePluggedInEstimatorAndRespectsMemory) {
  const Graph graph = testing::chain(6);
  const CostModel model = testing::timed_cost_model(
      graph, std::vector<double>(6, 1.0), std::vector<double>(6, 1.0), {}, 4 * kNodeBytes);
  PlacementRequest request = request_for(model, 3);
  request.refine_start = "round-robin";
  int calls = 0;
  // Prefers nodes on high devices: every node moves up as far as memory allows.
  request.refine_estimator = [&](const Placement& placement) {
    ++calls;
    double score = 0.0;
    for (int device : placement.device_of_node) score -= device;
    return score;
  };
  const Placement placement = place_refine(graph, topological_order(graph), request);
  EXPECT_GT(calls, 6);
  EXPECT_EQ(device_node_counts(placement), (std::vector<int>{0, 2, 4}));
  request.refine_start = "refine";
  EXPECT_THROW(place_refine(graph, topological_order(graph), request), Error);
}

TEST(Placers, RejectImpossibleRequests) {
  const Graph graph = testing::diamond();
  const CostModel model = testing::timed_cost_model(graph, {1, 1, 1, 1}, {1, 1, 1, 1}, {}, 1000);
  const Order order = topological_order(graph);
  for (const std::string& name : placer_names()) {
    const Placer placer = placer_by_name(name);
    PlacementRequest request = request_for(model, 5);  // more devices than nodes
    EXPECT_THROW(placer(graph, order, request), Error) << name;
    request.device_count = 0;
    EXPECT_THROW(placer(graph, order, request), Error) << name;
    request.device_count = 2;
    request.memory_capacity_bytes = kNodeBytes - 1;  // no node fits anywhere
    EXPECT_THROW(placer(graph, order, request), Error) << name;
    request.memory_capacity_bytes = kNodeBytes;  // 4 nodes, room for 2
    EXPECT_THROW(placer(graph, order, request), Error) << name;
    request.memory_capacity_bytes = std::nullopt;
    EXPECT_THROW(placer(graph, Order{0, 1, 2}, request), Error) << name;
    EXPECT_NO_THROW(placer(graph, order, request)) << name;
  }
  try {
    placer_by_name("metis");
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_input);
    for (const std::string& name : placer_names()) {
      EXPECT_NE(std::string(error.what()).find(name), std::string::npos);
    }
  }
}

TEST(Placers, AllRespectMemoryOnRandomGraphs) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const Graph graph = testing::random_dag(80, 0.05, seed);
    const CostModel model({"d", 1e9, 1e10, int64_t{1} << 40}, {1e-6, 1e9});
    const NodeCosts costs = model.node_costs(graph);
    int64_t total = 0;
    for (NodeId id = 0; id < graph.node_count(); ++id) total += costs.memory_bytes(id, 2);
    for (const std::string& name : placer_names()) {
      PlacementRequest request = request_for(model, 4);
      request.micro_batches = 2;
      request.seed = seed;
      request.refine_rounds = 1;
      request.memory_capacity_bytes = total / 3;  // some slack over total / 4
      const Order order = compute_order(graph, OrderKind::dfs_pre, {});
      Placement placement;
      try {
        placement = placer_by_name(name)(graph, order, request);
      } catch (const Error& error) {  // a greedy placer may paint itself into a corner
        EXPECT_EQ(error.kind(), ErrorKind::invalid_input) << name;
        EXPECT_NE(name, "contiguous");
        continue;
      }
      ASSERT_NO_THROW(require_valid_placement(graph, placement)) << name;
      for (int64_t bytes : device_memory_bytes(placement, costs, 2)) {
        EXPECT_LE(bytes, total / 3) << name << " seed " << seed;
      }
    }
  }
}

}  // namespace
}  // namespace interplace::placement
