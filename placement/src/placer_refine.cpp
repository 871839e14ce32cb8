// The refine placer: greedy local search over single-node moves, visiting nodes in the
// order (Placeto's decision sequence with a greedy policy instead of a learned one).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/step_estimate.hpp"
#include "placer_support.hpp"

namespace interplace::placement {
namespace {

// Devices worth trying for `node`: its neighbours' devices and the least-loaded device
// (a move anywhere else only adds communication without relieving the busiest device
// more than the least-loaded one would).
void neighbour_candidates(const Graph& graph, const Placement& placement, NodeId node,
                          const std::vector<double>& load_s, std::vector<int>& candidates) {
  candidates.clear();
  auto add = [&](int device) {
    if (std::find(candidates.begin(), candidates.end(), device) == candidates.end()) {
      candidates.push_back(device);
    }
  };
  for (NodeId pred : graph.nodes()[node].predecessors) add(placement.device_of_node[pred]);
  for (NodeId succ : graph.nodes()[node].successors) add(placement.device_of_node[succ]);
  add(static_cast<int>(std::min_element(load_s.begin(), load_s.end()) - load_s.begin()));
  std::sort(candidates.begin(), candidates.end());  // ties go to the lower device
}

}  // namespace

Placement place_refine(const Graph& graph, const Order& order, const PlacementRequest& request) {
  if (request.refine_start == "refine") throw_invalid("refine cannot start from refine itself");
  if (request.refine_rounds < 0) {
    throw_invalid("refine_rounds must be >= 0, got " + std::to_string(request.refine_rounds));
  }
  const detail::PlacerContext context = detail::make_placer_context(graph, order, request);
  Placement placement = placer_by_name(request.refine_start)(graph, order, request);
  StepTimeEstimator estimate = request.refine_estimator;
  if (!estimate) {
    estimate = [list_schedule = std::make_shared<StepTimeEstimate>(
                    graph, context.costs, request.cost_model.link(), request.micro_batches)](
                   const Placement& candidate) { return (*list_schedule)(candidate); };
  }
  const int k = context.device_count;
  detail::MemoryLedger memory(context);
  std::vector<double> load_s(k, 0.0);
  for (NodeId id = 0; id < graph.node_count(); ++id) {
    memory.add(placement.device_of_node[id], id);
    load_s[placement.device_of_node[id]] += context.costs.compute_s(id);
  }
  std::vector<int> candidates;
  double current_s = estimate(placement);
  for (int round = 0; round < request.refine_rounds; ++round) {
    bool moved = false;
    for (NodeId node : order) {
      const int home = placement.device_of_node[node];
      if (request.refine_all_devices) {
        candidates.resize(k);
        for (int device = 0; device < k; ++device) candidates[device] = device;
      } else {
        neighbour_candidates(graph, placement, node, load_s, candidates);
      }
      int best_device = home;
      double best_s = current_s;
      memory.remove(home, node);
      for (int device : candidates) {
        if (device == home || !memory.fits(device, node)) continue;
        placement.device_of_node[node] = device;
        const double candidate_s = estimate(placement);
        // A relative margin keeps rounding noise from counting as an improvement.
        if (candidate_s < best_s - 1e-12 * best_s) {
          best_s = candidate_s;
          best_device = device;
        }
      }
      placement.device_of_node[node] = best_device;
      memory.add(best_device, node);
      if (best_device != home) {
        load_s[home] -= context.costs.compute_s(node);
        load_s[best_device] += context.costs.compute_s(node);
        current_s = best_s;
        moved = true;
      }
    }
    if (!moved) break;  // a fixed point: further rounds would change nothing
  }
  return placement;
}

}  // namespace interplace::placement
