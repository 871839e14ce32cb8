#include "interplace/placement/graph_groups.hpp"

#include <algorithm>
#include <functional>
#include <queue>
#include <string>
#include <tuple>
#include <utility>

#include "interplace/kernels/error.hpp"

namespace interplace::placement {
namespace {

void insert_sorted(std::vector<int>& set, int value) {
  const auto at = std::lower_bound(set.begin(), set.end(), value);
  if (at == set.end() || *at != value) set.insert(at, value);
}

void erase_sorted(std::vector<int>& set, int value) {
  const auto at = std::lower_bound(set.begin(), set.end(), value);
  if (at != set.end() && *at == value) set.erase(at);
}

// The merge loop on the groups' adjacency. Group ids are node ids; a merged group keeps
// the lower id of the two.
class Coarsening {
 public:
  Coarsening(const Graph& graph, const NodeCosts& costs) {
    const int n = graph.node_count();
    compute_.resize(static_cast<size_t>(n));
    preds_.resize(static_cast<size_t>(n));
    succs_.resize(static_cast<size_t>(n));
    parent_.resize(static_cast<size_t>(n));
    alive_.assign(static_cast<size_t>(n), 1);
    version_.assign(static_cast<size_t>(n), 0);
    seen_.assign(static_cast<size_t>(n), 0);
    for (NodeId v = 0; v < n; ++v) {
      const auto vv = static_cast<size_t>(v);
      compute_[vv] = costs.compute_s(v);
      preds_[vv] = {graph.nodes()[v].predecessors.begin(), graph.nodes()[v].predecessors.end()};
      succs_[vv] = {graph.nodes()[v].successors.begin(), graph.nodes()[v].successors.end()};
      std::sort(preds_[vv].begin(), preds_[vv].end());
      std::sort(succs_[vv].begin(), succs_[vv].end());
      parent_[vv] = v;
      heap_.push({compute_[vv], v, 0});
    }
    alive_count_ = n;
  }

  void run(int max_groups) {
    while (alive_count_ > max_groups) {
      const auto [compute, group, version] = heap_.top();
      heap_.pop();
      const auto gg = static_cast<size_t>(group);
      if (!alive_[gg] || version != version_[gg]) continue;  // merged or grown since
      merge(group, partner(group));
    }
  }

  int find(int v) {
    while (parent_[static_cast<size_t>(v)] != v) {
      parent_[static_cast<size_t>(v)] =
          parent_[static_cast<size_t>(parent_[static_cast<size_t>(v)])];
      v = parent_[static_cast<size_t>(v)];
    }
    return v;
  }
  const std::vector<int>& preds(int group) const { return preds_[static_cast<size_t>(group)]; }
  bool alive(int group) const { return alive_[static_cast<size_t>(group)] != 0; }

 private:
  // The neighbour `group` merges into (docs in graph_groups.hpp).
  int partner(int group) {
    const auto gg = static_cast<size_t>(group);
    // (single-edge merge ? 0 : 1, compute, id): the smallest wins.
    std::vector<std::tuple<int, double, int>> candidates;
    for (int s : succs_[gg]) {
      const bool single = succs_[gg].size() == 1 || preds_[static_cast<size_t>(s)].size() == 1;
      candidates.emplace_back(single ? 0 : 1, compute_[static_cast<size_t>(s)], s);
    }
    for (int p : preds_[gg]) {
      const bool single = preds_[gg].size() == 1 || succs_[static_cast<size_t>(p)].size() == 1;
      candidates.emplace_back(single ? 0 : 1, compute_[static_cast<size_t>(p)], p);
    }
    std::sort(candidates.begin(), candidates.end());
    for (const auto& [kind, compute, other] : candidates) {
      if (kind == 0) return other;
      const bool forward = std::binary_search(succs_[gg].begin(), succs_[gg].end(), other);
      if (forward ? !other_path(group, other) : !other_path(other, group)) return other;
    }
    if (!candidates.empty()) {
      // Unreachable: the neighbour first in any topological order closes no cycle.
      throw_runtime("group_nodes: no neighbour of a group can be merged");
    }
    // A group without edges (a separate component) merges with the cheapest other group:
    // with no path between the two no cycle can close.
    int best = -1;
    for (size_t other = 0; other < alive_.size(); ++other) {
      if (!alive_[other] || other == gg) continue;
      if (best < 0 || compute_[other] < compute_[static_cast<size_t>(best)]) {
        best = static_cast<int>(other);
      }
    }
    return best;
  }

