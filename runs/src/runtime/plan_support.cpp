#include "runtime/plan_support.hpp"

#include <string>

#include "interplace/kernels/error.hpp"

namespace interplace::runs {

void require_trainable_graph(const placement::Graph& graph) {
  int inputs = 0;
  for (const placement::Node& node : graph.nodes()) inputs += node.op == "input" ? 1 : 0;
  if (inputs != 1 || graph.sinks().size() != 1) {
    throw_invalid("model '" + graph.name() + "' has " + std::to_string(inputs) + " inputs and " +
                  std::to_string(graph.sinks().size()) +
                  " outputs; training needs one input and one output (the logits)");
  }
}

uint64_t node_seed(uint64_t seed, int64_t node, uint64_t salt) {
  // splitmix64 finaliser over the combined words: well mixed, platform independent.
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(node) * 0xBF58476D1CE4E5B9ull +
               salt * 0x94D049BB133111EBull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace interplace::runs
