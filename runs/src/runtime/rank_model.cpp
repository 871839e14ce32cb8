#include "runtime/rank_model.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/loss.hpp"
#include "interplace/placement/layer_factory.hpp"
#include "interplace/runs/weight_seeds.hpp"
#include "runtime/aux_head_model.hpp"
#include "runtime/node_timer.hpp"
#include "runtime/rank_optimizer.hpp"
#include "runtime/tied_weights.hpp"

namespace interplace::runs {

using kernels::Context;
using kernels::Parameter;
using kernels::Tensor;
using placement::Node;
using placement::NodeId;

namespace {

using placement::Action;
using placement::ActionKind;
using placement::Payload;

// One backward pass through this rank's nodes for one micro-batch.
struct BackwardPass {
  int micro_batch = 0;
  int loss_stage = -1;     // the flow's source stage (the last stage for global)
  bool updates = true;     // accumulate parameter gradients
  bool propagates = true;  // compute input gradients for the ranks of the producers
  bool defers = false;     // ZB-H1's B: the parameter gradients wait for the micro-batch's W
  int chunk = 0;           // interleaved 1F1B: the rank's chunk it runs through
};

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
  int devices;      // K
  int stage_count;  // model stages: K, or K * V under interleaved 1F1B
  int micro_batches = 1;
  NodeId sink;
  // Model stage of every node (TrainPlan::stage_placement): the rank's own for every
  // schedule but interleaved 1F1B, where rank r holds stages r, r + K, .. (its chunks).
  std::vector<int> stage_of;
  std::vector<std::unique_ptr<kernels::Layer>> layers;  // by node; null when not ours
  std::vector<NodeId> mine;                             // ascending id (topological)
  // By chunk: the rank's nodes of that chunk's stage, ascending (one chunk, `mine`, unless
  // interleaved).
  std::vector<std::vector<NodeId>> chunk_nodes;
  // By node: the ranks of the other stages that consume it, ascending (under interleaved
  // 1F1B with one device, the rank itself: its chunks message each other like ranks).
  std::vector<std::vector<int>> remote_consumers;
  // By chunk: nodes of other stages its nodes consume, ascending.
  std::vector<std::vector<NodeId>> remote_inputs;
  // Gradients between a gradient receive or send action and its backward pass, by
  // (micro-batch, loss stage): received for this rank's nodes, or computed for the
  // producers on other ranks.
  std::map<std::pair<int, int>, std::vector<std::pair<NodeId, Tensor>>> received_grads,
      grads_to_send;
  // Node-level schedules: gradients summed so far, by [micro-batch][node], for this rank's
  // nodes (from its consumers here and the gradient receives) and for remote producers
  // (sent by a gradient send once the schedule's last consumer here has added to it).
  std::vector<std::vector<Tensor>> node_grads, node_outgoing;
  std::vector<Tensor> inputs, labels;          // by micro-batch
  std::vector<std::vector<Tensor>> outputs;    // [micro-batch][node]
  std::vector<std::vector<Context>> contexts;  // [micro-batch][node]
  std::vector<Tensor> loss_grad;               // [micro-batch], on the sink's rank
  kernels::SoftmaxCrossEntropy cross_entropy;
  std::unique_ptr<AuxHeadModel> head;  // on this rank's boundary tensor; null without one
  std::unique_ptr<RankOptimizer> optimizer;
  bool layers_training = true;      // false: evaluation, forward only
  LossTally owner_loss, head_loss;  // of the network's loss (sink's rank) and the aux head
  NodeTimer timer;                  // TrainPlan::record_node_times

