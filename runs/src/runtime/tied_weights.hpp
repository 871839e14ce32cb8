// Tied weights across ranks (zoo.hpp): GPT's LM head ("tied_linear") shares the token
// table of "embed". On one rank the head is bound to the owner's parameter. Across ranks
// the owner's copy is authoritative: the head's rank binds a replica, sends its gradient
// contribution to the owner before the optimiser step and receives the updated values
// after it.
#pragma once

#include <memory>
#include <vector>

#include "interplace/kernels/layer.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/placement.hpp"
#include "runtime/messenger.hpp"

namespace interplace::runs {

class TiedWeights {
 public:
  // `layers` by node id, null where not on this rank; tags from kFirstTiedTag up to kFirstDataTag.
  // `layers` are the rank's, already on `device`, where replicas are made too.
  TiedWeights(const placement::Graph& graph, const placement::Placement& placement, int rank,
              uint64_t seed, kernels::Device device,
              std::vector<std::unique_ptr<kernels::Layer>>& layers);
  std::vector<kernels::Parameter*> replicas();
  void exchange_gradients(Messenger& msg);  // before the optimiser step
  void exchange_values(Messenger& msg);     // after it

 private:
  struct Tie {
    kernels::Parameter* owner = nullptr;  // ours, replicated on `peer`
    std::unique_ptr<kernels::Parameter> replica;
    int peer = -1;
    int tag = 0;
  };
  std::vector<Tie> ties_;
};

}  // namespace interplace::runs
