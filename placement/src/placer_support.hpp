// What every placer needs after validating its request: the node costs, the capacity
// and the memory each node adds to its device.
#pragma once

#include <cstdint>
#include <vector>

#include "interplace/placement/placers.hpp"

namespace interplace::placement::detail {

struct PlacerContext {
  NodeCosts costs;
  int device_count = 1;
  int64_t capacity_bytes = 0;
  std::vector<int64_t> node_memory_bytes;  // parameter state + in-flight activations
};

// Validates (require_placeable) and computes the context.
PlacerContext make_placer_context(const Graph& graph, const Order& order,
                                  const PlacementRequest& request);

// Tracks per-device memory while a placer assigns nodes one by one.
class MemoryLedger {
 public:
  explicit MemoryLedger(const PlacerContext& context)
      : context_(context), used_bytes_(context.device_count, 0) {}
  bool fits(int device, NodeId node) const {
    return used_bytes_[device] + context_.node_memory_bytes[node] <= context_.capacity_bytes;
  }
  void add(int device, NodeId node) { used_bytes_[device] += context_.node_memory_bytes[node]; }
  void remove(int device, NodeId node) { used_bytes_[device] -= context_.node_memory_bytes[node]; }
  // The first device at or after `device` (cyclically when `wrap`) with room; -1 if none.
  int first_fitting(int device, NodeId node, bool wrap) const;

 private:
  const PlacerContext& context_;
  std::vector<int64_t> used_bytes_;
};

// "placer 'name': node 'x' (N bytes) fits on no device ..." as invalid_input.
[[noreturn]] void throw_no_room(const char* placer, const Graph& graph, NodeId node,
                                const PlacerContext& context);

}  // namespace interplace::placement::detail