  int owner(NodeId id) const { return plan.placement.device_of_node[static_cast<size_t>(id)]; }
  int stage(NodeId id) const { return stage_of[static_cast<size_t>(id)]; }
  int chunk_stage(int chunk) const { return plan.schedule.stage_of(rank, chunk); }
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
        device(p.device),
        rank(m.rank()),
        devices(p.config.devices),
        stage_count(p.config.devices * p.schedule.virtual_stages),
        micro_batches(p.config.micro_batches),
        sink(p.graph.sinks().front()),
        stage_of(p.stage_placement.device_of_node.empty() ? p.placement.device_of_node
                                                          : p.stage_placement.device_of_node),
        timer(static_cast<size_t>(p.graph.node_count()), p.record_node_times) {
    const auto n = static_cast<size_t>(graph.node_count());
    layers.resize(n);
    remote_consumers.resize(n);
    const int chunks = p.schedule.virtual_stages;
    chunk_nodes.resize(static_cast<size_t>(chunks));
    remote_inputs.resize(static_cast<size_t>(chunks));
    for (const Node& node : graph.nodes()) {
      if (p.schedule.device_of_stage(stage(node.id)) != owner(node.id)) {
        throw_invalid("the plan's stage placement puts '" + node.name + "' on stage " +
                      std::to_string(stage(node.id)) + ", not one of device " +
                      std::to_string(owner(node.id)) + "'s");
      }
    }
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
      std::set<int> consuming_chunks;  // this rank's, of other stages
      for (NodeId s : node.successors) {
        if (stage(s) == stage(node.id)) continue;
        others.insert(owner(s));
        if (owner(s) == rank) consuming_chunks.insert(stage(s) / devices);
      }
      remote_consumers[static_cast<size_t>(node.id)].assign(others.begin(), others.end());
      for (int chunk : consuming_chunks)
        remote_inputs[static_cast<size_t>(chunk)].push_back(node.id);
      if (owner(node.id) != rank) continue;
      mine.push_back(node.id);
      chunk_nodes[static_cast<size_t>(stage(node.id) / devices)].push_back(node.id);
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
    std::vector<Parameter*> trainable;
    for (auto& layer : layers) {
      if (!layer) continue;
      for (Parameter* param : layer->parameters()) trainable.push_back(param);
    }
    auto ties = std::make_unique<TiedWeights>(graph, plan.placement, rank, plan.config.seed, device,
                                              layers);
    if (with_head) head = std::make_unique<AuxHeadModel>(plan, rank, device, trainable);
    optimizer = std::make_unique<RankOptimizer>(plan.config, std::move(trainable), std::move(ties));
  }

  void reset(int m_count) {
    micro_batches = m_count;
    outputs.assign(static_cast<size_t>(m_count),
                   std::vector<Tensor>(static_cast<size_t>(graph.node_count())));
    contexts.assign(static_cast<size_t>(m_count),
                    std::vector<Context>(static_cast<size_t>(graph.node_count())));
    loss_grad.assign(static_cast<size_t>(m_count), Tensor());
    if (head) head->reset(m_count);
    received_grads.clear();
    grads_to_send.clear();
    node_grads.assign(static_cast<size_t>(m_count),
                      std::vector<Tensor>(static_cast<size_t>(graph.node_count())));
    node_outgoing = node_grads;
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
    const Tensor& out = outputs[static_cast<size_t>(m)][static_cast<size_t>(producer)];
    if (!out.defined()) {
      throw_runtime("rank " + std::to_string(rank) + ": the forward of micro-batch " +
                    std::to_string(m) + " needs '" + graph.node(producer).name +
                    "', which no receive action before it brought (schedule error)");
    }
    return out;
  }

  // `send act`: every tensor of this chunk that another stage consumes, to its rank.
  void send_activations(int m, int chunk) {
    for (NodeId id : chunk_nodes[static_cast<size_t>(chunk)]) {
      for (int peer : remote_consumers[static_cast<size_t>(id)]) {
        msg.send(outputs[static_cast<size_t>(m)][static_cast<size_t>(id)], peer,
                 tag(id, m, false, -1));
      }
    }
  }

  // The messages of a `receive` action, as fn(node, source rank, tag): at node level the
  // one tensor (or its gradient) the action names; at stage level for `recv act` every
  // tensor of another stage that the action's chunk consumes, for `recv grad` the
  // gradients of the chunk's tensors from every rank that consumed them. Receiving and
  // posting ahead (post_receives) walk the same list.
  template <typename Fn>
  void for_each_incoming(const Action& a, Fn fn) const {
    const int m = a.micro_batch;
    const auto chunk = static_cast<size_t>(a.chunk);
    if (a.node >= 0) {
      fn(a.node, a.peer_stage,
         tag(a.node, m, a.payload == Payload::gradient,
             a.payload == Payload::gradient ? a.loss_stage : -1));
      return;
    }
    if (a.payload == Payload::activation) {
      for (NodeId p : remote_inputs[chunk]) fn(p, owner(p), tag(p, m, false, -1));
      return;
    }
    for (NodeId id : chunk_nodes[chunk]) {
      for (int peer : remote_consumers[static_cast<size_t>(id)]) {
        fn(id, peer, tag(id, m, true, a.loss_stage));
      }
    }
  }

