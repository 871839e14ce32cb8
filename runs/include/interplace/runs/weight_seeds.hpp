// Seeds of the runtime's weights and dropout masks. Each is a function of the run's seed
// and the node only, so that the weights do not depend on the placement and a P-rank run
// starts from the same network as a 1-rank run (tests rebuild it from these):
//   model node n:                     kernels::Rng(node_seed(seed, n)) -> init_parameters
//   dropout node n:                   mask seed node_seed(seed, n, 1) >> 1
//   layer j of stage k's aux head:    kernels::Rng(node_seed(seed, j, aux_head_salt(k)))
//     (j is the node id in aux_head_graph, whose node 0 is the head's input)
#pragma once

#include <cstdint>

namespace interplace::runs {

uint64_t node_seed(uint64_t seed, int64_t node, uint64_t salt = 0);
inline uint64_t aux_head_salt(int stage) {
  return 1000 + static_cast<uint64_t>(stage);
}

}  // namespace interplace::runs
