#include "runtime/rank_model.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/loss.hpp"
#include "interplace/placement/layer_factory.hpp"
#include "interplace/placement/stage_chain.hpp"
#include "interplace/runs/aux_heads.hpp"
#include "interplace/runs/devices.hpp"
#include "runtime/plan_support.hpp"
#include "runtime/tied_weights.hpp"

namespace interplace::runs {

using kernels::Context;
using kernels::Parameter;
using kernels::Tensor;
using placement::Node;
using placement::NodeId;

namespace {

// Rows [first, first + count) of a [N, ...] tensor, as a new tensor.
Tensor slice_rows(const Tensor& t, int64_t first, int64_t count) {
  kernels::Shape shape = t.shape();
  const int64_t row = t.numel() / shape[0];
  shape[0] = count;
  Tensor out(shape);
  std::memcpy(out.data(), t.data() + first * row, static_cast<size_t>(count * row) * sizeof(float));
  return out;
}

void accumulate(Tensor& sum, const Tensor& add) {
  if (!sum.defined()) {
    sum = add;
    return;
  }
  // A fresh tensor: a layer may hand back views of its own gradient (Flatten, Add).
  Tensor total(sum.shape(), sum.device());
  kernels::backend_for(sum.device()).add(sum, add, total);
  sum = total;
}

}  // namespace

struct RankModel::Impl {
  const TrainPlan& plan;
  const placement::Graph& graph;
  Messenger& msg;
  RankClock& clock;
  kernels::Device device;
  int rank;
  int stage_count;
  int micro_batches = 1;
  NodeId sink;
  std::vector<std::unique_ptr<kernels::Layer>> layers;  // by node; null when not ours
  std::vector<NodeId> mine;                             // ascending id (topological)
  std::vector<std::vector<int>> remote_consumers;       // by node: other ranks, ascending
  std::vector<NodeId> last_local_consumer;              // by remote producer: min local consumer
  std::vector<Tensor> inputs, labels;                   // by micro-batch
  std::vector<std::vector<Tensor>> outputs;             // [micro-batch][node]
  std::vector<std::vector<Context>> contexts;           // [micro-batch][node]
  std::vector<Tensor> loss_grad;                        // [micro-batch], on the sink's rank
  kernels::SoftmaxCrossEntropy cross_entropy;
  // Auxiliary head on this rank's boundary tensor.
  NodeId boundary = -1;
  std::vector<std::unique_ptr<kernels::Layer>> head;
  std::vector<std::vector<Context>> head_contexts;  // [micro-batch][layer]
  std::vector<Context> head_loss_contexts;
  std::vector<Tensor> aux_grad;  // [micro-batch]: gradient at the boundary
  std::unique_ptr<TiedWeights> ties;
  std::vector<Parameter*> trainable;  // what the optimiser steps (no replicas)
  std::unique_ptr<kernels::Optimizer> optimizer;
  bool layers_training = true;      // false: evaluation, forward only
  LossTally owner_loss, head_loss;  // of the network's loss (sink's rank) and the aux head

  int owner(NodeId id) const { return plan.placement.device_of_node[static_cast<size_t>(id)]; }
  int tag(NodeId node, int m, bool gradient, int loss_stage) const {
    const int64_t t = Messenger::kFirstDataTag +
                      ((static_cast<int64_t>(node) * micro_batches + m) * 2 + (gradient ? 1 : 0)) *
                          (stage_count + 1) +
                      (loss_stage + 1);
    return static_cast<int>(t);
  }

