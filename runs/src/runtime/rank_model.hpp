// The part of the network one rank owns, and the actions of the plan's schedule
// (schedule.hpp) executed on it: the forward of a micro-batch through the rank's nodes,
// its auxiliary head, one backward pass of one gradient flow, the optimiser step, and the
// messages. Tensors cross ranks through the Messenger at send and receive actions only:
//  - MessageLevel::stage (stage chains): a micro-batch's whole boundary bundle at a time
//    (schedule.hpp says which tensors);
//  - MessageLevel::node (other placements, GPipe only): one tensor, or the sum of this
//    rank's gradients for it, per action, where node_level_schedule put it (docs/runtime.md,
//    "Programs").
#pragma once

#include <memory>
#include <vector>

#include "interplace/kernels/layer.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/runs/datasets.hpp"
#include "interplace/runs/training.hpp"
#include "runtime/loss_tally.hpp"
#include "runtime/messenger.hpp"
#include "runtime/rank_clock.hpp"

namespace interplace::runs {

class RankModel {
 public:
  // Builds the rank's layers on the CPU (so weights do not depend on the device) and moves
  // them to the configuration's device; batches and received tensors go there too.
  RankModel(const TrainPlan& plan, bool has_aux_head, Messenger& messenger, RankClock& clock);
  ~RankModel();

  bool has_aux_head() const;
  // Slices the mini-batch into the plan's micro-batches (every rank draws the same one);
  // with data parallelism, first into `replicas` contiguous slices, taking slice `replica`.
  void set_batch(const Batch& batch, int micro_batches, int replica = 0, int replicas = 1);
  // Data parallelism: starts averaging this rank's gradients and losses over its stage's
  // replicas (non-blocking), once its last backward work of the step is done; the optimiser
  // step waits for it. Nothing with one replica.
  // `step` is the optimiser step that waits for it (the timeline labels the start so).
  void start_gradient_allreduce(const placement::Action& step);
  // Runs one action of the rank's schedule; while training, appends it to executed().
  void execute(const placement::Action& action);
  // Posts the messages of a later `receive` action (stage-level schedules), so that they
  // land while this rank computes; false when there is nothing to post.
  bool post_receives(const placement::Action& action);
  void set_learning_rate(double learning_rate);  // the schedule's rate for the next steps
  void release(int micro_batch);  // drops a micro-batch's saved activations and gradients
  // Interleaved 1F1B: drops what one chunk saved for a micro-batch (its nodes' outputs and
  // contexts, the tensors it received) once that chunk is done with it.
  void release_chunk(int micro_batch, int chunk);
  void end_step();  // drops the step's saved activations
  void set_training(bool training);

  LossTally loss, aux_loss;
  int64_t parameter_bytes() const;
  // The actions executed in training mode, in order (TrainResult::executed_actions).
  const std::vector<placement::Action>& executed() const;
  // The node times since the last call (TrainPlan::record_node_times; empty vectors
  // otherwise), and zeroes them.
  NodeStepTimes take_node_times();

 private:
  void run_compute(const placement::Action& action);  // one action, not an overlapped pair

  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<placement::Action> executed_;
};

}  // namespace interplace::runs
