// The contiguous placer: exact dynamic programming over split points of the order.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/orders.hpp"
#include "placer_support.hpp"

namespace interplace::placement {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Cost of a chunk [a, b) of order positions as device_loads_s defines it: compute, plus a
// round trip for every producer inside with a consumer outside, plus one for every
// producer outside with a consumer inside. For a fixed start `a`, each producer adds its
// round trip over a range of ends b, so a whole row costs O(producers + n) with a
// difference array. With a two-level link (LinkSpec::devices_per_node) the round trip is
// over the link to the chunk's left neighbour (device d - 1: tensors from before a, or
// sent back before a) or its right one (d + 1: tensors to or from b onwards), so a cut
// between two nodes costs the inter-node link and the DP puts it where the tensor is small.
class ChunkCosts {
 public:
  ChunkCosts(const Graph& graph, const Order& order, const detail::PlacerContext& context,
             const CostModel& cost_model)
      : n_(graph.node_count()),
        capacity_bytes_(context.capacity_bytes),
        link_(cost_model.link()),
        device_count_(context.device_count) {
    std::vector<int> position(n_);
    for (int i = 0; i < n_; ++i) position[order[i]] = i;
    prefix_compute_s_.assign(n_ + 1, 0.0);
    prefix_memory_bytes_.assign(n_ + 1, 0);
    for (int i = 0; i < n_; ++i) {
      prefix_compute_s_[i + 1] = prefix_compute_s_[i] + context.costs.compute_s(order[i]);
      prefix_memory_bytes_[i + 1] = prefix_memory_bytes_[i] + context.node_memory_bytes[order[i]];
    }
    for (const Node& node : graph.nodes()) {
      if (node.successors.empty()) continue;
      Producer producer;
      producer.position = position[node.id];
      const int64_t bytes = context.costs.output_bytes[node.id];
      producer.round_trip_s = 2.0 * cost_model.transfer_s(bytes);
      producer.inter_node_round_trip_s =
          cost_model.link().multi_node()
              ? 2.0 * (cost_model.link().inter_node_latency_s +
                       static_cast<double>(bytes) /
                           cost_model.link().inter_node_bandwidth_bytes_per_s)
              : producer.round_trip_s;
      for (NodeId consumer : node.successors)
        producer.consumer_positions.push_back(position[consumer]);
      std::sort(producer.consumer_positions.begin(), producer.consumer_positions.end());
      producers_.push_back(std::move(producer));
    }
  }

  // The largest end b such that chunk [a, b) fits in one device's memory (>= a+1 since
  // every node fits alone).
  int last_end(int a) const {
    const auto limit = prefix_memory_bytes_[a] + capacity_bytes_;
    const auto it =
        std::upper_bound(prefix_memory_bytes_.begin() + a + 1, prefix_memory_bytes_.end(), limit);
    return static_cast<int>(it - prefix_memory_bytes_.begin()) - 1;
  }

  // row[b] = cost of [a, b) on device `device` for b in a+1..last_end(a); returns
  // last_end(a).
  int row(int a, int device, std::vector<double>& row) {
    const int last = last_end(a);
    // Whether the links to the neighbouring devices (chunks) leave the node.
    const bool left_inter = device > 0 && !link_.same_node(device - 1, device);
    const bool right_inter = device + 1 < device_count_ && !link_.same_node(device, device + 1);
    const auto left = [&](const Producer& u) {
      return left_inter ? u.inter_node_round_trip_s : u.round_trip_s;
    };
    const auto right = [&](const Producer& u) {
      return right_inter ? u.inter_node_round_trip_s : u.round_trip_s;
    };
    delta_.assign(last + 2, 0.0);
    auto add = [&](int lo, int hi, double value) {
      if (lo > hi) return;
      delta_[lo] += value;
      delta_[hi + 1] -= value;
    };
    for (const Producer& u : producers_) {
      const std::vector<int>& consumers = u.consumer_positions;
      if (u.position >= a) {  // inside once b > position: sends if a consumer is outside
        if (consumers.front() < a) {
          add(u.position + 1, last, left(u));
        } else {
          add(u.position + 1, std::min(consumers.back(), last), right(u));
        }
      }
      // Outside (before a, or at/after b) and receives once b passes its first consumer >= a.
      const auto first = std::lower_bound(consumers.begin(), consumers.end(), a);
      if (first == consumers.end()) continue;
      const int last_outside = u.position < a ? last : std::min(u.position, last);
      add(*first + 1, last_outside, u.position < a ? left(u) : right(u));
    }
    row.resize(n_ + 1);
    double communication_s = 0.0;
    for (int b = a + 1; b <= last; ++b) {
      communication_s += delta_[b];
      row[b] = prefix_compute_s_[b] - prefix_compute_s_[a] + communication_s;
    }
    return last;
  }

