#include "interplace/placement/orders.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <queue>
#include <utility>

#include "interplace/kernels/error.hpp"
#include "seeded_random.hpp"

namespace interplace::placement {
namespace {

constexpr std::array<std::pair<OrderKind, const char*>, 17> kOrderNames = {{
    {OrderKind::topo, "topo"},
    {OrderKind::topo_rev, "topo-rev"},
    {OrderKind::dfs_pre, "dfs-pre"},
    {OrderKind::dfs_post, "dfs-post"},
    {OrderKind::dfs_pre_rev, "dfs-pre-rev"},
    {OrderKind::dfs_post_rev, "dfs-post-rev"},
    {OrderKind::bfs, "bfs"},
    {OrderKind::bfs_rev, "bfs-rev"},
    {OrderKind::lexical, "lexical"},
    {OrderKind::lexical_rev, "lexical-rev"},
    {OrderKind::random, "random"},
    {OrderKind::random_topo, "random-topo"},
    {OrderKind::critical_path, "critical-path"},
    {OrderKind::topo_lifo, "topo-lifo"},
    {OrderKind::topo_lifo_rev, "topo-lifo-rev"},
    {OrderKind::lexical_topo, "lexical-topo"},
    {OrderKind::bfs_by_name, "bfs-by-name"},
}};

// One line each, the summary of docs/orders.md's table (`interplace order --list`).
constexpr std::array<std::pair<OrderKind, const char*>, 17> kOrderDefinitions = {{
    {OrderKind::topo, "Kahn's algorithm, FIFO queue seeded with the sources in ascending id"},
    {OrderKind::topo_rev, "topo reversed"},
    {OrderKind::dfs_pre,
     "depth-first from each unvisited node in id order, emit on first visit "
     "(networkx dfs_preorder_nodes; the study's dfs_preorder)"},
    {OrderKind::dfs_post,
     "depth-first, emit when all successors are finished (networkx "
     "dfs_postorder_nodes; the study's dfs_postorder)"},
    {OrderKind::dfs_pre_rev, "dfs-pre reversed"},
    {OrderKind::dfs_post_rev, "dfs-post reversed (topological, one branch at a time)"},
    {OrderKind::bfs, "breadth-first from each unvisited node in id order, one visited set"},
    {OrderKind::bfs_rev, "bfs reversed"},
    {OrderKind::lexical, "sorted by node name, byte-wise (the study's alpha)"},
    {OrderKind::lexical_rev, "lexical reversed"},
    {OrderKind::random, "uniform random permutation from --seed"},
    {OrderKind::random_topo, "Kahn's algorithm taking a random ready node, from --seed"},
    {OrderKind::critical_path,
     "Kahn's algorithm taking the ready node with the largest bottom level (ties: lower id)"},
    {OrderKind::topo_lifo,
     "Kahn's algorithm with a LIFO stack of ready nodes (networkx 2.4 "
     "topological_sort; the study's topo)"},
    {OrderKind::topo_lifo_rev, "topo-lifo reversed (the study's reversed_topo)"},
    {OrderKind::lexical_topo,
     "Kahn's algorithm taking the ready node with the smallest name "
     "(networkx lexicographical_topological_sort)"},
    {OrderKind::bfs_by_name,
     "networkx bfs_edges from each source in name order, first "
     "occurrences kept (the study's bfs)"},
}};

Order reversed(Order order) {
  std::reverse(order.begin(), order.end());
  return order;
}

std::vector<int> in_degrees(const Graph& graph) {
  std::vector<int> degree(graph.node_count());
  for (const Node& node : graph.nodes())
    degree[node.id] = static_cast<int>(node.predecessors.size());
  return degree;
}

// Depth-first over all roots (unvisited nodes in ascending id), iteratively so that
// graphs thousands of nodes deep do not exhaust the call stack.
void depth_first(const Graph& graph, Order* preorder, Order* postorder) {
  const int n = graph.node_count();
  std::vector<char> visited(n, 0);
  std::vector<std::pair<NodeId, size_t>> stack;  // node, index of its next successor
  for (NodeId root = 0; root < n; ++root) {
    if (visited[root]) continue;
    visited[root] = 1;
    if (preorder) preorder->push_back(root);
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      const std::vector<NodeId>& successors = graph.nodes()[node].successors;
      if (next == successors.size()) {
        if (postorder) postorder->push_back(node);
        stack.pop_back();
        continue;
      }
      const NodeId child = successors[next++];
      if (visited[child]) continue;
      visited[child] = 1;
      if (preorder) preorder->push_back(child);
      stack.emplace_back(child, 0);  // invalidates `node`/`next`; not used after this
    }
  }
}

std::vector<double> default_costs(const Graph& graph) {
  std::vector<double> cost;
  cost.reserve(graph.node_count());
  for (const Node& node : graph.nodes()) {
    cost.push_back(static_cast<double>(node.forward_flops + node.backward_flops));
  }
  return cost;
}

}  // namespace