  void receive(const Action& a) {
    const auto m = static_cast<size_t>(a.micro_batch);
    if (a.payload == Payload::activation) {
      for_each_incoming(a, [&](NodeId p, int source, int t) {
        outputs[m][static_cast<size_t>(p)] = msg.receive(graph.node(p).output_shape, source, t);
      });
      return;
    }
    if (a.node >= 0) {  // added to the node's gradient, which its backward takes
      for_each_incoming(a, [&](NodeId id, int source, int t) {
        accumulate(node_grads[m][static_cast<size_t>(id)],
                   msg.receive(graph.node(id).output_shape, source, t));
      });
      return;
    }
    auto& into = received_grads[{a.micro_batch, a.loss_stage}];
    for_each_incoming(a, [&](NodeId id, int source, int t) {
      into.emplace_back(id, msg.receive(graph.node(id).output_shape, source, t));
    });
  }

  // A node-level `send`: the tensor the action names, or the sum of the gradients this
  // rank's consumers computed for it.
  void send_node(const Action& a) {
    const auto m = static_cast<size_t>(a.micro_batch);
    const auto id = static_cast<size_t>(a.node);
    if (a.payload == Payload::activation) {
      msg.send(outputs[m][id], a.peer_stage, tag(a.node, a.micro_batch, false, -1));
      return;
    }
    Tensor& g = node_outgoing[m][id];
    if (!g.defined()) {
      throw_runtime("rank " + std::to_string(rank) + ": a gradient send of '" +
                    graph.node(a.node).name + "' (micro-batch " + std::to_string(m) +
                    ") with no backward before it that computed it (schedule error)");
    }
    msg.send(g, a.peer_stage, tag(a.node, a.micro_batch, true, a.loss_stage));
    g = Tensor();
  }

  // `send grad`: what the backward pass computed for the producers on other ranks.
  void send_gradients(int m, int loss_stage) {
    const auto it = grads_to_send.find({m, loss_stage});
    if (it == grads_to_send.end()) {
      throw_runtime("rank " + std::to_string(rank) + ": a gradient send of micro-batch " +
                    std::to_string(m) + " (loss " + std::to_string(loss_stage) +
                    ") with no backward pass before it that propagates (schedule error)");
    }
    for (auto& [p, g] : it->second) msg.send(g, owner(p), tag(p, m, true, loss_stage));
    grads_to_send.erase(it);
  }

  // A unit of work for the clock; it ends once the device has done the unit's work.
  void begin(const char* kind) { clock.begin(kind, now()); }
  void finish() {
    if (device != kernels::Device::cpu) kernels::backend_for(device).synchronize();
    clock.end(now());
  }

  // The whole stage of a chunk (stage level) or one node (node level).
  void forward(int m, NodeId only, int chunk) {
    begin("forward");
    auto& outs = outputs[static_cast<size_t>(m)];
    for (NodeId id : chunk_nodes[static_cast<size_t>(chunk)]) {
      if (only >= 0 && id != only) continue;
      const Node& node = graph.node(id);
      const Instant node_start = timer.start();
      if (node.op == "input") {
        outs[static_cast<size_t>(id)] = inputs[static_cast<size_t>(m)];
      } else {
        std::vector<Tensor> args;
        for (NodeId p : node.inputs) args.push_back(input_of(p, m));
        outs[static_cast<size_t>(id)] = layers[static_cast<size_t>(id)]->forward(
            args, contexts[static_cast<size_t>(m)][static_cast<size_t>(id)]);
        msg.progress();  // pre-posted receives and sends move between layers
      }
      if (id == sink) {
        Context ctx;
        loss_grad[static_cast<size_t>(m)] =
            loss_and_gradient(outs[static_cast<size_t>(id)], m, ctx, owner_loss);
      }
      timer.charge(id, node_start, false);
    }
    finish();
  }