  Impl(const TrainPlan& p, bool with_head, Messenger& m, RankClock& c)
      : plan(p),
        graph(p.graph),
        msg(m),
        clock(c),
        device(device_by_name(p.config.device)),
        rank(m.rank()),
        stage_count(p.config.devices),
        micro_batches(p.config.micro_batches),
        sink(p.graph.sinks().front()) {
    const auto n = static_cast<size_t>(graph.node_count());
    layers.resize(n);
    remote_consumers.resize(n);
    last_local_consumer.assign(n, -1);
    const int64_t last_tag =
        static_cast<int64_t>(graph.node_count()) * micro_batches * 2 * (stage_count + 1) +
        Messenger::kFirstDataTag;
    if (last_tag > msg.tag_upper_bound()) {
      throw_invalid("too many (node, micro-batch) messages for this MPI's tag range (" +
                    std::to_string(last_tag) + " > MPI_TAG_UB " +
                    std::to_string(msg.tag_upper_bound()) + ")");
    }
    for (const Node& node : graph.nodes()) {
      std::set<int> others;
      for (NodeId s : node.successors) {
        if (owner(s) != owner(node.id)) others.insert(owner(s));
        if (owner(s) == rank && owner(node.id) != rank) {
          NodeId& last = last_local_consumer[static_cast<size_t>(node.id)];
          last = last < 0 ? s : std::min(last, s);
        }
      }
      remote_consumers[static_cast<size_t>(node.id)].assign(others.begin(), others.end());
      if (owner(node.id) != rank) continue;
      mine.push_back(node.id);
      if (node.op == "input") continue;
      placement::Attributes attributes = node.attributes;
      if (node.op == "dropout") {
        attributes["seed"] = static_cast<int64_t>(node_seed(plan.config.seed, node.id, 1) >> 1);
      }
      layers[static_cast<size_t>(node.id)] = placement::make_layer(node.op, attributes);
      kernels::Rng rng(node_seed(plan.config.seed, node.id));
      layers[static_cast<size_t>(node.id)]->init_parameters(rng);
      layers[static_cast<size_t>(node.id)]->to(device);
    }
    for (auto& layer : layers) {
      if (!layer) continue;
      for (Parameter* param : layer->parameters()) trainable.push_back(param);
    }
    ties = std::make_unique<TiedWeights>(graph, plan.placement, rank, plan.config.seed, device,
                                         layers);
    if (with_head) build_head();
    if (plan.config.weight_decay_all) {
      for (Parameter* param : trainable) param->weight_decay = true;
    }
    make_optimizer();
  }

  void build_head() {
    const std::vector<NodeId> producers = placement::boundary_producers(graph, plan.placement);
    boundary = producers.at(static_cast<size_t>(rank));
    const placement::Graph head_graph =
        aux_head_graph(graph, boundary, config_aux_heads(plan.config));
    for (const Node& node : head_graph.nodes()) {
      if (node.op == "input") continue;
      head.push_back(placement::make_layer(node));
      kernels::Rng rng(node_seed(plan.config.seed, node.id, aux_head_salt(rank)));
      head.back()->init_parameters(rng);
      head.back()->to(device);
      for (Parameter* param : head.back()->parameters()) trainable.push_back(param);
    }
  }

  void make_optimizer() {
    const auto lr = static_cast<float>(plan.config.learning_rate);
    const auto wd = static_cast<float>(plan.config.weight_decay);
    switch (plan.config.optimizer) {
      case placement::OptimizerKind::adamw:
        optimizer = std::make_unique<kernels::AdamW>(
            trainable, kernels::AdamWOptions{.learning_rate = lr, .weight_decay = wd});
        return;
      case placement::OptimizerKind::sgd:
      case placement::OptimizerKind::sgd_momentum:
      case placement::OptimizerKind::sgd_nesterov: {
        // The momentum the cost model's state factor counts (one velocity copy) or none.
        const bool nesterov = plan.config.optimizer == placement::OptimizerKind::sgd_nesterov;
        const float momentum = plan.config.optimizer == placement::OptimizerKind::sgd ? 0.0f : 0.9f;
        optimizer =
            std::make_unique<kernels::Sgd>(trainable, kernels::SgdOptions{.learning_rate = lr,
                                                                          .momentum = momentum,
                                                                          .weight_decay = wd,
                                                                          .nesterov = nesterov});
        return;
      }
    }
    throw_invalid("unknown optimizer kind " +
                  std::to_string(static_cast<int>(plan.config.optimizer)));
  }

  void reset(int m_count) {
    micro_batches = m_count;
    outputs.assign(static_cast<size_t>(m_count),
                   std::vector<Tensor>(static_cast<size_t>(graph.node_count())));
    contexts.assign(static_cast<size_t>(m_count),
                    std::vector<Context>(static_cast<size_t>(graph.node_count())));
    loss_grad.assign(static_cast<size_t>(m_count), Tensor());
    head_contexts.assign(static_cast<size_t>(m_count), std::vector<Context>(head.size()));
    head_loss_contexts.assign(static_cast<size_t>(m_count), Context());
    aux_grad.assign(static_cast<size_t>(m_count), Tensor());
  }

