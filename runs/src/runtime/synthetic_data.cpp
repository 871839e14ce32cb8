#include "runtime/synthetic_data.hpp"

#include <algorithm>
#include <cmath>

#include "interplace/kernels/random.hpp"
#include "runtime/plan_support.hpp"

namespace interplace::runs {

SyntheticData::SyntheticData(const placement::Graph& graph, uint64_t seed) : seed_(seed) {
  for (const placement::Node& node : graph.nodes()) {
    if (node.op != "input") continue;
    sample_.assign(node.output_shape.begin() + 1, node.output_shape.end());
    for (placement::NodeId s : node.successors) {
      token_inputs_ = token_inputs_ || graph.node(s).op == "embedding";
    }
  }
  const kernels::Shape& logits = graph.node(graph.sinks().front()).output_shape;
  classes_ = logits.back();
  label_.assign(logits.begin() + 1, logits.end() - 1);
}

Batch SyntheticData::draw(uint64_t stream, int64_t count) const {
  kernels::Rng rng(node_seed(seed_, static_cast<int64_t>(stream), 7));
  kernels::Shape in{count}, out{count};
  in.insert(in.end(), sample_.begin(), sample_.end());
  out.insert(out.end(), label_.begin(), label_.end());
  Batch batch{kernels::Tensor(in), kernels::Tensor(out)};
  const auto classes = static_cast<float>(classes_);
  const auto whole = [&](float u) { return std::min(classes - 1.0f, std::floor(u * classes)); };
  for (int64_t i = 0; i < batch.inputs.numel(); ++i) {
    batch.inputs.at(i) = token_inputs_ ? whole(rng.uniform()) : rng.normal(0.0f, 1.0f);
  }
  for (int64_t i = 0; i < batch.labels.numel(); ++i) batch.labels.at(i) = whole(rng.uniform());
  return batch;
}

Batch SyntheticData::train_batch(int64_t step, int64_t batch_size) const {
  return draw(static_cast<uint64_t>(step) * 2, batch_size);
}

Batch SyntheticData::test_batch(int64_t first, int64_t count) const {
  return draw(static_cast<uint64_t>(first) * 2 + 1, count);
}

}  // namespace interplace::runs