  void aux_forward(int m) {
    begin("aux");
    head->forward(m, outputs[static_cast<size_t>(m)][static_cast<size_t>(head->boundary())],
                  [this](const Tensor& logits, int micro_batch, Context& ctx) {
                    return loss_and_gradient(logits, micro_batch, ctx, head_loss);
                  });
    finish();
  }

  void aux_backward(int m) {
    begin("aux");
    head->backward(m);
    finish();
  }

  // Node level: the backward of one node, its gradient accumulated from the backwards of
  // its consumers run before it here and from the gradient receives before it; what it
  // computes for a remote producer waits for the schedule's gradient send.
  void backward_node(int m, NodeId id) {
    const Node& node = graph.node(id);
    if (node.op == "input") return;  // no gradient for data
    begin("backward");
    const Instant node_start = timer.start();
    const auto mi = static_cast<size_t>(m);
    Tensor g = std::move(node_grads[mi][static_cast<size_t>(id)]);
    node_grads[mi][static_cast<size_t>(id)] = Tensor();
    if (id == sink) accumulate(g, loss_grad[mi]);
    if (!g.defined()) g = Tensor::zeros(node.output_shape, device);
    Context ctx = contexts[mi][static_cast<size_t>(id)];
    const std::vector<Tensor> in_grads = layers[static_cast<size_t>(id)]->backward(g, ctx);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const NodeId p = node.inputs[k];
      if (graph.node(p).op == "input") continue;
      Tensor gk =
          in_grads[k].defined() ? in_grads[k] : Tensor::zeros(graph.node(p).output_shape, device);
      accumulate(owner(p) != rank ? node_outgoing[mi][static_cast<size_t>(p)]
                                  : node_grads[mi][static_cast<size_t>(p)],
                 gk);
    }
    timer.charge(id, node_start, true);
    finish();
  }

