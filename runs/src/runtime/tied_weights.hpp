// Tied weights across ranks (zoo.hpp): a "tied_linear" node uses the parameter
// "tied_parameter" of the node "tied_to" (GPT's LM head shares the token table of
// "embed"; the unrolled recurrent families share every cell weight across time steps, so
// one owner has many heads). On one rank the heads are bound to the owner's parameter.
// Across ranks the owner's copy is authoritative: every other rank with heads of it keeps
// one replica (however many heads it holds), bound to all of them, sends the replica's
// summed gradient to the owner before the optimiser step and receives the updated values
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
  // `layers` by node id, null where not on this rank. `layers` are the rank's, already on
  // `device`, where replicas are made too. The shared weights take the tags
  // kFirstTiedTag .. kFirstDataTag - 1 in turn; several weights may share a tag, because
  // every rank walks them in the same (graph) order and MPI keeps messages of one tag
  // between two ranks in order.
  TiedWeights(const placement::Graph& graph, const placement::Placement& placement, int rank,
              uint64_t seed, kernels::Device device,
              std::vector<std::unique_ptr<kernels::Layer>>& layers);
  std::vector<kernels::Parameter*> replicas();
  void exchange_gradients(Messenger& msg);  // before the optimiser step
  void exchange_values(Messenger& msg);     // after it

 private:
  struct Tie {
    kernels::Parameter* owner = nullptr;          // ours, replicated on `peer`
    std::shared_ptr<kernels::Parameter> replica;  // the owner's, on `peer`
    int peer = -1;
    int tag = 0;
  };
  std::vector<Tie> ties_;
};

}  // namespace interplace::runs