 private:
  struct Producer {
    int position = 0;
    double round_trip_s = 0.0;             // over the intra-node link
    double inter_node_round_trip_s = 0.0;  // over the inter-node link
    std::vector<int> consumer_positions;   // ascending
  };
  int n_;
  int64_t capacity_bytes_;
  LinkSpec link_;
  int device_count_;
  std::vector<double> prefix_compute_s_;
  std::vector<int64_t> prefix_memory_bytes_;
  std::vector<Producer> producers_;
  std::vector<double> delta_;
};

// Where a stage ending before position b of the order may start, for the stages placer:
// the prefix [0, b) and the rest form a single-tensor boundary when no edge points back
// across b and exactly one producer in the prefix has consumers after it; that producer
// must then lie in the stage that ends at b (else its tensor would skip the stage, or the
// stage would send nothing on). So a chunk [a, b) is allowed when a <= latest_start[b];
// -1 marks a position where no stage may end. Difference arrays keep it O(nodes + edges).
std::vector<int> single_tensor_cuts(const Graph& graph, const Order& order) {
  const int n = graph.node_count();
  std::vector<int> position(n);
  for (int i = 0; i < n; ++i) position[order[i]] = i;
  std::vector<int> crossing(n + 2, 0);               // producers whose tensor crosses cut b
  std::vector<int64_t> crossing_position(n + 2, 0);  // sum of their positions
  std::vector<int> backwards(n + 2, 0);              // edges crossing cut b from suffix to prefix
  for (const Node& node : graph.nodes()) {
    const int p = position[node.id];
    int last_consumer = p;
    for (NodeId consumer : node.successors) {
      const int q = position[consumer];
      last_consumer = std::max(last_consumer, q);
      if (q < p) {  // cuts q+1..p separate the consumer (prefix) from its producer
        ++backwards[q + 1];
        --backwards[p + 1];
      }
    }
    if (last_consumer > p) {  // cuts p+1..last_consumer carry this node's tensor
      ++crossing[p + 1];
      --crossing[last_consumer + 1];
      crossing_position[p + 1] += p;
      crossing_position[last_consumer + 1] -= p;
    }
  }
  std::vector<int> latest_start(n + 1, -1);
  int crossing_now = 0;
  int64_t position_now = 0;
  int backwards_now = 0;
  for (int b = 1; b < n; ++b) {
    crossing_now += crossing[b];
    position_now += crossing_position[b];
    backwards_now += backwards[b];
    if (crossing_now == 1 && backwards_now == 0) latest_start[b] = static_cast<int>(position_now);
  }
  latest_start[n] = n - 1;
  return latest_start;
}

// Exact DP over the split points of the order; a chunk [a, b) is allowed when
// a <= latest_start[b] (latest_start[n] is n-1: the last chunk may start anywhere).
Placement place_contiguous_at(const Graph& graph, const Order& order,
                              const PlacementRequest& request, const std::vector<int>& latest_start,
                              const std::string& placer_name) {
  const detail::PlacerContext context = detail::make_placer_context(graph, order, request);
  const int n = graph.node_count();
  const int k_total = context.device_count;
  ChunkCosts chunk_costs(graph, order, context, request.cost_model);
  std::vector<double> row;

  // best[b]: smallest possible slowest-device cost covering positions [0, b) with k chunks.
  std::vector<double> best(n + 1, kInfinity);
  const int first_last = chunk_costs.row(0, 0, row);
  for (int b = 1; b <= first_last; ++b) {
    if (latest_start[b] >= 0) best[b] = row[b];
  }
  std::vector<std::vector<int>> split(k_total + 1);  // split[k][b]: start of the k-th chunk
  for (int k = 2; k <= k_total; ++k) {
    std::vector<double> next(n + 1, kInfinity);
    split[k].assign(n + 1, -1);
    const int max_end = n - (k_total - k);  // leave a node for every later chunk
    for (int a = k - 1; a < max_end; ++a) {
      if (best[a] == kInfinity) continue;
      if (k == k_total && chunk_costs.last_end(a) < n) continue;  // the last chunk must reach n
      const int last = std::min(chunk_costs.row(a, k - 1, row), max_end);
      for (int b = (k == k_total ? n : a + 1); b <= last; ++b) {
        if (a > latest_start[b]) continue;
        const double value = std::max(best[a], row[b]);
        if (value < next[b]) {
          next[b] = value;
          split[k][b] = a;
        }
      }
    }
    best.swap(next);
  }
  if (best[n] == kInfinity) {
    throw_invalid("placer '" + placer_name + "': no split of the order into " +
                  std::to_string(k_total) + " contiguous chunks" +
                  (placer_name == "contiguous" ? "" : " at single-tensor boundaries") +
                  " fits in " + std::to_string(context.capacity_bytes) + " bytes per device");
  }
  Placement placement{k_total, std::vector<int>(n, 0)};
  int end = n;
  for (int k = k_total; k >= 1; --k) {
    const int start = k == 1 ? 0 : split[k][end];
    for (int i = start; i < end; ++i) placement.device_of_node[order[i]] = k - 1;
    end = start;
  }
  return placement;
}

}  // namespace

Placement place_contiguous(const Graph& graph, const Order& order,
                           const PlacementRequest& request) {
  std::vector<int> any_start(graph.node_count() + 1);
  for (int b = 0; b <= graph.node_count(); ++b) any_start[b] = b - 1;
  return place_contiguous_at(graph, order, request, any_start, "contiguous");
}

Placement place_stages(const Graph& graph, const Order& order, const PlacementRequest& request) {
  // single_tensor_cuts indexes by order position before make_placer_context checks the
  // order, so a short order would be read past its end.
  require_valid_order(graph, order);
  const std::vector<int> latest_start = single_tensor_cuts(graph, order);
  const auto cuts =
      std::count_if(latest_start.begin(), latest_start.end() - 1, [](int a) { return a >= 0; });
  if (cuts < request.device_count - 1) {
    throw_invalid("placer 'stages': the order has " + std::to_string(cuts) +
                  " single-tensor cut points, " + std::to_string(request.device_count - 1) +
                  " needed for " + std::to_string(request.device_count) +
                  " stages (try order topo or dfs-post-rev, or fewer devices)");
  }
  return place_contiguous_at(graph, order, request, latest_start, "stages");
}

}  // namespace interplace::placement