  // Cross-entropy of `logits` against the micro-batch's labels, into `tally`.
  Tensor loss_and_gradient(const Tensor& logits, int m, Context& ctx, LossTally& tally) {
    const Tensor& y = labels[static_cast<size_t>(m)];
    const Tensor value = cross_entropy.forward(std::vector<Tensor>{logits, y}, ctx);
    tally.loss_sum += static_cast<double>(value.to_vector().front());
    tally.correct += static_cast<double>(kernels::SoftmaxCrossEntropy::correct_count(ctx));
    tally.rows += static_cast<double>(logits.numel() / logits.shape().back());
    ++tally.micro_batches;
    if (!layers_training) return Tensor();
    // M micro-batches of B/M samples weigh as one mini-batch of B: mean of the means.
    const Tensor g = Tensor::full({1}, 1.0f / static_cast<float>(micro_batches), device);
    return cross_entropy.backward(g, ctx).front();
  }

  const Tensor& input_of(NodeId producer, int m) {
    Tensor& out = outputs[static_cast<size_t>(m)][static_cast<size_t>(producer)];
    if (!out.defined()) {
      out = msg.receive(graph.node(producer).output_shape, owner(producer),
                        tag(producer, m, false, -1));
    }
    return out;
  }

  // A unit of work for the clock; it ends once the device has done the unit's work.
  void begin(const char* kind) { clock.begin(kind, wall_s()); }
  void finish() {
    if (device != kernels::Device::cpu) kernels::backend_for(device).synchronize();
    clock.end(wall_s());
  }

  void forward(int m) {
    begin("forward");
    auto& outs = outputs[static_cast<size_t>(m)];
    for (NodeId id : mine) {
      const Node& node = graph.node(id);
      if (node.op == "input") {
        outs[static_cast<size_t>(id)] = inputs[static_cast<size_t>(m)];
      } else {
        std::vector<Tensor> args;
        for (NodeId p : node.inputs) args.push_back(input_of(p, m));
        outs[static_cast<size_t>(id)] = layers[static_cast<size_t>(id)]->forward(
            args, contexts[static_cast<size_t>(m)][static_cast<size_t>(id)]);
      }
      for (int peer : remote_consumers[static_cast<size_t>(id)]) {
        msg.send(outs[static_cast<size_t>(id)], peer, tag(id, m, false, -1));
      }
      if (id == sink) {
        Context ctx;
        loss_grad[static_cast<size_t>(m)] =
            loss_and_gradient(outs[static_cast<size_t>(id)], m, ctx, owner_loss);
      }
    }
    finish();
  }

  void aux_forward(int m) {
    begin("aux");
    Tensor x = outputs[static_cast<size_t>(m)][static_cast<size_t>(boundary)];  // detached
    for (size_t i = 0; i < head.size(); ++i) {
      x = head[i]->forward(x, head_contexts[static_cast<size_t>(m)][i]);
    }
    aux_grad[static_cast<size_t>(m)] =
        loss_and_gradient(x, m, head_loss_contexts[static_cast<size_t>(m)], head_loss);
    finish();
  }

  void aux_backward(int m) {
    begin("aux");
    Tensor g = aux_grad[static_cast<size_t>(m)];
    for (size_t i = head.size(); i-- > 0;) {
      g = head[i]->backward(g, head_contexts[static_cast<size_t>(m)][i]).front();
    }
    aux_grad[static_cast<size_t>(m)] = g;  // now the gradient at the boundary tensor
    finish();
  }