  // Whether `to` is reachable from `from` other than by the edge from -> to.
  bool other_path(int from, int to) {
    ++stamp_;
    std::vector<int>& stack = stack_;
    stack.clear();
    for (int s : succs_[static_cast<size_t>(from)]) {
      if (s != to) {
        seen_[static_cast<size_t>(s)] = stamp_;
        stack.push_back(s);
      }
    }
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      for (int s : succs_[static_cast<size_t>(v)]) {
        if (s == to) return true;
        if (seen_[static_cast<size_t>(s)] != stamp_) {
          seen_[static_cast<size_t>(s)] = stamp_;
          stack.push_back(s);
        }
      }
    }
    return false;
  }

  void merge(int a, int b) {
    const int keep = std::min(a, b);
    const int gone = std::max(a, b);
    const auto kk = static_cast<size_t>(keep);
    const auto gg = static_cast<size_t>(gone);
    parent_[gg] = keep;
    alive_[gg] = 0;
    --alive_count_;
    compute_[kk] += compute_[gg];
    for (int p : preds_[gg]) {
      erase_sorted(succs_[static_cast<size_t>(p)], gone);
      if (p != keep) {
        insert_sorted(succs_[static_cast<size_t>(p)], keep);
        insert_sorted(preds_[kk], p);
      }
    }
    for (int s : succs_[gg]) {
      erase_sorted(preds_[static_cast<size_t>(s)], gone);
      if (s != keep) {
        insert_sorted(preds_[static_cast<size_t>(s)], keep);
        insert_sorted(succs_[kk], s);
      }
    }
    erase_sorted(preds_[kk], gone);
    erase_sorted(succs_[kk], gone);
    preds_[gg].clear();
    succs_[gg].clear();
    heap_.push({compute_[kk], keep, ++version_[kk]});
  }

  using Entry = std::tuple<double, int, int>;  // compute, group, version
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
  std::vector<double> compute_;
  std::vector<std::vector<int>> preds_;
  std::vector<std::vector<int>> succs_;
  std::vector<int> parent_;
  std::vector<char> alive_;
  std::vector<int> version_;
  std::vector<uint64_t> seen_;
  std::vector<int> stack_;
  uint64_t stamp_ = 0;
  int alive_count_ = 0;
};

}  // namespace

