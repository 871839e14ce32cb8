#include "rl_featurizer.hpp"

#include <algorithm>

namespace interplace::placement::detail {

DeviceFeatures::DeviceFeatures(const Graph& graph, const NodeCosts& costs, int devices)
    : graph_(graph),
      costs_(costs),
      devices_(devices),
      kept_(static_cast<size_t>(devices)),
      load_(static_cast<size_t>(devices)) {}

void DeviceFeatures::compute(const Placement& placement, NodeId node) {
  std::fill(load_.begin(), load_.end(), 0.0);
  std::fill(kept_.begin(), kept_.end(), 0.0);
  double total_s = 0.0;
  for (NodeId v = 0; v < graph_.node_count(); ++v) {
    if (v == node) continue;
    load_[static_cast<size_t>(placement.device_of_node[v])] += costs_.compute_s(v);
    total_s += costs_.compute_s(v);
  }
  for (double& load : load_) {
    load = total_s > 0.0 ? static_cast<double>(devices_) * load / total_s - 1.0 : 0.0;
  }
  // An input's tensor is the producer's output; each consumer receives the node's output.
  const Node& info = graph_.nodes()[node];
  double edge_bytes = 0.0;
  auto add = [&](NodeId other, int64_t bytes) {
    kept_[static_cast<size_t>(placement.device_of_node[other])] += static_cast<double>(bytes);
    edge_bytes += static_cast<double>(bytes);
  };
  for (NodeId u : info.predecessors) add(u, costs_.output_bytes[u]);
  for (NodeId c : info.successors) add(c, costs_.output_bytes[node]);
  for (double& kept : kept_) kept = edge_bytes > 0.0 ? kept / edge_bytes : 0.0;
}

Reachability::Reachability(const Graph& graph)
    : n_(graph.node_count()),
      words_((static_cast<size_t>(n_) + 63) / 64),
      ancestors_(static_cast<size_t>(n_) * words_, 0),
      descendants_(static_cast<size_t>(n_) * words_, 0) {
  for (NodeId v = 0; v < n_; ++v) {  // ids are topological: parents are final already
    for (NodeId u : graph.nodes()[v].predecessors) {
      set(ancestors_, v, u);
      for (size_t w = 0; w < words_; ++w) ancestors_[row(v) + w] |= ancestors_[row(u) + w];
    }
  }
  for (NodeId v = n_ - 1; v >= 0; --v) {
    for (NodeId c : graph.nodes()[v].successors) {
      set(descendants_, v, c);
      for (size_t w = 0; w < words_; ++w) {
        descendants_[row(v) + w] |= descendants_[row(c) + w];
      }
    }
  }
}

Featurizer::Featurizer(const Graph& graph, const NodeCosts& costs, int devices, int rounds)
    : graph_(graph), reach_(graph), devices_(devices), rounds_(rounds) {
  const int n = graph.node_count();
  double max_compute = 0.0;
  double max_bytes = 0.0;
  for (NodeId v = 0; v < n; ++v) {
    max_compute = std::max(max_compute, costs.compute_s(v));
    max_bytes = std::max(max_bytes, static_cast<double>(costs.output_bytes[v]));
  }
  compute_.resize(n);
  bytes_.resize(n);
  for (NodeId v = 0; v < n; ++v) {
    compute_[v] = max_compute > 0.0 ? costs.compute_s(v) / max_compute : 0.0;
    bytes_[v] = max_bytes > 0.0 ? static_cast<double>(costs.output_bytes[v]) / max_bytes : 0.0;
  }
  const size_t cells = static_cast<size_t>(n) * static_cast<size_t>(features());
  x_.assign(cells, 0.0);
  down_.downwards = true;
  up_.downwards = false;
  for (Direction* d : {&down_, &up_}) {
    d->layers.assign(static_cast<size_t>(rounds), std::vector<double>(cells, 0.0));
  }
  device_.assign(static_cast<size_t>(n), -1);
  visited_.assign(static_cast<size_t>(n), 0);
  mark_.assign(static_cast<size_t>(n), 0);
}

void Featurizer::input(const Placement& placement, NodeId current, const std::vector<char>& visited,
                       std::vector<double>& z) {
  const int n = graph_.node_count();
  const size_t f = static_cast<size_t>(features());
  // Which rows of x_ differ from the state of the previous call; the first call
  // computes every row.
  changed_.clear();
  for (NodeId v = 0; v < n; ++v) {
    const auto vv = static_cast<size_t>(v);
    const bool was_current = v == current_;
    const bool is_current = v == current;
    if (current_ != -2 && was_current == is_current &&
        device_[vv] == placement.device_of_node[vv] && visited_[vv] == visited[vv]) {
      continue;
    }
    double* row = &x_[vv * f];
    std::fill(row, row + f, 0.0);
    row[0] = compute_[vv];
    row[1] = bytes_[vv];
    row[2] = is_current ? 1.0 : 0.0;
    row[3] = visited[vv] ? 1.0 : 0.0;
    row[4 + placement.device_of_node[vv]] = 1.0;
    device_[vv] = placement.device_of_node[vv];
    visited_[vv] = visited[vv];
    changed_.push_back(v);
  }
  current_ = current;
  update(down_);
  update(up_);

  const size_t e = 3 * f;
  z.assign(4 * e, 0.0);
  const std::vector<double>& down = layer(down_, rounds_);
  const std::vector<double>& up = layer(up_, rounds_);
  // The embedding of u, [x, down, up], added to `sum` (for the node being placed, to
  // zeros: a copy). The sums run over u in ascending id, as they always have: the result
  // does not depend on which rows this call recomputed.
  auto add_embedding = [&](NodeId u, double* sum) {
    const size_t at = static_cast<size_t>(u) * f;
    for (size_t i = 0; i < f; ++i) sum[i] += x_[at + i];
    for (size_t i = 0; i < f; ++i) sum[f + i] += down[at + i];
    for (size_t i = 0; i < f; ++i) sum[2 * f + i] += up[at + i];
  };
  add_embedding(current, &z[0]);
  int counts[3] = {0, 0, 0};
  for (NodeId u = 0; u < n; ++u) {
    if (u == current) continue;
    const int group = reach_.is_ancestor(current, u) ? 0 : reach_.is_descendant(current, u) ? 1 : 2;
    add_embedding(u, &z[e * static_cast<size_t>(1 + group)]);
    ++counts[group];
  }
  for (int group = 0; group < 3; ++group) {
    if (counts[group] == 0) continue;
    double* sum = &z[e * static_cast<size_t>(1 + group)];
    for (size_t i = 0; i < e; ++i) sum[i] /= counts[group];
  }
}

void Featurizer::update(Direction& d) {
  // Round r of a node reads round r-1 of the nodes it aggregates from and its own x: the
  // rows to recompute grow by one hop per round from the changed rows.
  dirty_ = changed_;
  ++stamp_;
  for (NodeId v : dirty_) mark_[static_cast<size_t>(v)] = stamp_;
  const int n = graph_.node_count();
  for (int r = 1; r <= rounds_; ++r) {
    // Once the rows to recompute are most of the graph (on small or dense graphs, such as
    // group graphs, R hops reach almost everything), a pass over all rows in id order is
    // cheaper than tracking them.
    if (2 * dirty_.size() >= static_cast<size_t>(n)) {
      for (; r <= rounds_; ++r) {
        for (NodeId v = 0; v < n; ++v) recompute_row(d, r, v);
      }
      return;
    }
    next_dirty_ = dirty_;
    for (NodeId v : dirty_) {
      const Node& node = graph_.nodes()[v];
      for (NodeId w : d.downwards ? node.successors : node.predecessors) {
        if (mark_[static_cast<size_t>(w)] != stamp_) {
          mark_[static_cast<size_t>(w)] = stamp_;
          next_dirty_.push_back(w);
        }
      }
    }
    dirty_.swap(next_dirty_);
    for (NodeId v : dirty_) recompute_row(d, r, v);
  }
}

void Featurizer::recompute_row(Direction& d, int r, NodeId v) {
  const size_t f = static_cast<size_t>(features());
  const std::vector<double>& previous = layer(d, r - 1);
  double* row = &d.layers[static_cast<size_t>(r - 1)][static_cast<size_t>(v) * f];
  const double* self = &x_[static_cast<size_t>(v) * f];
  const std::vector<NodeId>& from =
      d.downwards ? graph_.nodes()[v].predecessors : graph_.nodes()[v].successors;
  if (from.empty()) {
    std::copy(self, self + f, row);
    return;
  }
  std::fill(row, row + f, 0.0);
  for (NodeId u : from) {
    const double* other = &previous[static_cast<size_t>(u) * f];
    for (size_t i = 0; i < f; ++i) row[i] += other[i];
  }
  const double mean = 0.5 / static_cast<double>(from.size());
  for (size_t i = 0; i < f; ++i) row[i] = 0.5 * self[i] + mean * row[i];
}

}  // namespace interplace::placement::detail
