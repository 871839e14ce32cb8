#include "runtime/aux_head_model.hpp"

#include "interplace/placement/aux_heads.hpp"
#include "interplace/placement/layer_factory.hpp"
#include "interplace/placement/stage_chain.hpp"
#include "interplace/runs/weight_seeds.hpp"

namespace interplace::runs {

using kernels::Context;
using kernels::Tensor;

AuxHeadModel::AuxHeadModel(const TrainPlan& plan, int rank, kernels::Device device,
                           std::vector<kernels::Parameter*>& trainable) {
  const std::vector<placement::NodeId> producers =
      placement::boundary_producers(plan.graph, plan.placement);
  boundary_ = producers.at(static_cast<size_t>(rank));
  const placement::Graph head_graph =
      placement::aux_head_graph(plan.graph, boundary_, config_aux_heads(plan.config));
  for (const placement::Node& node : head_graph.nodes()) {
    if (node.op == "input") continue;
    layers_.push_back(placement::make_layer(node));
    kernels::Rng rng(node_seed(plan.config.seed, node.id, aux_head_salt(rank)));
    layers_.back()->init_parameters(rng);
    layers_.back()->to(device);
    for (kernels::Parameter* param : layers_.back()->parameters()) trainable.push_back(param);
  }
}

void AuxHeadModel::forward(int micro_batch, const Tensor& boundary_output, const Loss& loss) {
  const auto m = static_cast<size_t>(micro_batch);
  Tensor x = boundary_output;  // detached: the head's gradient stops at the boundary
  for (size_t i = 0; i < layers_.size(); ++i) x = layers_[i]->forward(x, contexts_[m][i]);
  gradient_[m] = loss(x, micro_batch, loss_contexts_[m]);
}

void AuxHeadModel::backward(int micro_batch) {
  const auto m = static_cast<size_t>(micro_batch);
  Tensor g = gradient_[m];
  for (size_t i = layers_.size(); i-- > 0;) g = layers_[i]->backward(g, contexts_[m][i]).front();
  gradient_[m] = g;
}

void AuxHeadModel::reset(int micro_batches) {
  const auto n = static_cast<size_t>(micro_batches);
  contexts_.assign(n, std::vector<Context>(layers_.size()));
  loss_contexts_.assign(n, Context());
  gradient_.assign(n, Tensor());
}

void AuxHeadModel::release(int micro_batch) {
  const auto m = static_cast<size_t>(micro_batch);
  for (Context& c : contexts_[m]) c = Context();
  loss_contexts_[m] = Context();
  gradient_[m] = Tensor();
}

void AuxHeadModel::set_training(bool training) {
  for (auto& layer : layers_) layer->set_training(training);
}

}  // namespace interplace::runs
