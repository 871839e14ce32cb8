#include "interplace/placement/step_estimate.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <tuple>

#include "interplace/kernels/error.hpp"

namespace interplace::placement {

// Task index: ((micro_batch * 2) + phase) * n + node, phase 0 forward, 1 backward. Ordering
// equal ready times by index gives the tie-break: lower micro-batch, forward first, lower
// node id.
bool StepTimeEstimate::ReadyTask::operator>(const ReadyTask& other) const {
  return std::tie(ready_s, task) > std::tie(other.ready_s, other.task);
}

StepTimeEstimate::StepTimeEstimate(const Graph& graph, const NodeCosts& costs, const LinkSpec& link,
                                   int micro_batches)
    : graph_(graph), costs_(costs), micro_batches_(micro_batches) {
  if (micro_batches < 1) {
    throw_invalid("micro_batches must be >= 1, got " + std::to_string(micro_batches));
  }
  if (costs.node_count() != graph.node_count()) {
    throw_invalid("step estimate: costs for " + std::to_string(costs.node_count()) +
                  " nodes, graph has " + std::to_string(graph.node_count()));
  }
  transfer_s_.resize(graph.node_count());
  for (NodeId id = 0; id < graph.node_count(); ++id) {
    transfer_s_[id] =
        link.latency_s + static_cast<double>(costs.output_bytes[id]) / link.bandwidth_bytes_per_s;
  }
}

double StepTimeEstimate::operator()(const Placement& placement) {
  require_valid_placement(graph_, placement);
  const int64_t n = graph_.node_count();
  const int64_t task_count = 2 * n * micro_batches_;
  waiting_.resize(task_count);
  ready_s_.assign(task_count, 0.0);
  heap_.clear();
  const auto later = std::greater<>();
  auto push = [&](ReadyTask task) {
    heap_.push_back(task);
    std::push_heap(heap_.begin(), heap_.end(), later);
  };
  for (int64_t m = 0; m < micro_batches_; ++m) {
    for (const Node& node : graph_.nodes()) {
      const int64_t forward = 2 * m * n + node.id;
      waiting_[forward] = static_cast<int>(node.predecessors.size());
      waiting_[forward + n] = static_cast<int>(node.successors.size()) + 1;
      if (waiting_[forward] == 0) push({0.0, forward});
    }
  }
  auto release = [&](int64_t task, double at_s) {
    ready_s_[task] = std::max(ready_s_[task], at_s);
    if (--waiting_[task] == 0) push({ready_s_[task], task});
  };
  device_free_s_.assign(placement.device_count, 0.0);
  double makespan_s = 0.0;
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const ReadyTask next = heap_.back();
    heap_.pop_back();
    const int64_t base = next.task / n * n;  // first task of this (micro-batch, phase)
    const NodeId node = static_cast<NodeId>(next.task - base);
    const bool backward = (next.task / n) % 2 == 1;
    const int device = placement.device_of_node[node];
    const double start_s = std::max(next.ready_s, device_free_s_[device]);
    const double end_s = start_s + (backward ? costs_.backward_s[node] : costs_.forward_s[node]);
    device_free_s_[device] = end_s;
    makespan_s = std::max(makespan_s, end_s);
    const Node& info = graph_.nodes()[node];
    if (!backward) {
      for (NodeId consumer : info.successors) {
        const bool remote = placement.device_of_node[consumer] != device;
        release(base + consumer, end_s + (remote ? transfer_s_[node] : 0.0));
      }
      release(next.task + n, end_s);
    } else {
      for (NodeId producer : info.predecessors) {
        const bool remote = placement.device_of_node[producer] != device;
        release(base + producer, end_s + (remote ? transfer_s_[producer] : 0.0));
      }
    }
  }
  return makespan_s;
}

double estimate_step_time_s(const Graph& graph, const NodeCosts& costs, const LinkSpec& link,
                            const Placement& placement, int micro_batches) {
  return StepTimeEstimate(graph, costs, link, micro_batches)(placement);
}

}  // namespace interplace::placement
