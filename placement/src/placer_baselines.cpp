// The splits that users of PyTorch's pipelining tools get today, as placers: torchtitan's even
// split of the transformer blocks (even-layers) and DeepSpeed PipelineModule's partition
// methods `uniform` and `parameters` (deepspeed-uniform, deepspeed-parameters). Each cuts the
// graph's layers (placers.hpp) into K contiguous parts by its tool's own rule, costs unseen.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "placer_support.hpp"

namespace interplace::placement {
namespace {

// A layer: a run of nodes, consecutive in the order, of one source module (graph files'
// `module`); a node without a module is a layer of its own.
struct Layers {
  std::vector<std::vector<NodeId>> nodes;  // per layer, in the order
  std::vector<std::string> module;         // per layer
};

Layers layers_of(const Graph& graph, const Order& order) {
  Layers layers;
  for (NodeId node : order) {
    const std::string& module = graph.node(node).module;
    if (module.empty() || layers.module.empty() || layers.module.back() != module) {
      layers.nodes.emplace_back();
      layers.module.push_back(module);
    }
    layers.nodes.back().push_back(node);
  }
  return layers;
}

// Layer i goes to part p for parts[p] <= i < parts[p + 1] (DeepSpeed's boundary list).
Placement placement_of_parts(const Graph& graph, const Layers& layers,
                             const std::vector<int>& parts, const char* placer,
                             const detail::PlacerContext& context) {
  const int k = context.device_count;
  Placement placement{k, std::vector<int>(graph.node_count(), 0)};
  std::vector<int64_t> used(k, 0);
  for (int p = 0; p < k; ++p) {
    if (parts[p + 1] <= parts[p]) {
      throw_invalid(std::string("placer '") + placer + "' leaves stage " + std::to_string(p) +
                    " of " + std::to_string(k) + " empty (" + std::to_string(layers.nodes.size()) +
                    " layers). HINT: fewer devices, or a graph imported at a finer granularity "
                    "(--granularity ops or modules:D with a larger D)");
    }
    for (int i = parts[p]; i < parts[p + 1]; ++i) {
      for (NodeId node : layers.nodes[i]) {
        placement.device_of_node[node] = p;
        used[p] += context.node_memory_bytes[node];
      }
    }
    if (used[p] > context.capacity_bytes) {
      throw_invalid(std::string("placer '") + placer + "' puts " + std::to_string(used[p]) +
                    " bytes on device " + std::to_string(p) + ", which holds " +
                    std::to_string(context.capacity_bytes) +
                    " (the tool's split does not look at memory). HINT: more devices, more "
                    "micro-batches, or a placer that respects memory (contiguous, stages)");
    }
  }
  return placement;
}

// DeepSpeed's partition_uniform: n // k items a part, the first n % k parts one more; with
// n <= k the first n parts one item each.
std::vector<int> partition_uniform(int n, int k) {
  std::vector<int> parts(k + 1, 0);
  const int chunk = n / k, residual = n % k;
  for (int p = 1; p <= k; ++p) parts[p] = std::min(n, parts[p - 1] + chunk + (p <= residual));
  return parts;
}

// DeepSpeed's partition_balanced: for each prefix of i items in j parts the split whose parts'
// sums spread least (largest minus smallest), extending the best split of a shorter prefix;
// among equal spreads the last cut wins. With n <= k, partition_uniform.
std::vector<int> partition_balanced(const std::vector<double>& weights, int k) {
  const int n = static_cast<int>(weights.size());
  if (n <= k) return partition_uniform(n, k);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const auto at = [k](int i, int j) { return static_cast<size_t>(i) * (k + 1) + j; };
  std::vector<double> largest((n + 1) * static_cast<size_t>(k + 1), kInf);
  std::vector<double> smallest(largest.size(), kInf), spread(largest.size(), kInf);
  std::vector<int> cut(largest.size(), 0);
  std::vector<double> prefix(n + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + weights[i];
  largest[at(0, 0)] = 0.0;
  spread[at(0, 0)] = 0.0;
  for (int i = 1; i <= n; ++i) {
    for (int j = 1; j <= std::min(i, k); ++j) {
      for (int c = 0; c < i; ++c) {
        const double part = prefix[i] - prefix[c];
        const double high = std::max(largest[at(c, j - 1)], part);
        const double low = std::min(smallest[at(c, j - 1)], part);
        const double cost = high - low;  // inf where no split of c into j - 1 parts exists
        if (spread[at(i, j)] >= cost) {
          spread[at(i, j)] = cost;
          largest[at(i, j)] = high;
          smallest[at(i, j)] = low;
          cut[at(i, j)] = c;
        }
      }
    }
  }
  std::vector<int> parts{n};
  for (int j = k; j >= 1; --j) parts.push_back(cut[at(parts.back(), j)]);
  std::reverse(parts.begin(), parts.end());
  return parts;
}

// The transformer blocks of torchtitan's split: the children of the module with the most
// children named with a trailing number ("layers.3", "encoder.layers.encoder_layer_3",
// "features.5"), each child one block. Per layer its block (0.., in the order of first
// appearance), -1 outside every block; empty when the graph has no such module.
std::vector<int> blocks_of(const Layers& layers) {
  std::map<std::string, std::vector<std::string>> children;  // container -> child names
  for (const std::string& module : layers.module) {
    for (size_t dot = module.find('.'); dot != std::string::npos; dot = module.find('.', dot + 1)) {
      const std::string container = module.substr(0, dot);
      const size_t end = module.find('.', dot + 1);
      const std::string child = module.substr(dot + 1, end - dot - 1);
      if (child.empty() || !std::isdigit(static_cast<unsigned char>(child.back()))) continue;
      std::vector<std::string>& names = children[container];
      if (std::find(names.begin(), names.end(), child) == names.end()) names.push_back(child);
    }
    // A numbered top-level module ("0", "1" of an nn.Sequential): the root's children.
    const std::string top = module.substr(0, module.find('.'));
    if (!top.empty() && std::isdigit(static_cast<unsigned char>(top.back()))) {
      std::vector<std::string>& names = children[""];
      if (std::find(names.begin(), names.end(), top) == names.end()) names.push_back(top);
    }
  }
  const std::string* best = nullptr;
  size_t most = 1;  // a container of one block splits nothing
  for (const auto& [container, names] : children) {
    if (names.size() > most) {
      most = names.size();
      best = &container;
    }
  }
  if (best == nullptr) return {};
  const std::string prefix = best->empty() ? "" : *best + ".";
  const std::vector<std::string>& names = children.at(*best);
  std::vector<int> block(layers.module.size(), -1);
  for (size_t i = 0; i < layers.module.size(); ++i) {
    const std::string& module = layers.module[i];
    if (module.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string child =
        module.substr(prefix.size(), module.find('.', prefix.size()) - prefix.size());
    block[i] = static_cast<int>(std::find(names.begin(), names.end(), child) - names.begin());
  }
  return block;
}

}  // namespace

Placement place_deepspeed_uniform(const Graph& graph, const Order& order,
                                  const PlacementRequest& request) {
  const detail::PlacerContext context = detail::make_placer_context(graph, order, request);
  const Layers layers = layers_of(graph, order);
  return placement_of_parts(
      graph, layers, partition_uniform(static_cast<int>(layers.nodes.size()), context.device_count),
      "deepspeed-uniform", context);
}

Placement place_deepspeed_parameters(const Graph& graph, const Order& order,
                                     const PlacementRequest& request) {
  const detail::PlacerContext context = detail::make_placer_context(graph, order, request);
  const Layers layers = layers_of(graph, order);
  std::vector<double> parameters;
  for (const std::vector<NodeId>& layer : layers.nodes) {
    int64_t count = 0;
    for (NodeId node : layer) count += graph.node(node).parameter_count;
    parameters.push_back(static_cast<double>(count));
  }
  return placement_of_parts(graph, layers, partition_balanced(parameters, context.device_count),
                            "deepspeed-parameters", context);
}

Placement place_even_layers(const Graph& graph, const Order& order,
                            const PlacementRequest& request) {
  const detail::PlacerContext context = detail::make_placer_context(graph, order, request);
  const Layers layers = layers_of(graph, order);
  const int k = context.device_count;
  const int n = static_cast<int>(layers.nodes.size());
  std::vector<int> block = blocks_of(layers);
  if (block.empty()) {  // no numbered blocks: every layer is one
    block.resize(n);
    std::iota(block.begin(), block.end(), 0);
  }
  const int first = static_cast<int>(
      std::find_if(block.begin(), block.end(), [](int b) { return b >= 0; }) - block.begin());
  const int last =
      n - 1 -
      static_cast<int>(std::find_if(block.rbegin(), block.rend(), [](int b) { return b >= 0; }) -
                       block.rbegin());
  const int blocks = *std::max_element(block.begin(), block.end()) + 1;
  // torchtitan weighs what comes before the blocks (the embeddings) and after them (norm and
  // output) as one block each (first/last_stage_less_layers = 1), here where they exist.
  const int input_weight = first > 0 ? 1 : 0, output_weight = last < n - 1 ? 1 : 0;
  const int effective = blocks + input_weight + output_weight;
  const int per_stage = effective / k, extra = effective % k;
  if (per_stage == 0 || input_weight > per_stage || output_weight > per_stage) {
    throw_invalid(
        "placer 'even-layers': " + std::to_string(blocks) + " blocks" +
        (input_weight + output_weight > 0 ? " (with the input and output as one each)" : "") +
        " cannot fill " + std::to_string(k) + " stages. HINT: fewer devices, or deepspeed-uniform");
  }
  // Blocks [block_start[s], block_start[s + 1]) on stage s.
  std::vector<int> block_start(k + 1, 0);
  for (int s = 0; s < k; ++s) {
    int take = per_stage + (s < extra ? 1 : 0);
    if (s == 0) take -= input_weight;
    if (s == k - 1) take -= output_weight;
    block_start[s + 1] = std::min(blocks, block_start[s] + take);
  }
  block_start[k] = blocks;
  // Layers to parts: the input with stage 0, the output with the last stage, a layer between
  // blocks with the block before it.
  std::vector<int> stage_of_block(blocks, 0);
  for (int s = 0; s < k; ++s) {
    for (int b = block_start[s]; b < block_start[s + 1]; ++b) stage_of_block[b] = s;
  }
  std::vector<int> parts(k + 1, n);
  parts[0] = 0;
  int stage = 0;
  for (int i = 0; i < n; ++i) {
    const int s = i > last ? k - 1 : block[i] >= 0 ? stage_of_block[block[i]] : stage;
    if (s < stage) {
      throw_invalid("placer 'even-layers': the order visits block " + std::to_string(block[i]) +
                    " after a later one. HINT: the topo order, which keeps the blocks in "
                    "sequence");
    }
    for (; stage < s; ++stage) parts[stage + 1] = i;
  }
  return placement_of_parts(graph, layers, parts, "even-layers", context);
}

}  // namespace interplace::placement
