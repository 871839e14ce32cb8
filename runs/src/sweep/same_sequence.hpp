// Orders that coincide on a graph (docs/orders.md): in a simulate-only sweep, a
// configuration whose order gives its graph the node sequence of an earlier order of the
// spec, all else equal, is skipped and names that order (`same_sequence_as`), so that every
// distinct order is placed and counted once (docs/sweeps.md, "Simulate-only sweeps").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "interplace/runs/sweep_spec.hpp"

namespace interplace::runs::sweep {

// The reason a skipped twin is recorded with: "the same node sequence as order 'X' (placed
// once)".
std::string same_sequence_reason(const std::string& twin);

class SameSequence {
 public:
  explicit SameSequence(const SweepSpec& spec);
  // The order of the first configuration of the spec that differs from `config` only in
  // its order and gives the same node sequence, when it comes before `config`; else "".
  // Decided from the spec alone, so every shard decides alike. Throws what planning throws.
  std::string earlier_twin(const SweepConfig& config);

 private:
  uint64_t digest(const SweepConfig& config);
  std::map<std::string, std::vector<const SweepConfig*>> siblings_;  // in spec order
  std::map<std::string, uint64_t> digests_;                          // by configuration id
};

}  // namespace interplace::runs::sweep