const std::vector<std::string>& order_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const auto& entry : kOrderNames) all.emplace_back(entry.second);
    return all;
  }();
  return names;
}

std::string to_string(OrderKind kind) {
  for (const auto& [k, name] : kOrderNames) {
    if (k == kind) return name;
  }
  throw_invalid("unknown order kind " + std::to_string(static_cast<int>(kind)));
}

std::string order_definition(OrderKind kind) {
  for (const auto& [k, text] : kOrderDefinitions) {
    if (k == kind) return text;
  }
  throw_invalid("unknown order kind " + std::to_string(static_cast<int>(kind)));
}

OrderKind order_by_name(std::string_view name) {
  for (const auto& [kind, known] : kOrderNames) {
    if (name == known) return kind;
  }
  std::string valid;
  for (const std::string& known : order_names()) valid += (valid.empty() ? "" : ", ") + known;
  throw_invalid("unknown order '" + std::string(name) + "' (valid: " + valid + ")");
}

// Kahn's algorithm: a node is ready once all its producers are placed; `Ready` decides
// which ready node comes next (FIFO, a stack, by name), and with it the order.
template <typename Ready>
Order kahn_order(const Graph& graph, Ready ready) {
  std::vector<int> degree = in_degrees(graph);
  for (NodeId id : graph.sources()) ready.push(id);
  Order order;
  order.reserve(graph.node_count());
  while (!ready.empty()) {
    const NodeId node = ready.take();
    order.push_back(node);
    for (NodeId child : graph.nodes()[node].successors) {
      if (--degree[child] == 0) ready.push(child);
    }
  }
  return order;
}

struct FifoReady {
  std::deque<NodeId> nodes;
  void push(NodeId id) { nodes.push_back(id); }
  NodeId take() {
    const NodeId id = nodes.front();
    nodes.pop_front();
    return id;
  }
  bool empty() const { return nodes.empty(); }
};

struct StackReady {
  std::vector<NodeId> nodes;
  void push(NodeId id) { nodes.push_back(id); }
  NodeId take() {
    const NodeId id = nodes.back();
    nodes.pop_back();
    return id;
  }
  bool empty() const { return nodes.empty(); }
};

struct ByNameReady {
  const Graph* graph;
  std::vector<NodeId> heap;  // a min-heap by node name
  bool later(NodeId a, NodeId b) const { return graph->nodes()[a].name > graph->nodes()[b].name; }
  void push(NodeId id) {
    heap.push_back(id);
    std::push_heap(heap.begin(), heap.end(), [this](NodeId a, NodeId b) { return later(a, b); });
  }
  NodeId take() {
    std::pop_heap(heap.begin(), heap.end(), [this](NodeId a, NodeId b) { return later(a, b); });
    const NodeId id = heap.back();
    heap.pop_back();
    return id;
  }
  bool empty() const { return heap.empty(); }
};

Order topological_order(const Graph& graph) {
  return kahn_order(graph, FifoReady{});
}

// networkx 2.4's topological_sort: the zero-in-degree nodes in node order form a list used
// as a stack (list.pop() takes the last); a child whose in-degree drops to zero is appended
// as it is reached, children in successor order. So the last source comes out first and
// the most recently freed child is followed next: depth-first-like, unlike `topo`.
// (networkx yields a node after pushing its children; the sequence is the same.)
Order topological_order_lifo(const Graph& graph) {
  return kahn_order(graph, StackReady{});
}

// networkx's lexicographical_topological_sort: a heap of ready nodes keyed by name (names
// are unique, so the node-order tie-break networkx adds never decides).
Order lexical_topological_order(const Graph& graph) {
  return kahn_order(graph, ByNameReady{&graph, {}});
}

