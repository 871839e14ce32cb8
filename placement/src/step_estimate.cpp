#include "interplace/placement/step_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>

#include "interplace/kernels/error.hpp"

namespace interplace::placement {
namespace {

// The receiver's own time a node action pays for the tensors it takes from other devices
// (LinkSpec::receive_cpu_s), as the runtime takes them: a forward, each input from another
// device not yet taken for this micro-batch (a received tensor serves every consumer on
// the rank); a backward, the gradient of its output from each other device that consumes
// it (one message per device: the consumers there sum theirs first). Nothing without a
// receive curve.
class ReceiverTime {
 public:
  ReceiverTime(const Graph& graph, const NodeCosts& costs, const LinkSpec& link,
               const Placement& placement, int64_t micro_batches)
      : graph_(graph), costs_(costs), link_(link), placement_(placement) {
    const int k = placement.device_count;
    if (link.receive_cpu.size() < 2 || k < 2) return;
    active_ = true;
    taken_.assign(static_cast<size_t>(micro_batches * graph.node_count() * k), 0);
    backward_s_.assign(static_cast<size_t>(graph.node_count()), 0.0);
    for (const Node& node : graph.nodes()) {
      const int home = placement.device_of_node[node.id];
      std::vector<char> seen(static_cast<size_t>(k), 0);
      for (NodeId c : node.successors) {
        const int d = placement.device_of_node[c];
        if (d == home || seen[static_cast<size_t>(d)]) continue;
        seen[static_cast<size_t>(d)] = 1;
        backward_s_[static_cast<size_t>(node.id)] +=
            link.receive_cpu_s(costs.output_bytes[node.id], d, home);
      }
    }
  }
  // `micro_batch` numbers every micro-batch of the run (across mini-batches); a forward's
  // inputs count as taken once this is called.
  double operator()(NodeId node, int64_t micro_batch, bool backward) {
    if (!active_) return 0.0;
    if (backward) return backward_s_[static_cast<size_t>(node)];
    const int home = placement_.device_of_node[node];
    const int64_t k = placement_.device_count;
    double total_s = 0.0;
    for (NodeId p : graph_.node(node).predecessors) {
      const int from = placement_.device_of_node[p];
      if (from == home) continue;
      char& taken = taken_[static_cast<size_t>((micro_batch * graph_.node_count() + p) * k + home)];
      if (taken) continue;
      taken = 1;
      total_s += link_.receive_cpu_s(costs_.output_bytes[p], from, home);
    }
    return total_s;
  }

 private:
  const Graph& graph_;
  const NodeCosts& costs_;
  const LinkSpec& link_;
  const Placement& placement_;
  bool active_ = false;
  std::vector<char> taken_;         // (micro-batch, producer, device): received there already
  std::vector<double> backward_s_;  // per node: its gradients from other devices
};

}  // namespace

// Task index: ((micro_batch * 2) + phase) * n + node, phase 0 forward, 1 backward. Ordering
// equal ready times by index gives the tie-break: lower micro-batch, forward first, lower
// node id.
bool StepTimeEstimate::ReadyTask::operator>(const ReadyTask& other) const {
  return std::tie(ready_s, task) > std::tie(other.ready_s, other.task);
}

StepTimeEstimate::StepTimeEstimate(const Graph& graph, const NodeCosts& costs, const LinkSpec& link,
                                   int micro_batches)
    : graph_(graph), costs_(costs), link_(link), micro_batches_(micro_batches) {
  if (micro_batches < 1) {
    throw_invalid("micro_batches must be >= 1, got " + std::to_string(micro_batches));
  }
  if (costs.node_count() != graph.node_count()) {
    throw_invalid("step estimate: costs for " + std::to_string(costs.node_count()) +
                  " nodes, graph has " + std::to_string(graph.node_count()));
  }
}

double StepTimeEstimate::operator()(const Placement& placement) {
  return run(placement, nullptr);
}

std::vector<std::vector<NodeTask>> StepTimeEstimate::tasks(const Placement& placement) {
  std::vector<std::vector<NodeTask>> order(static_cast<size_t>(placement.device_count));
  run(placement, &order);
  return order;
}

double StepTimeEstimate::run(const Placement& placement,
                             std::vector<std::vector<NodeTask>>* order) {
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
  ReceiverTime receiving(graph_, costs_, link_, placement, micro_batches_);
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
    const double end_s = start_s + (backward ? costs_.backward_s[node] : costs_.forward_s[node]) +
                         receiving(node, next.task / (2 * n), backward);
    device_free_s_[device] = end_s;
    makespan_s = std::max(makespan_s, end_s);
    if (order) {
      (*order)[static_cast<size_t>(device)].push_back(
          {node, static_cast<int>(next.task / (2 * n)), backward});
    }
    const Node& info = graph_.nodes()[node];
    if (!backward) {
      for (NodeId consumer : info.successors) {
        const int to = placement.device_of_node[consumer];
        release(base + consumer,
                end_s + (to != device ? link_.in_flight_s(costs_.output_bytes[node], device, to)
                                      : 0.0));
      }
      release(next.task + n, end_s);
    } else {
      for (NodeId producer : info.predecessors) {
        const int to = placement.device_of_node[producer];
        release(base + producer,
                end_s + (to != device ? link_.in_flight_s(costs_.output_bytes[producer], device, to)
                                      : 0.0));
      }
    }
  }
  return makespan_s;
}

double estimate_step_time_s(const Graph& graph, const NodeCosts& costs, const LinkSpec& link,
                            const Placement& placement, int micro_batches) {
  return StepTimeEstimate(graph, costs, link, micro_batches)(placement);
}

std::vector<std::vector<NodeTask>> list_schedule_tasks(const Graph& graph, const NodeCosts& costs,
                                                       const LinkSpec& link,
                                                       const Placement& placement,
                                                       int micro_batches) {
  return StepTimeEstimate(graph, costs, link, micro_batches).tasks(placement);
}

}  // namespace interplace::placement
