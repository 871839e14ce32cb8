// The rl placer's input for one decision (docs/placers.md#rl), computed incrementally:
// between two decisions only a few nodes' features change (the node placed, the node
// placed before it, and the one-hot of a node that moved), so only the propagation rows
// within `rounds` hops of those nodes are recomputed, with the same arithmetic in the same
// order as a full recomputation: the result is bit-identical to recomputing everything.
#pragma once

#include <cstdint>
#include <vector>

#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/placement.hpp"

namespace interplace::placement::detail {

// Ancestor and descendant sets as bitsets: Placeto's pooling needs, for the node being
// placed, which nodes come before it, after it, or neither (parallel).
class Reachability {
 public:
  explicit Reachability(const Graph& graph);
  bool is_ancestor(NodeId of, NodeId u) const { return test(ancestors_, of, u); }
  bool is_descendant(NodeId of, NodeId u) const { return test(descendants_, of, u); }

 private:
  size_t row(NodeId v) const { return static_cast<size_t>(v) * words_; }
  void set(std::vector<uint64_t>& bits, NodeId v, NodeId u) {
    bits[row(v) + static_cast<size_t>(u) / 64] |= uint64_t{1} << (u % 64);
  }
  bool test(const std::vector<uint64_t>& bits, NodeId v, NodeId u) const {
    return (bits[row(v) + static_cast<size_t>(u) / 64] >> (u % 64)) & 1U;
  }
  int n_;
  size_t words_;
  std::vector<uint64_t> ancestors_;
  std::vector<uint64_t> descendants_;
};

// Node features (F = 4 + K): forward+backward time and output bytes (each over the
// graph's largest), "is the node being placed", "visited in this episode", current device
// one-hot. Embedding (3F): the features, their parent->child propagation and their
// child->parent propagation after `rounds` rounds (down_r(v) = x(v)/2 + mean over parents
// of down_{r-1} / 2; x(v) at a source; up likewise over children). Input (12F): the
// embedding of the node being placed and the mean embeddings of its ancestors,
// descendants and parallel nodes (zeros when a set is empty).
class Featurizer {
 public:
  Featurizer(const Graph& graph, const NodeCosts& costs, int devices, int rounds);
  // The policy's input size on `devices` devices (any graph).
  static int input_size(int devices) { return 12 * (4 + devices); }
  int features() const { return 4 + devices_; }
  int input_size() const { return input_size(devices_); }

  // The input for placing `current` when the graph is placed as `placement` and `visited`
  // marks the nodes visited in this episode. Keeps the features of the previous call and
  // recomputes what differs.
  void input(const Placement& placement, NodeId current, const std::vector<char>& visited,
             std::vector<double>& z);

 private:
  // Propagation layers 1..rounds of one direction (layer 0 is x_).
  struct Direction {
    bool downwards = true;
    std::vector<std::vector<double>> layers;
  };
  const std::vector<double>& layer(const Direction& d, int r) const {
    return r == 0 ? x_ : d.layers[static_cast<size_t>(r - 1)];
  }
  // Recomputes the rows of `d` that depend on the rows of x_ in `changed_`.
  void update(Direction& d);
  void recompute_row(Direction& d, int r, NodeId v);

  const Graph& graph_;
  Reachability reach_;
  int devices_;
  int rounds_;
  std::vector<double> compute_;
  std::vector<double> bytes_;
  std::vector<double> x_;
  Direction down_;
  Direction up_;
  // The state x_ holds: -2 before the first call (nothing computed yet).
  NodeId current_ = -2;
  std::vector<int> device_;
  std::vector<char> visited_;
  // Rows of x_ changed by this call, and the rows to recompute in each round (marks by
  // round stamp, so that nothing is cleared between calls).
  std::vector<NodeId> changed_;
  std::vector<NodeId> dirty_;
  std::vector<NodeId> next_dirty_;
  std::vector<uint64_t> mark_;
  uint64_t stamp_ = 0;
};

// Two of the lookahead's three features of each candidate device d for placing node v
// (docs/placers.md#rl; the third, the step time's change, needs the estimator and is the
// placer's): the share of the bytes on v's edges whose other end is on d, and d's compute
// without v relative to an even split, K * load_d / total - 1.
class DeviceFeatures {
 public:
  DeviceFeatures(const Graph& graph, const NodeCosts& costs, int devices);
  // The two features of every device for `node` under `placement`. Recomputes the loads on
  // each call: O(nodes), as each of the decision's K - 1 step-time estimates is anyway.
  void compute(const Placement& placement, NodeId node);
  double kept_share(int device) const { return kept_[static_cast<size_t>(device)]; }
  double relative_load(int device) const { return load_[static_cast<size_t>(device)]; }

 private:
  const Graph& graph_;
  const NodeCosts& costs_;
  int devices_;
  std::vector<double> kept_;
  std::vector<double> load_;
};

}  // namespace interplace::placement::detail
