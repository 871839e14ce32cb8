// The greedy earliest-finish-time placer (list scheduling in the traversal order).
#include <algorithm>
#include <limits>
#include <vector>

#include "placer_support.hpp"

namespace interplace::placement {

Placement place_greedy_eft(const Graph& graph, const Order& order,
                           const PlacementRequest& request) {
  const detail::PlacerContext context = detail::make_placer_context(graph, order, request);
  const int k = context.device_count;
  detail::MemoryLedger memory(context);
  Placement placement{k, std::vector<int>(graph.node_count(), -1)};
  std::vector<double> finish_s(graph.node_count(), 0.0);
  std::vector<double> device_free_s(k, 0.0);
  for (NodeId node : order) {
    int best_device = -1;
    double best_finish_s = std::numeric_limits<double>::infinity();
    for (int device = 0; device < k; ++device) {
      if (!memory.fits(device, node)) continue;
      // Predecessors not placed yet (orders that are not topological) impose nothing.
      double data_ready_s = 0.0;
      for (NodeId pred : graph.nodes()[node].predecessors) {
        const int pred_device = placement.device_of_node[pred];
        if (pred_device < 0) continue;
        const double transfer_s = pred_device == device
                                      ? 0.0
                                      : request.cost_model.link().transfer_s(
                                            context.costs.output_bytes[pred], pred_device, device);
        data_ready_s = std::max(data_ready_s, finish_s[pred] + transfer_s);
      }
      const double start_s = std::max(device_free_s[device], data_ready_s);
      const double end_s = start_s + context.costs.compute_s(node);
      if (end_s < best_finish_s) {  // ties keep the lower device
        best_finish_s = end_s;
        best_device = device;
      }
    }
    if (best_device < 0) detail::throw_no_room("greedy-eft", graph, node, context);
    placement.device_of_node[node] = best_device;
    memory.add(best_device, node);
    finish_s[node] = best_finish_s;
    device_free_s[best_device] = best_finish_s;
  }
  return placement;
}

}  // namespace interplace::placement
