#include "runtime/tied_weights.hpp"

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
  int index = 0;
  for (const placement::Node& node : graph.nodes()) {
    if (node.op != "tied_linear") continue;
    const placement::NodeId source =
        graph.id_of(std::get<std::string>(node.attributes.at("tied_to")));
    const auto& name = std::get<std::string>(node.attributes.at("tied_parameter"));
    const int tag = Messenger::kFirstTiedTag + index++;
    if (tag >= Messenger::kFirstDataTag) throw_invalid("too many tied weights");
    const bool head_here = owner(node.id) == rank, owner_here = owner(source) == rank;
    if (!head_here && !owner_here) continue;
    Tie tie;
    tie.tag = tag;
    if (head_here && owner_here) {
      dynamic_cast<kernels::TiedLinear&>(*layers[static_cast<size_t>(node.id)])
          .bind(named_parameter(*layers[static_cast<size_t>(source)], name));
      continue;
    }
    if (head_here) {
      // The replica starts from the owner's initial values: both come from the owner
      // node's seed (weight_seeds.hpp), so no message is needed before the first step.
      auto twin = placement::make_layer(graph.node(source));
      kernels::Rng rng(node_seed(seed, source));
      twin->init_parameters(rng);
      twin->to(device);
      tie.replica = std::make_unique<kernels::Parameter>(named_parameter(*twin, name));
      tie.replica->grad = kernels::Tensor();
      tie.peer = owner(source);
      dynamic_cast<kernels::TiedLinear&>(*layers[static_cast<size_t>(node.id)]).bind(*tie.replica);
    } else {
      tie.owner = &named_parameter(*layers[static_cast<size_t>(source)], name);
      tie.peer = owner(node.id);
    }
    ties_.push_back(std::move(tie));
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
