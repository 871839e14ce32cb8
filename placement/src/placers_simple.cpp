// The balanced (m-TOPO), round-robin and random placers.
#include <algorithm>
#include <cmath>
#include <vector>

#include "interplace/kernels/random.hpp"
#include "placer_support.hpp"
#include "seeded_random.hpp"

namespace interplace::placement {

Placement place_balanced(const Graph& graph, const Order& order, const PlacementRequest& request) {
  const detail::PlacerContext context = detail::make_placer_context(graph, order, request);
  const int k = context.device_count;
  double total_s = 0.0;
  for (NodeId node : order) total_s += context.costs.compute_s(node);
  // With no cost at all, balance node counts instead.
  const bool by_count = !(total_s > 0.0);
  auto cost_of = [&](NodeId node) { return by_count ? 1.0 : context.costs.compute_s(node); };
  const double share = (by_count ? static_cast<double>(order.size()) : total_s) / k;

  detail::MemoryLedger memory(context);
  Placement placement{k, std::vector<int>(graph.node_count(), 0)};
  int device = 0;
  double cumulative = 0.0;
  for (NodeId node : order) {
    const double midpoint = cumulative + 0.5 * cost_of(node);
    const int share_device = std::min(k - 1, static_cast<int>(std::floor(midpoint / share)));
    device = std::max(device, share_device);
    device = memory.first_fitting(device, node, /*wrap=*/false);
    if (device < 0) detail::throw_no_room("balanced", graph, node, context);
    placement.device_of_node[node] = device;
    memory.add(device, node);
    cumulative += cost_of(node);
  }
  return placement;
}

Placement place_round_robin(const Graph& graph, const Order& order,
                            const PlacementRequest& request) {
  const detail::PlacerContext context = detail::make_placer_context(graph, order, request);
  const int k = context.device_count;
  detail::MemoryLedger memory(context);
  Placement placement{k, std::vector<int>(graph.node_count(), 0)};
  for (size_t i = 0; i < order.size(); ++i) {
    const NodeId node = order[i];
    const int device = memory.first_fitting(static_cast<int>(i % k), node, /*wrap=*/true);
    if (device < 0) detail::throw_no_room("round-robin", graph, node, context);
    placement.device_of_node[node] = device;
    memory.add(device, node);
  }
  return placement;
}

Placement place_random(const Graph& graph, const Order& order, const PlacementRequest& request) {
  const detail::PlacerContext context = detail::make_placer_context(graph, order, request);
  const int k = context.device_count;
  detail::MemoryLedger memory(context);
  kernels::Rng rng(request.seed);
  Placement placement{k, std::vector<int>(graph.node_count(), 0)};
  std::vector<int> fitting;
  for (NodeId node : order) {
    int device = static_cast<int>(detail::uniform_index(rng, static_cast<uint64_t>(k)));
    if (!memory.fits(device, node)) {  // uniformly among the devices that still have room
      fitting.clear();
      for (int d = 0; d < k; ++d) {
        if (memory.fits(d, node)) fitting.push_back(d);
      }
      if (fitting.empty()) detail::throw_no_room("random", graph, node, context);
      device = fitting[detail::uniform_index(rng, fitting.size())];
    }
    placement.device_of_node[node] = device;
    memory.add(device, node);
  }
  return placement;
}

}  // namespace interplace::placement
