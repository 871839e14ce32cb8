#include "placer_support.hpp"

#include <string>

#include "interplace/kernels/error.hpp"

namespace interplace::placement {

void require_placeable(const Graph& graph, const Order& order, const PlacementRequest& request,
                       const NodeCosts& costs) {
  const int k = request.device_count;
  if (k < 1) throw_invalid("device count must be >= 1, got " + std::to_string(k));
  if (k > graph.node_count()) {
    throw_invalid("cannot place graph '" + graph.name() + "' of " +
                  std::to_string(graph.node_count()) + " nodes on " + std::to_string(k) +
                  " devices: more devices than nodes");
  }
  if (request.micro_batches < 1) {
    throw_invalid("micro_batches must be >= 1, got " + std::to_string(request.micro_batches));
  }
  const int64_t capacity = request.capacity_bytes();
  if (capacity <= 0) {
    throw_invalid("memory capacity must be > 0 bytes, got " + std::to_string(capacity));
  }
  require_valid_order(graph, order);
  int64_t total = 0;
  for (const Node& node : graph.nodes()) {
    const int64_t bytes = costs.memory_bytes(node.id, request.memory_micro_batches());
    if (bytes > capacity) {
      throw_invalid("node '" + node.name + "' needs " + std::to_string(bytes) +
                    " bytes, more than one device holds (" + std::to_string(capacity) + ")");
    }
    total += bytes;
  }
  if (total > capacity * k) {
    throw_invalid("graph '" + graph.name() + "' needs " + std::to_string(total) +
                  " bytes in all, more than " + std::to_string(k) + " devices of " +
                  std::to_string(capacity) + " bytes hold");
  }
}

namespace detail {

PlacerContext make_placer_context(const Graph& graph, const Order& order,
                                  const PlacementRequest& request) {
  PlacerContext context;
  context.costs = request.cost_model.node_costs(graph);
  require_placeable(graph, order, request, context.costs);
  context.device_count = request.device_count;
  context.capacity_bytes = request.capacity_bytes();
  context.node_memory_bytes.resize(graph.node_count());
  for (NodeId id = 0; id < graph.node_count(); ++id) {
    context.node_memory_bytes[id] = context.costs.memory_bytes(id, request.memory_micro_batches());
  }
  return context;
}

int MemoryLedger::first_fitting(int device, NodeId node, bool wrap) const {
  const int k = context_.device_count;
  for (int step = 0; step < k; ++step) {
    const int candidate = wrap ? (device + step) % k : device + step;
    if (candidate >= k) return -1;
    if (fits(candidate, node)) return candidate;
  }
  return -1;
}

void throw_no_room(const char* placer, const Graph& graph, NodeId node,
                   const PlacerContext& context) {
  throw_invalid(std::string("placer '") + placer + "': node '" + graph.nodes()[node].name + "' (" +
                std::to_string(context.node_memory_bytes[node]) +
                " bytes) fits on no device it may still use; capacity " +
                std::to_string(context.capacity_bytes) + " bytes per device");
}

}  // namespace detail
}  // namespace interplace::placement