// The study's bfs: for each source (in-degree 0) in name order, the source followed by the
// targets of networkx bfs_edges from it (a fresh search per source), keeping only the first
// occurrence of a node reached from several sources.
Order bfs_by_name_order(const Graph& graph) {
  std::vector<NodeId> roots = graph.sources();
  std::sort(roots.begin(), roots.end(),
            [&](NodeId a, NodeId b) { return graph.nodes()[a].name < graph.nodes()[b].name; });
  const int n = graph.node_count();
  std::vector<char> emitted(n, 0);
  std::vector<int> seen_in(n, -1);  // the root whose search has discovered the node
  Order order;
  order.reserve(n);
  std::deque<NodeId> queue;
  for (size_t r = 0; r < roots.size(); ++r) {
    const int search = static_cast<int>(r);
    auto discover = [&](NodeId node) {
      seen_in[node] = search;
      if (!emitted[node]) {
        emitted[node] = 1;
        order.push_back(node);
      }
      queue.push_back(node);
    };
    discover(roots[r]);
    while (!queue.empty()) {
      const NodeId node = queue.front();
      queue.pop_front();
      for (NodeId child : graph.nodes()[node].successors) {
        if (seen_in[child] != search) discover(child);
      }
    }
  }
  return order;
}

Order dfs_preorder(const Graph& graph) {
  Order order;
  order.reserve(graph.node_count());
  depth_first(graph, &order, nullptr);
  return order;
}

Order dfs_postorder(const Graph& graph) {
  Order order;
  order.reserve(graph.node_count());
  depth_first(graph, nullptr, &order);
  return order;
}

Order bfs_order(const Graph& graph) {
  const int n = graph.node_count();
  std::vector<char> visited(n, 0);
  Order order;
  order.reserve(n);
  std::deque<NodeId> queue;
  for (NodeId root = 0; root < n; ++root) {
    if (visited[root]) continue;
    visited[root] = 1;
    order.push_back(root);
    queue.push_back(root);
    while (!queue.empty()) {
      const NodeId node = queue.front();
      queue.pop_front();
      for (NodeId child : graph.nodes()[node].successors) {
        if (visited[child]) continue;
        visited[child] = 1;
        order.push_back(child);
        queue.push_back(child);
      }
    }
  }
  return order;
}

Order lexical_order(const Graph& graph) {
  Order order(graph.node_count());
  for (NodeId id = 0; id < graph.node_count(); ++id) order[id] = id;
  std::sort(order.begin(), order.end(),
            [&](NodeId a, NodeId b) { return graph.nodes()[a].name < graph.nodes()[b].name; });
  return order;
}

Order random_order(const Graph& graph, uint64_t seed) {
  Order order(graph.node_count());
  for (NodeId id = 0; id < graph.node_count(); ++id) order[id] = id;
  kernels::Rng rng(seed);
  for (size_t i = order.size(); i > 1; --i) {  // Fisher-Yates
    std::swap(order[i - 1], order[detail::uniform_index(rng, i)]);
  }
  return order;
}

Order random_topological_order(const Graph& graph, uint64_t seed) {
  std::vector<int> degree = in_degrees(graph);
  std::vector<NodeId> ready = graph.sources();
  kernels::Rng rng(seed);
  Order order;
  order.reserve(graph.node_count());
  while (!ready.empty()) {
    const size_t pick = detail::uniform_index(rng, ready.size());
    const NodeId node = ready[pick];
    ready[pick] = ready.back();
    ready.pop_back();
    order.push_back(node);
    for (NodeId child : graph.nodes()[node].successors) {
      if (--degree[child] == 0) ready.push_back(child);
    }
  }
  return order;
}

std::vector<double> bottom_levels(const Graph& graph, std::span<const double> node_cost) {
  const int n = graph.node_count();
  if (static_cast<int>(node_cost.size()) != n) {
    throw_invalid("critical-path order: " + std::to_string(node_cost.size()) + " costs for " +
                  std::to_string(n) + " nodes");
  }
  std::vector<double> level(n, 0.0);
  for (NodeId id = n - 1; id >= 0; --id) {  // successors have larger ids
    const double cost = node_cost[id];
    if (!(cost >= 0.0) || !std::isfinite(cost)) {
      throw_invalid("critical-path order: cost of node '" + graph.nodes()[id].name +
                    "' must be finite and >= 0");
    }
    double below = 0.0;
    for (NodeId child : graph.nodes()[id].successors) below = std::max(below, level[child]);
    level[id] = cost + below;
  }
  return level;
}