  // Stage level: one backward pass through all of a chunk's nodes on this rank.
  void backward(const BackwardPass& pass) {
    begin("backward");
    const int m = pass.micro_batch;
    const int here = chunk_stage(pass.chunk);
    std::vector<Tensor> grads(static_cast<size_t>(graph.node_count()));
    if (stage(sink) == here && pass.loss_stage == here) {
      grads[static_cast<size_t>(sink)] = loss_grad[static_cast<size_t>(m)];
    }
    if (pass.loss_stage == here && head)
      grads[static_cast<size_t>(head->boundary())] = head->gradient(m);
    // What the gradient receive actions before this pass brought.
    const auto received = received_grads.find({m, pass.loss_stage});
    if (received != received_grads.end()) {
      for (auto& [id, g] : received->second) accumulate(grads[static_cast<size_t>(id)], g);
      received_grads.erase(received);
    }
    // A pass that must not train this body computes the input gradients alone: no weight
    // gradient is computed, and the body's accumulated ones stay as they are. ZB-H1's B
    // leaves them to the micro-batch's W (backward_weight), which reads what B kept in the
    // micro-batch's contexts.
    const kernels::Gradients which = !pass.updates ? kernels::Gradients::inputs_only
                                     : pass.defers ? kernels::Gradients::inputs_deferring_parameters
                                                   : kernels::Gradients::inputs_and_parameters;
    std::vector<Tensor> outgoing(static_cast<size_t>(graph.node_count()));
    const std::vector<NodeId>& nodes = chunk_nodes[static_cast<size_t>(pass.chunk)];
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      const NodeId id = *it;
      const Node& node = graph.node(id);
      if (node.op == "input") continue;
      const Instant node_start = timer.start();
      Tensor& g = grads[static_cast<size_t>(id)];
      if (!g.defined()) g = Tensor::zeros(node.output_shape, device);
      // A copy, since an interlocking micro-batch may run backward again; B runs on the
      // micro-batch's own context, which keeps what its W needs.
      Context& stored = contexts[static_cast<size_t>(m)][static_cast<size_t>(id)];
      Context copy;
      if (!pass.defers) copy = stored;
      Context& ctx = pass.defers ? stored : copy;
      const std::vector<Tensor> in_grads = layers[static_cast<size_t>(id)]->backward(g, ctx, which);
      msg.progress();
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        const NodeId p = node.inputs[k];
        if (graph.node(p).op == "input") continue;  // no gradient for data
        const bool remote = stage(p) != here;
        if (remote && !pass.propagates) continue;
        Tensor gk =
            in_grads[k].defined() ? in_grads[k] : Tensor::zeros(graph.node(p).output_shape, device);
        accumulate(remote ? outgoing[static_cast<size_t>(p)] : grads[static_cast<size_t>(p)], gk);
      }
      g = Tensor();
      timer.charge(id, node_start, true);
    }
    if (pass.propagates) {
      auto& pending = grads_to_send[{m, pass.loss_stage}];
      for (NodeId p : remote_inputs[static_cast<size_t>(pass.chunk)]) {
        Tensor& out = outgoing[static_cast<size_t>(p)];
        if (out.defined()) pending.emplace_back(p, std::move(out));
      }
    }
    finish();
  }

  // Stage level, a zero-bubble W: the parameter gradients of micro-batch m on a chunk
  // that its B deferred, node by node in the backward's order (so that a weight two nodes
  // share sums in the order a whole backward sums it).
  void backward_weight(int m, int chunk) {
    begin("backward");
    const std::vector<NodeId>& nodes = chunk_nodes[static_cast<size_t>(chunk)];
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      const NodeId id = *it;
      if (graph.node(id).op == "input") continue;
      const Instant node_start = timer.start();
      layers[static_cast<size_t>(id)]->backward_parameters(
          contexts[static_cast<size_t>(m)][static_cast<size_t>(id)]);
      msg.progress();
      timer.charge(id, node_start, true);
    }
    finish();
  }

  // Starts summing the step's gradients and loss tallies over the stage's replicas (data
  // parallelism; nothing with one replica). Timed as optimiser work.
  void start_allreduce() {
    if (msg.replicas() <= 1 || optimizer->allreduce_started()) return;
    begin("optimizer");
    optimizer->start_allreduce(msg, owner_loss, head_loss);
    finish();
  }

  void optimizer_step() {
    begin("optimizer");  // waits for the all-reduce and tied weights are cut out as communication
    optimizer->step(msg, owner_loss, head_loss);
    finish();
  }
};

RankModel::RankModel(const TrainPlan& plan, bool has_aux_head, Messenger& messenger,
                     RankClock& clock)
    : impl_(std::make_unique<Impl>(plan, has_aux_head, messenger, clock)) {}
RankModel::~RankModel() = default;

bool RankModel::has_aux_head() const {
  return impl_->head != nullptr;
}

void RankModel::set_batch(const Batch& batch, int micro_batches, int replica, int replicas) {
  impl_->reset(micro_batches);
  // This replica's contiguous slice of the global mini-batch, then its micro-batches.
  const int64_t slice = batch.inputs.shape()[0] / replicas;
  const int64_t rows = slice / micro_batches;
  const int64_t first = replica * slice;
  impl_->inputs.clear();
  impl_->labels.clear();
  for (int m = 0; m < micro_batches; ++m) {
    impl_->inputs.push_back(slice_rows(batch.inputs, first + m * rows, rows).to(impl_->device));
    impl_->labels.push_back(slice_rows(batch.labels, first + m * rows, rows).to(impl_->device));
  }
}

void RankModel::start_gradient_allreduce(const Action& step) {
  Impl& i = *impl_;
  i.clock.action = &step;  // the timeline's interval belongs to the optimiser step ("S")
  i.clock.micro_batches = i.plan.schedule.micro_batches;
  i.clock.schedule = &i.plan.schedule;
  i.start_allreduce();
  i.clock.action = nullptr;
}

bool RankModel::post_receives(const Action& a) {
  Impl& i = *impl_;
  if (a.kind != ActionKind::receive) return false;
  i.for_each_incoming(a, [&i](NodeId node, int source, int tag) {
    i.msg.post_receive(i.graph.node(node).output_shape, source, tag);
  });
  return true;
}

