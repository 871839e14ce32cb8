#include "runtime/plan_support.hpp"

#include <string>
#include <variant>

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

SampleShape sample_shape(const placement::Graph& graph) {
  SampleShape shape;
  for (const placement::Node& node : graph.nodes()) {
    if (node.op == "input")
      shape.input.assign(node.output_shape.begin() + 1, node.output_shape.end());
    // Token inputs: ids must stay below the embedding's table (BERT's classes are labels).
    if (node.op == "embedding" && shape.input_vocab == 0) {
      const auto vocab = node.attributes.find("vocab_size");
      if (vocab != node.attributes.end() && std::holds_alternative<int64_t>(vocab->second))
        shape.input_vocab = std::get<int64_t>(vocab->second);
    }
  }
  const kernels::Shape& logits = graph.node(graph.sinks().front()).output_shape;
  shape.classes = logits.back();
  shape.sequence = logits.size() == 3;
  return shape;
}

}  // namespace interplace::runs