  void backward(const BackwardPass& pass) {
    begin("backward");
    const int m = pass.micro_batch;
    const bool global = pass.loss_stage < 0;
    std::vector<Tensor> grads(static_cast<size_t>(graph.node_count()));
    if (owner(sink) == rank && (global || pass.loss_stage == rank)) {
      grads[static_cast<size_t>(sink)] = loss_grad[static_cast<size_t>(m)];
    }
    if (!global && pass.loss_stage == rank && boundary >= 0) {
      grads[static_cast<size_t>(boundary)] = aux_grad[static_cast<size_t>(m)];
    }
    const bool receive = global || pass.loss_stage > rank;
    // A pass that must not train this body computes the input gradients alone: no weight
    // gradient is computed, and the body's accumulated ones stay as they are.
    const kernels::Gradients which =
        pass.updates ? kernels::Gradients::inputs_and_parameters : kernels::Gradients::inputs_only;
    std::vector<Tensor> outgoing(static_cast<size_t>(graph.node_count()));
    for (auto it = mine.rbegin(); it != mine.rend(); ++it) {
      const NodeId id = *it;
      const Node& node = graph.node(id);
      if (node.op == "input") continue;
      Tensor& g = grads[static_cast<size_t>(id)];
      if (receive) {
        for (int peer : remote_consumers[static_cast<size_t>(id)]) {
          accumulate(g, msg.receive(node.output_shape, peer, tag(id, m, true, pass.loss_stage)));
        }
      }
      if (!g.defined()) g = Tensor::zeros(node.output_shape, device);
      Context ctx = contexts[static_cast<size_t>(m)][static_cast<size_t>(id)];  // may run again
      const std::vector<Tensor> in_grads = layers[static_cast<size_t>(id)]->backward(g, ctx, which);
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        const NodeId p = node.inputs[k];
        if (graph.node(p).op == "input") continue;  // no gradient for data
        const bool remote = owner(p) != rank;
        if (remote && !pass.propagates) continue;
        Tensor gk =
            in_grads[k].defined() ? in_grads[k] : Tensor::zeros(graph.node(p).output_shape, device);
        accumulate(remote ? outgoing[static_cast<size_t>(p)] : grads[static_cast<size_t>(p)], gk);
      }
      // Each remote producer gets one message, after its last consumer here.
      if (pass.propagates) {
        for (NodeId p : node.inputs) {
          if (owner(p) == rank || graph.node(p).op == "input") continue;
          if (last_local_consumer[static_cast<size_t>(p)] != id) continue;
          Tensor& out = outgoing[static_cast<size_t>(p)];
          if (!out.defined()) continue;
          msg.send(out, owner(p), tag(p, m, true, pass.loss_stage));
          out = Tensor();
        }
      }
      g = Tensor();
    }
    finish();
  }

  void optimizer_step() {
    begin("optimizer");  // waits for tied-weight messages are cut out as communication
    ties->exchange_gradients(msg);
    optimizer->step();
    optimizer->zero_grad();
    ties->exchange_values(msg);
    finish();
  }
};

RankModel::RankModel(const TrainPlan& plan, bool has_aux_head, Messenger& messenger,
                     RankClock& clock)
    : impl_(std::make_unique<Impl>(plan, has_aux_head, messenger, clock)) {}
RankModel::~RankModel() = default;

bool RankModel::owns_sink() const {
  return impl_->owner(impl_->sink) == impl_->rank;
}
bool RankModel::has_aux_head() const {
  return impl_->boundary >= 0;
}

void RankModel::set_batch(const Batch& batch, int micro_batches) {
  impl_->reset(micro_batches);
  const int64_t rows = batch.inputs.shape()[0] / micro_batches;
  impl_->inputs.clear();
  impl_->labels.clear();
  for (int m = 0; m < micro_batches; ++m) {
    impl_->inputs.push_back(slice_rows(batch.inputs, m * rows, rows).to(impl_->device));
    impl_->labels.push_back(slice_rows(batch.labels, m * rows, rows).to(impl_->device));
  }
}

void RankModel::forward(int m) {
  impl_->forward(m);
  loss = impl_->owner_loss;
}
void RankModel::aux_forward(int m) {
  impl_->aux_forward(m);
  aux_loss = impl_->head_loss;
}
void RankModel::aux_backward(int m) {
  impl_->aux_backward(m);
}
void RankModel::backward(const BackwardPass& pass) {
  impl_->backward(pass);
}
void RankModel::set_learning_rate(double learning_rate) {
  impl_->optimizer->set_learning_rate(static_cast<float>(learning_rate));
}

void RankModel::optimizer_step() {
  impl_->optimizer_step();
}

void RankModel::release(int micro_batch) {
  const auto m = static_cast<size_t>(micro_batch);
  Impl& i = *impl_;
  for (Tensor& t : i.outputs[m]) t = Tensor();
  for (Context& c : i.contexts[m]) c = Context();
  for (Context& c : i.head_contexts[m]) c = Context();
  i.head_loss_contexts[m] = Context();
  i.loss_grad[m] = Tensor();
  i.aux_grad[m] = Tensor();
}

void RankModel::end_step() {
  impl_->reset(impl_->micro_batches);
  impl_->owner_loss = {};
  impl_->head_loss = {};
  loss = {};
  aux_loss = {};
}

void RankModel::set_training(bool training) {
  impl_->layers_training = training;
  for (auto& layer : impl_->layers) {
    if (layer) layer->set_training(training);
  }
  for (auto& layer : impl_->head) layer->set_training(training);
}

int64_t RankModel::parameter_bytes() const {
  int64_t bytes = 0;
  for (Parameter* p : impl_->trainable) bytes += p->value.bytes();
  return bytes;
}

}  // namespace interplace::runs