GraphGroups group_nodes(const Graph& graph, const NodeCosts& costs, int max_groups) {
  if (max_groups < 1) throw_invalid("group_nodes: max_groups must be >= 1");
  const int n = graph.node_count();
  if (costs.node_count() != n) {
    throw_invalid("group_nodes: costs for " + std::to_string(costs.node_count()) +
                  " nodes, graph has " + std::to_string(n));
  }
  Coarsening coarsening(graph, costs);
  coarsening.run(max_groups);

  // Number the groups topologically (Kahn), the group with the lowest first node first
  // among those ready: a graph left whole keeps its ids.
  std::vector<int> final_of(static_cast<size_t>(n), -1);  // group id (a node id) -> number
  std::vector<int> pending(static_cast<size_t>(n), 0);
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int g = 0; g < n; ++g) {
    if (!coarsening.alive(g)) continue;
    pending[static_cast<size_t>(g)] = static_cast<int>(coarsening.preds(g).size());
    if (pending[static_cast<size_t>(g)] == 0) ready.push(g);  // a group's id is its first node
  }
  std::vector<std::vector<int>> succs(static_cast<size_t>(n));
  for (int g = 0; g < n; ++g) {
    if (!coarsening.alive(g)) continue;
    for (int p : coarsening.preds(g)) succs[static_cast<size_t>(p)].push_back(g);
  }
  std::vector<int> by_number;
  while (!ready.empty()) {
    const int g = ready.top();
    ready.pop();
    final_of[static_cast<size_t>(g)] = static_cast<int>(by_number.size());
    by_number.push_back(g);
    for (int s : succs[static_cast<size_t>(g)]) {
      if (--pending[static_cast<size_t>(s)] == 0) ready.push(s);
    }
  }

  GraphGroups groups;
  const int count = static_cast<int>(by_number.size());
  groups.members.resize(static_cast<size_t>(count));
  groups.group_of_node.resize(static_cast<size_t>(n));
  for (NodeId v = 0; v < n; ++v) {
    const int group = final_of[static_cast<size_t>(coarsening.find(v))];
    if (group < 0) throw_runtime("group_nodes: the group graph has a cycle");
    groups.group_of_node[static_cast<size_t>(v)] = group;
    groups.members[static_cast<size_t>(group)].push_back(v);
  }
  NodeCosts& c = groups.costs;
  for (auto* field : {&c.forward_s, &c.backward_s, &c.backward_input_s}) {
    field->assign(static_cast<size_t>(count), 0.0);
  }
  c.parameter_state_bytes.assign(static_cast<size_t>(count), 0);
  c.output_bytes.assign(static_cast<size_t>(count), 0);
  groups.graph = Graph(graph.name() + "/groups", graph.batch_size());
  for (int group = 0; group < count; ++group) {
    const auto gg = static_cast<size_t>(group);
    NodeSpec spec;
    spec.name = "group:" + graph.nodes()[groups.members[gg].front()].name;
    spec.op = "group";
    for (NodeId v : groups.members[gg]) {
      const auto vv = static_cast<size_t>(v);
      const Node& node = graph.nodes()[v];
      c.forward_s[gg] += costs.forward_s[vv];
      c.backward_s[gg] += costs.backward_s[vv];
      c.backward_input_s[gg] += costs.backward_input_s[vv];
      c.parameter_state_bytes[gg] += costs.parameter_state_bytes[vv];
      spec.forward_flops += node.forward_flops;
      spec.backward_flops += node.backward_flops;
      spec.parameter_grad_flops += node.parameter_grad_flops;
      spec.parameter_count += node.parameter_count;
      // A tensor leaving the group is counted once, however many groups consume it.
      const bool leaves =
          std::any_of(node.successors.begin(), node.successors.end(), [&](NodeId consumer) {
            return groups.group_of_node[static_cast<size_t>(consumer)] != group;
          });
      if (leaves) c.output_bytes[gg] += costs.output_bytes[vv];
      for (NodeId producer : node.predecessors) {
        const int from = groups.group_of_node[static_cast<size_t>(producer)];
        if (from != group) spec.inputs.push_back(from);
      }
    }
    std::sort(spec.inputs.begin(), spec.inputs.end());
    spec.inputs.erase(std::unique(spec.inputs.begin(), spec.inputs.end()), spec.inputs.end());
    spec.output_bytes = c.output_bytes[gg];
    groups.graph.add_node(std::move(spec));
  }
  return groups;
}

Order group_order(const GraphGroups& groups, const Order& order) {
  if (order.size() != groups.group_of_node.size()) {
    throw_invalid("group_order: an order of " + std::to_string(order.size()) + " nodes for " +
                  std::to_string(groups.group_of_node.size()));
  }
  std::vector<char> seen(groups.members.size(), 0);
  Order out;
  out.reserve(groups.members.size());
  for (NodeId v : order) {
    const int group = groups.group_of_node.at(static_cast<size_t>(v));
    if (!seen[static_cast<size_t>(group)]) {
      seen[static_cast<size_t>(group)] = 1;
      out.push_back(group);
    }
  }
  return out;
}

Placement ungroup_placement(const GraphGroups& groups, const Placement& group_placement) {
  if (group_placement.device_of_node.size() != groups.members.size()) {
    throw_invalid("ungroup_placement: a placement of " +
                  std::to_string(group_placement.device_of_node.size()) + " groups for " +
                  std::to_string(groups.members.size()));
  }
  Placement out{.device_count = group_placement.device_count, .device_of_node = {}};
  out.device_of_node.reserve(groups.group_of_node.size());
  for (int group : groups.group_of_node) {
    out.device_of_node.push_back(group_placement.device_of_node[static_cast<size_t>(group)]);
  }
  return out;
}

}  // namespace interplace::placement
