#include "runtime/tied_weights.hpp"

#include <algorithm>
#include <set>
#include <string>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/layers/tied_linear.hpp"
#include "interplace/placement/layer_factory.hpp"
#include "interplace/runs/weight_seeds.hpp"

namespace interplace::runs {
namespace {

kernels::Parameter& named_parameter(kernels::Layer& layer, const std::string& name) {
  for (kernels::Parameter* p : layer.parameters()) {
    if (p->name == name) return *p;
  }
  throw_invalid(layer.type() + " has no parameter " + name);
}

}  // namespace

TiedWeights::TiedWeights(const placement::Graph& graph, const placement::Placement& placement,
                         int rank, uint64_t seed, kernels::Device device,
                         std::vector<std::unique_ptr<kernels::Layer>>& layers) {
  const auto owner = [&](placement::NodeId id) {
    return placement.device_of_node[static_cast<size_t>(id)];
  };
  // The shared weights (owner node, parameter) in order of their first head, with the
  // heads of each: every rank computes the same list.
  struct Shared {
    placement::NodeId source;
    std::string name;
    std::vector<placement::NodeId> heads;
  };
  std::vector<Shared> shared;
  for (const placement::Node& node : graph.nodes()) {
    if (node.op != "tied_linear") continue;
    const placement::NodeId source =
        graph.id_of(std::get<std::string>(node.attributes.at("tied_to")));
    const auto& name = std::get<std::string>(node.attributes.at("tied_parameter"));
    auto it = std::find_if(shared.begin(), shared.end(),
                           [&](const Shared& s) { return s.source == source && s.name == name; });
    if (it == shared.end()) it = shared.insert(shared.end(), Shared{source, name, {}});
    it->heads.push_back(node.id);
  }
  const int tags = Messenger::kFirstDataTag - Messenger::kFirstTiedTag;
  for (size_t index = 0; index < shared.size(); ++index) {
    const Shared& s = shared[index];
    const int tag = Messenger::kFirstTiedTag + static_cast<int>(index) % tags;
    const int owner_rank = owner(s.source);
    const auto bind = [&](placement::NodeId head, kernels::Parameter& weight) {
      dynamic_cast<kernels::TiedLinear&>(*layers[static_cast<size_t>(head)]).bind(weight);
    };
    if (owner_rank == rank) {
      kernels::Parameter& weight = named_parameter(*layers[static_cast<size_t>(s.source)], s.name);
      std::set<int> peers;
      for (placement::NodeId head : s.heads) {
        if (owner(head) == rank) {
          bind(head, weight);
        } else {
          peers.insert(owner(head));
        }
      }
      for (int peer : peers) ties_.push_back({&weight, nullptr, peer, tag});
      continue;
    }
    std::shared_ptr<kernels::Parameter> replica;
    for (placement::NodeId head : s.heads) {
      if (owner(head) != rank) continue;
      if (!replica) {
        // The replica starts from the owner's initial values: both come from the owner
        // node's seed (weight_seeds.hpp), so no message is needed before the first step.
        auto twin = placement::make_layer(graph.node(s.source));
        kernels::Rng rng(node_seed(seed, s.source));
        twin->init_parameters(rng);
        twin->to(device);
        replica = std::make_shared<kernels::Parameter>(named_parameter(*twin, s.name));
        replica->grad = kernels::Tensor();
        ties_.push_back({nullptr, replica, owner_rank, tag});
      }
      bind(head, *replica);
    }
  }
}

std::vector<kernels::Parameter*> TiedWeights::replicas() {
  std::vector<kernels::Parameter*> out;
  for (Tie& tie : ties_) {
    if (tie.replica) out.push_back(tie.replica.get());
  }
  return out;
}

void TiedWeights::exchange_gradients(Messenger& msg) {
  for (Tie& tie : ties_) {
    if (!tie.replica) continue;
    const kernels::Parameter& r = *tie.replica;
    msg.send(r.grad.defined() && !r.grad_is_zero ? r.grad : kernels::Tensor::zeros(r.value.shape()),
             tie.peer, tie.tag);
  }
  for (Tie& tie : ties_) {
    if (!tie.owner) continue;
    const kernels::Tensor g = msg.receive(tie.owner->value.shape(), tie.peer, tie.tag);
    if (tie.owner->grad.defined() && !tie.owner->grad_is_zero) {
      kernels::backend_for(g.device()).axpy(1.0f, g, tie.owner->grad);
    } else {
      tie.owner->grad = g;
      tie.owner->grad_is_zero = false;
    }
  }
}

void TiedWeights::exchange_values(Messenger& msg) {
  for (Tie& tie : ties_) {
    if (tie.owner) msg.send(tie.owner->value.clone(), tie.peer, tie.tag);
  }
  for (Tie& tie : ties_) {
    if (!tie.replica) continue;
    tie.replica->value.copy_from(msg.receive(tie.replica->value.shape(), tie.peer, tie.tag));
    tie.replica->grad_is_zero = true;
  }
}

}  // namespace interplace::runs