Order critical_path_order(const Graph& graph, std::span<const double> node_cost) {
  const std::vector<double> level = bottom_levels(graph, node_cost);
  // Largest bottom level first; among equal levels the lower id.
  auto later = [&](NodeId a, NodeId b) {
    if (level[a] != level[b]) return level[a] < level[b];
    return a > b;
  };
  std::priority_queue<NodeId, std::vector<NodeId>, decltype(later)> ready(later);
  std::vector<int> degree = in_degrees(graph);
  for (NodeId id : graph.sources()) ready.push(id);
  Order order;
  order.reserve(graph.node_count());
  while (!ready.empty()) {
    const NodeId node = ready.top();
    ready.pop();
    order.push_back(node);
    for (NodeId child : graph.nodes()[node].successors) {
      if (--degree[child] == 0) ready.push(child);
    }
  }
  return order;
}

std::vector<int> same_sequence_as(const Graph& graph, const std::vector<OrderKind>& kinds,
                                  const OrderOptions& options) {
  std::vector<Order> sequences;
  std::vector<int> first(kinds.size(), -1);
  for (size_t i = 0; i < kinds.size(); ++i) {
    const bool seeded = kinds[i] == OrderKind::random || kinds[i] == OrderKind::random_topo;
    sequences.push_back(compute_order(graph, kinds[i], options));
    for (size_t j = 0; j < i && !seeded; ++j) {
      const bool seeded_j = kinds[j] == OrderKind::random || kinds[j] == OrderKind::random_topo;
      if (!seeded_j && first[j] == -1 && sequences[j] == sequences[i]) {
        first[i] = static_cast<int>(j);
        break;
      }
    }
  }
  return first;
}

Order compute_order(const Graph& graph, OrderKind kind, const OrderOptions& options) {
  switch (kind) {
    case OrderKind::topo:
      return topological_order(graph);
    case OrderKind::topo_rev:
      return reversed(topological_order(graph));
    case OrderKind::dfs_pre:
      return dfs_preorder(graph);
    case OrderKind::dfs_post:
      return dfs_postorder(graph);
    case OrderKind::dfs_pre_rev:
      return reversed(dfs_preorder(graph));
    case OrderKind::dfs_post_rev:
      return reversed(dfs_postorder(graph));
    case OrderKind::bfs:
      return bfs_order(graph);
    case OrderKind::bfs_rev:
      return reversed(bfs_order(graph));
    case OrderKind::lexical:
      return lexical_order(graph);
    case OrderKind::lexical_rev:
      return reversed(lexical_order(graph));
    case OrderKind::random:
      return random_order(graph, options.seed);
    case OrderKind::random_topo:
      return random_topological_order(graph, options.seed);
    case OrderKind::critical_path:
      return options.node_cost.empty() ? critical_path_order(graph, default_costs(graph))
                                       : critical_path_order(graph, options.node_cost);
    case OrderKind::topo_lifo:
      return topological_order_lifo(graph);
    case OrderKind::topo_lifo_rev:
      return reversed(topological_order_lifo(graph));
    case OrderKind::lexical_topo:
      return lexical_topological_order(graph);
    case OrderKind::bfs_by_name:
      return bfs_by_name_order(graph);
  }
  throw_invalid("unknown order kind " + std::to_string(static_cast<int>(kind)));
}

bool is_permutation_of_nodes(const Graph& graph, std::span<const NodeId> order) {
  if (static_cast<int>(order.size()) != graph.node_count()) return false;
  std::vector<char> seen(order.size(), 0);
  for (NodeId id : order) {
    if (id < 0 || id >= graph.node_count() || seen[id]) return false;
    seen[id] = 1;
  }
  return true;
}

bool is_topological(const Graph& graph, std::span<const NodeId> order) {
  if (!is_permutation_of_nodes(graph, order)) return false;
  std::vector<int> position(order.size());
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  for (const Node& node : graph.nodes()) {
    for (NodeId child : node.successors) {
      if (position[node.id] >= position[child]) return false;
    }
  }
  return true;
}

void require_valid_order(const Graph& graph, std::span<const NodeId> order) {
  if (!is_permutation_of_nodes(graph, order)) {
    throw_invalid("the order is not a permutation of the graph's " +
                  std::to_string(graph.node_count()) + " node ids (it has " +
                  std::to_string(order.size()) + " entries)");
  }
}

}  // namespace interplace::placement