void RankModel::execute(const Action& a) {
  Impl& i = *impl_;
  i.clock.action = &a;  // the timeline's events carry it
  i.clock.micro_batches = i.plan.schedule.micro_batches;
  i.clock.schedule = &i.plan.schedule;
  struct Clear {
    RankClock& clock;
    ~Clear() { clock.action = nullptr; }
  } clear{i.clock};
  if (a.kind == ActionKind::forward_backward) {  // its halves back to back, logged as one
    run_compute(placement::forward_half(a));
    run_compute(placement::backward_half(a));
  } else {
    run_compute(a);
  }
  if (i.layers_training) executed_.push_back(a);
}

void RankModel::run_compute(const Action& a) {
  Impl& i = *impl_;
  const int m = a.micro_batch;
  const bool activation = a.payload == Payload::activation;
  switch (a.kind) {
    case ActionKind::forward:
      i.forward(m, a.node, a.chunk);
      loss = i.owner_loss;
      break;
    case ActionKind::aux_forward:
      i.aux_forward(m);
      aux_loss = i.head_loss;
      break;
    case ActionKind::aux_backward:
      i.aux_backward(m);
      break;
    case ActionKind::backward:
      if (a.node >= 0) {
        i.backward_node(m, a.node);
        break;
      }
      i.backward({.micro_batch = m,
                  .loss_stage = a.loss_stage,
                  .updates = a.updates_parameters,
                  .propagates = a.propagates_gradient,
                  .defers = a.defers_parameters,
                  .chunk = a.chunk});
      break;
    case ActionKind::backward_weight:
      i.backward_weight(m, a.chunk);
      break;
    case ActionKind::send:
      if (a.node >= 0) {
        i.send_node(a);
      } else if (activation) {
        i.send_activations(m, a.chunk);
      } else {
        i.send_gradients(m, a.loss_stage);
      }
      break;
    case ActionKind::receive:
      i.receive(a);
      break;
    case ActionKind::optimizer_step:
      i.optimizer_step();
      if (i.msg.replicas() > 1) {  // the losses of the whole global mini-batch
        loss = i.owner_loss;
        aux_loss = i.head_loss;
      }
      break;
    case ActionKind::forward_backward:
      throw_invalid("an overlapped pair runs as its halves (RankModel::execute)");
  }
}

void RankModel::set_learning_rate(double learning_rate) {
  impl_->optimizer->set_learning_rate(learning_rate);
}

const std::vector<Action>& RankModel::executed() const {
  return executed_;
}

NodeStepTimes RankModel::take_node_times() {
  return impl_->timer.take();
}

void RankModel::release(int micro_batch) {
  const auto m = static_cast<size_t>(micro_batch);
  Impl& i = *impl_;
  for (Tensor& t : i.outputs[m]) t = Tensor();
  for (Context& c : i.contexts[m]) c = Context();
  if (i.head) i.head->release(micro_batch);
  i.loss_grad[m] = Tensor();
  for (Tensor& t : i.node_grads[m]) t = Tensor();
  for (Tensor& t : i.node_outgoing[m]) t = Tensor();
  std::erase_if(i.received_grads,
                [&](const auto& entry) { return entry.first.first == micro_batch; });
  std::erase_if(i.grads_to_send,
                [&](const auto& entry) { return entry.first.first == micro_batch; });
}

void RankModel::release_chunk(int micro_batch, int chunk) {
  const auto m = static_cast<size_t>(micro_batch);
  Impl& i = *impl_;
  // A chunk's backward reads contexts only, and its inputs are another stage's outputs
  // (with one device, the previous chunk's, whose backward needs its contexts, not them).
  for (NodeId id : i.chunk_nodes[static_cast<size_t>(chunk)]) {
    i.outputs[m][static_cast<size_t>(id)] = Tensor();
    i.contexts[m][static_cast<size_t>(id)] = Context();
  }
  for (NodeId p : i.remote_inputs[static_cast<size_t>(chunk)]) {
    i.outputs[m][static_cast<size_t>(p)] = Tensor();
  }
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
  if (impl_->head) impl_->head->set_training(training);
}

int64_t RankModel::parameter_bytes() const {
  return impl_->optimizer->parameter_bytes();
}

}  // namespace interplace::runs
