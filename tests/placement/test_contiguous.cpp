#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>

#include "graph_fixtures.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/random.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/stage_chain.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::placement {
namespace {

// The contiguous objective straight from its definition, on sets: a device pays the
// compute of its nodes and a round trip (2 transfers) for every tensor it sends to at
// least one other device and for every tensor it receives from another device.
// With a two-level link each round trip is over the link between the two devices.
double slowest_device_s(const Graph& graph, const std::vector<int>& device_of_node, int k,
                        const NodeCosts& costs, const CostModel& model) {
  std::vector<double> load(k, 0.0);
  for (const Node& node : graph.nodes()) {
    const int home = device_of_node[node.id];
    load[home] += costs.forward_s[node.id] + costs.backward_s[node.id];
    std::set<int> receivers;
    for (NodeId consumer : node.successors) {
      if (device_of_node[consumer] != home) receivers.insert(device_of_node[consumer]);
    }
    // Over the link between the two devices (intra- or inter-node); the sender pays its
    // slowest receiver's.
    double sender = 0.0;
    for (int device : receivers) {
      const double round_trip =
          2.0 * model.link().transfer_s(costs.output_bytes[node.id], home, device);
      load[device] += round_trip;
      sender = std::max(sender, round_trip);
    }
    load[home] += sender;
  }
  return *std::max_element(load.begin(), load.end());
}

// Minimum over every split of `order` into k non-empty contiguous chunks that fits (and,
// with `stage_chains_only`, that local strategies can run on, by the library's own check).
double brute_force_best_s(const Graph& graph, const Order& order, int k, const NodeCosts& costs,
                          const CostModel& model, int64_t capacity, int in_flight,
                          bool stage_chains_only = false) {
  const int n = graph.node_count();
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> cuts(k - 1);
  // Enumerate cut positions 1 <= c1 < c2 < ... < n via bitmasks over positions 1..n-1.
  for (uint32_t mask = 0; mask < (1u << (n - 1)); ++mask) {
    if (__builtin_popcount(mask) != k - 1) continue;
    std::vector<int> device_of_node(n);
    std::vector<int64_t> memory(k, 0);
    int device = 0;
    for (int i = 0; i < n; ++i) {
      if (i > 0 && (mask >> (i - 1)) & 1u) ++device;
      device_of_node[order[i]] = device;
      memory[device] += costs.memory_bytes(order[i], in_flight);
    }
    if (*std::max_element(memory.begin(), memory.end()) > capacity) continue;
    if (stage_chains_only &&
        local_strategy_ineligibility(graph, Placement{k, device_of_node}).has_value()) {
      continue;
    }
    best = std::min(best, slowest_device_s(graph, device_of_node, k, costs, model));
  }
  return best;
}

TEST(Contiguous, MatchesBruteForceOnSmallRandomGraphs) {
  int checked = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const int n = 3 + static_cast<int>(seed % 6);  // 3..8 nodes
    const Graph graph = testing::random_dag(n, 0.3, seed);
    kernels::Rng rng(seed * 7);
    std::vector<double> forward_s(n);
    std::vector<double> backward_s(n);
    for (int i = 0; i < n; ++i) {
      forward_s[i] = 0.1 + rng.uniform();
      backward_s[i] = 2.0 * forward_s[i];
    }
    const LinkSpec link{0.05 * static_cast<double>(seed % 3), 1e3};  // output bytes are 16..1024
    // Every third case is memory-tight: about half the graph per device.
    const NodeCosts plain =
        testing::timed_cost_model(graph, forward_s, backward_s, link).node_costs(graph);
    int64_t total = 0;
    int64_t largest = 0;
    for (int i = 0; i < n; ++i) {
      total += plain.memory_bytes(i, 2);
      largest = std::max(largest, plain.memory_bytes(i, 2));
    }
    const int64_t capacity = seed % 3 == 0 ? std::max(largest, total / 2) : total;
    const CostModel model = testing::timed_cost_model(graph, forward_s, backward_s, link, capacity);
    const NodeCosts costs = model.node_costs(graph);
    for (const std::string order_name : {"topo", "bfs-rev", "random", "lexical"}) {
      const Order order =
          compute_order(graph, order_by_name(order_name), {.seed = seed, .node_cost = {}});
      for (int k = 1; k <= std::min(n, 4); ++k) {
        const double expected = brute_force_best_s(graph, order, k, costs, model, capacity, 2);
        PlacementRequest request{.device_count = k, .cost_model = model, .micro_batches = 2};
        if (expected == std::numeric_limits<double>::infinity()) {
          EXPECT_THROW(place_contiguous(graph, order, request), Error);
          continue;
        }
        const Placement placement = place_contiguous(graph, order, request);
        const double got = slowest_device_s(graph, placement.device_of_node, k, costs, model);
        EXPECT_NEAR(got, expected, 1e-9 * expected)
            << "seed " << seed << " " << order_name << " k " << k;
        // Library loads agree with the definition above.
        const std::vector<double> loads = device_loads_s(graph, placement, costs, model);
        EXPECT_NEAR(*std::max_element(loads.begin(), loads.end()), got, 1e-9 * got);
        // Chunk i of the order is on device i, every device used.
        int previous = 0;
        for (NodeId node : order) {
          EXPECT_GE(placement.device_of_node[node], previous);
          EXPECT_LE(placement.device_of_node[node], previous + 1);
          previous = placement.device_of_node[node];
        }
        EXPECT_EQ(previous, k - 1);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 300);
}

// The stages placer is the contiguous DP restricted to single-tensor cuts: it must find
// the best split among exactly those the stage-chain check accepts, and throw when none.
TEST(Stages, MatchesBruteForceOverEligibleSplits) {
  int placed = 0;
  int impossible = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const int n = 3 + static_cast<int>(seed % 7);  // 3..9 nodes
    const Graph graph = testing::random_dag(n, 0.25, seed);
    kernels::Rng rng(seed * 11);
    std::vector<double> forward_s(n);
    std::vector<double> backward_s(n);
    for (int i = 0; i < n; ++i) {
      forward_s[i] = 0.1 + rng.uniform();
      backward_s[i] = 2.0 * forward_s[i];
    }
    const CostModel model =
        testing::timed_cost_model(graph, forward_s, backward_s, LinkSpec{0.01, 1e3});
    const NodeCosts costs = model.node_costs(graph);
    for (const std::string order_name : {"topo", "dfs-post-rev", "random-topo", "random"}) {
      const Order order =
          compute_order(graph, order_by_name(order_name), {.seed = seed, .node_cost = {}});
      for (int k = 1; k <= std::min(n, 4); ++k) {
        const double expected = brute_force_best_s(graph, order, k, costs, model,
                                                   std::numeric_limits<int64_t>::max(), 2, true);
        PlacementRequest request{.device_count = k, .cost_model = model, .micro_batches = 2};
        if (expected == std::numeric_limits<double>::infinity()) {
          EXPECT_THROW(place_stages(graph, order, request), Error)
              << "seed " << seed << " " << order_name << " k " << k;
          ++impossible;
          continue;
        }
        const Placement placement = place_stages(graph, order, request);
        EXPECT_EQ(local_strategy_ineligibility(graph, placement), std::nullopt)
            << "seed " << seed << " " << order_name << " k " << k;
        const double got = slowest_device_s(graph, placement.device_of_node, k, costs, model);
        EXPECT_NEAR(got, expected, 1e-9 * expected)
            << "seed " << seed << " " << order_name << " k " << k;
        ++placed;
      }
    }
  }
  EXPECT_GT(placed, 100);
  EXPECT_GT(impossible, 10);  // the random graphs and orders include uncuttable ones
}

TEST(Stages, ZooModelsSplitAtBlockBoundaries) {
  for (const auto& [model, max_devices] :
       std::vector<std::pair<std::string, int>>{{"resnet20", 4}, {"gpt-mini", 3}}) {
    const Graph graph = build_model(model, {.batch_size = 4});
    const CostModel cost_model(DeviceSpec{"test", 1e11, 1e10, int64_t{1} << 40},
                               LinkSpec{1e-5, 1e9});
    const Order order = compute_order(graph, order_by_name("topo"), {});
    for (int k = 2; k <= max_devices; ++k) {
      const Placement placement =
          place_stages(graph, order, {.device_count = k, .cost_model = cost_model});
      EXPECT_EQ(local_strategy_ineligibility(graph, placement), std::nullopt)
          << model << " k " << k;
    }
  }
}

// An order shorter than the graph was read past its end (AddressSanitizer,
// heap-buffer-overflow in single_tensor_cuts) instead of refused.
TEST(Stages, RefusesAnOrderShorterThanTheGraph) {
  const Graph graph = testing::chain(8);
  const CostModel model = testing::timed_cost_model(graph, std::vector<double>(8, 1.0),
                                                    std::vector<double>(8, 2.0), {0.1, 1e9});
  Order order = topological_order(graph);
  order.resize(3);
  EXPECT_THROW(place_stages(graph, order, {.device_count = 2, .cost_model = model}), Error);
  EXPECT_THROW(place_contiguous(graph, order, {.device_count = 2, .cost_model = model}), Error);
}

// A chain whose node i outputs widths[i] floats (batch 1), one unit of compute per node.
Graph chain_with_widths(const std::vector<int64_t>& widths) {
  Graph graph("chain", 1);
  for (size_t i = 0; i < widths.size(); ++i) {
    NodeSpec spec;
    spec.name = "n" + std::to_string(i);
    spec.op = "op";
    if (i > 0) spec.inputs.push_back(static_cast<NodeId>(i - 1));
    spec.output_shape = {1, widths[i]};
    spec.forward_flops = 100;
    spec.backward_flops = 200;
    graph.add_node(spec);
  }
  return graph;
}

// On a chain every tensor goes to the next chunk only, so the DP's left/right links are
// exactly the pairs' links: it must find the brute-force optimum with two nodes.
TEST(Contiguous, TwoLevelLinkMatchesBruteForceOnChains) {
  int checked = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    kernels::Rng rng(seed);
    const int n = 5 + static_cast<int>(seed % 4);  // 5..8 nodes
    std::vector<int64_t> widths(n);
    for (int64_t& w : widths) w = 1 + static_cast<int64_t>(rng.next_u64() % 256);
    const Graph graph = chain_with_widths(widths);
    LinkSpec link{1e-3, 1e6};  // intra: 1 ms + 4 us per float
    link.devices_per_node = 1 + static_cast<int>(seed % 2);
    link.inter_node_latency_s = 1e-2;
    link.inter_node_bandwidth_bytes_per_s = 1e4;  // inter: 10 ms + 0.4 ms per float
    std::vector<double> forward_s(n), backward_s(n);
    for (int i = 0; i < n; ++i) {
      forward_s[i] = 0.01 + 0.02 * rng.uniform();
      backward_s[i] = 2.0 * forward_s[i];
    }
    const CostModel model = testing::timed_cost_model(graph, forward_s, backward_s, link);
    const NodeCosts costs = model.node_costs(graph);
    const Order order = topological_order(graph);
    for (int k = 2; k <= 4; ++k) {
      const double expected =
          brute_force_best_s(graph, order, k, costs, model, std::numeric_limits<int64_t>::max(), 2);
      const Placement placement =
          place_contiguous(graph, order, {.device_count = k, .cost_model = model});
      const double got = slowest_device_s(graph, placement.device_of_node, k, costs, model);
      EXPECT_NEAR(got, expected, 1e-9 * expected) << "seed " << seed << " k " << k;
      const std::vector<double> loads = device_loads_s(graph, placement, costs, model);
      EXPECT_NEAR(*std::max_element(loads.begin(), loads.end()), got, 1e-9 * got);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 90);
}

TEST(Contiguous, InterNodeCutGoesWhereTheTensorIsSmall) {
  // Eight equal nodes, big tensors except node 2's. One node: cuts at 2, 4, 6 (even
  // compute). Two nodes of two devices, a slow network: the cut between devices 1 and 2
  // (the nodes) moves to after node 2, whose tensor is small.
  const std::vector<int64_t> widths = {4096, 4096, 1, 4096, 4096, 4096, 4096, 4096};
  const Graph graph = chain_with_widths(widths);
  LinkSpec link{0.0, 1e12};
  const auto place = [&](const LinkSpec& l) {
    const CostModel model = testing::timed_cost_model(graph, std::vector<double>(8, 1.0),
                                                      std::vector<double>(8, 2.0), l);
    return place_contiguous(graph, topological_order(graph),
                            {.device_count = 4, .cost_model = model})
        .device_of_node;
  };
  EXPECT_EQ(place(link), (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  link.devices_per_node = 2;
  link.inter_node_latency_s = 1e-3;
  link.inter_node_bandwidth_bytes_per_s = 1e4;  // a 16 KiB tensor: 1.6 s each way
  const std::vector<int> two_nodes = place(link);
  int cut = 0;  // first node on device 2 (node 2 of the cluster)
  while (two_nodes[cut] < 2) ++cut;
  EXPECT_EQ(cut, 3) << "devices: " << two_nodes[0] << two_nodes[1] << two_nodes[2] << two_nodes[3]
                    << two_nodes[4] << two_nodes[5] << two_nodes[6] << two_nodes[7];
}

TEST(Contiguous, UniformChainSplitsEvenly) {
  const Graph graph = testing::chain(8);
  const CostModel model = testing::timed_cost_model(graph, std::vector<double>(8, 1.0),
                                                    std::vector<double>(8, 2.0), {0.1, 1e9});
  const Placement placement =
      place_contiguous(graph, topological_order(graph), {.device_count = 4, .cost_model = model});
  EXPECT_EQ(placement.device_of_node, (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
}

TEST(Contiguous, ExpensiveLinkCanLeaveOneBigChunkBalanced) {
  // Six unit nodes; a boundary round trip costs 4 s (more than two nodes of compute), so
  // the best 2-split is the middle one: 3 + 4 = 7 on each device.
  const Graph graph = testing::chain(6);
  const CostModel model = testing::timed_cost_model(graph, std::vector<double>(6, 0.5),
                                                    std::vector<double>(6, 0.5), {2.0, 1e12});
  const Placement placement =
      place_contiguous(graph, topological_order(graph), {.device_count = 2, .cost_model = model});
  EXPECT_EQ(placement.device_of_node, (std::vector<int>{0, 0, 0, 1, 1, 1}));
  const NodeCosts costs = model.node_costs(graph);
  const std::vector<double> loads = device_loads_s(graph, placement, costs, model);
  EXPECT_NEAR(loads[0], 7.0, 1e-9);
  EXPECT_NEAR(loads[1], 7.0, 1e-9);
}

TEST(Contiguous, MemoryForcesAnUnbalancedSplit) {
  // Each fixture node needs 120 + 16 bytes; 300 bytes per device hold at most two.
  const Graph graph = testing::chain(6);
  const CostModel model =
      testing::timed_cost_model(graph, {5, 1, 1, 1, 1, 1}, std::vector<double>(6, 0.0), {}, 300);
  const Placement placement =
      place_contiguous(graph, topological_order(graph), {.device_count = 3, .cost_model = model});
  EXPECT_EQ(placement.device_of_node, (std::vector<int>{0, 0, 1, 1, 2, 2}));
  EXPECT_THROW(
      place_contiguous(graph, topological_order(graph), {.device_count = 2, .cost_model = model}),
      Error);
}

}  // namespace
}  // namespace interplace::placement
