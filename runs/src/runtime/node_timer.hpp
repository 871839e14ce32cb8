// Per-node forward and backward times inside the units (TrainPlan::record_node_times, set
// by `interplace profile`'s calibration run). Off, it reads no clock: other runs pay
// nothing for it.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

#include "interplace/placement/graph.hpp"
#include "interplace/runs/training.hpp"
#include "runtime/instant.hpp"

namespace interplace::runs {

class NodeTimer {
 public:
  NodeTimer(size_t nodes, bool recording) {
    if (!recording) return;
    for (std::vector<double>* t : all()) t->assign(nodes, 0.0);
  }
  // When a node's work starts: a clock read while recording, else nothing.
  Instant start() const { return times_.forward_s.empty() ? Instant{} : now(); }
  // Adds the time since `start` to node `id`'s forward or backward (wall and CPU).
  void charge(placement::NodeId id, const Instant& start, bool backward) {
    if (times_.forward_s.empty()) return;
    const Instant end = now();
    const auto i = static_cast<size_t>(id);
    (backward ? times_.backward_s : times_.forward_s)[i] += end.wall_s - start.wall_s;
    (backward ? times_.backward_cpu_s : times_.forward_cpu_s)[i] += end.cpu_s - start.cpu_s;
  }
  // The times since the last take, and zero again.
  NodeStepTimes take() {
    NodeStepTimes taken = times_;
    for (std::vector<double>* t : all()) std::fill(t->begin(), t->end(), 0.0);
    return taken;
  }

 private:
  std::array<std::vector<double>*, 4> all() {
    return {&times_.forward_s, &times_.backward_s, &times_.forward_cpu_s, &times_.backward_cpu_s};
  }
  NodeStepTimes times_;
};

}  // namespace interplace::runs
