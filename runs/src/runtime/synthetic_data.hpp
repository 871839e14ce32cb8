// Seeded random mini-batches for the `synthetic` data set, shaped from the graph (the
// runtime's own stand-in until the data library provides open_dataset on this branch).
#pragma once

#include <cstdint>

#include "interplace/placement/graph.hpp"
#include "interplace/runs/datasets.hpp"

namespace interplace::runs {

class SyntheticData {
 public:
  // The graph is built at micro-batch size; batches are drawn at any size.
  SyntheticData(const placement::Graph& graph, uint64_t seed);
  Batch train_batch(int64_t step, int64_t batch_size) const;
  Batch test_batch(int64_t first, int64_t count) const;

 private:
  Batch draw(uint64_t stream, int64_t count) const;
  std::vector<int64_t> sample_;  // one input sample
  std::vector<int64_t> label_;   // one sample's labels: {} or {T}
  int64_t classes_ = 0;
  bool token_inputs_ = false;  // inputs are ids in [0, classes) (language models)
  uint64_t seed_;
};

}  // namespace interplace::runs
