// The part of the network one rank owns, and the units of work the per-rank programs are
// made of: the forward of a micro-batch through the rank's nodes, its auxiliary head, one
// backward pass of one gradient flow, the optimiser step. Tensors that cross ranks move
// through the Messenger at node level: an activation is sent to every other rank that
// consumes it as soon as it is computed and received when first needed; gradients flow
// back the same way. Executing the units of every rank in one global topological order
// of (node, micro-batch) tasks is deadlock-free (docs/runtime.md, "Programs").
#pragma once

#include <cmath>
#include <memory>
#include <vector>

#include "interplace/kernels/layer.hpp"
#include "interplace/kernels/optimizer.hpp"
#include "interplace/runs/datasets.hpp"
#include "interplace/runs/training.hpp"
#include "runtime/messenger.hpp"
#include "runtime/rank_clock.hpp"

namespace interplace::runs {

// One backward pass through this rank's nodes for one micro-batch.
struct BackwardPass {
  int micro_batch = 0;
  int loss_stage = -1;     // the flow's source stage; -1 for the global strategy
  bool updates = true;     // accumulate parameter gradients
  bool propagates = true;  // send input gradients to the ranks of the producers
};

// Loss sums of one step (or of the evaluation) on this rank.
struct LossTally {
  double loss_sum = 0.0;  // sum over micro-batches of the mean loss
  double correct = 0.0;
  double rows = 0.0;
  int micro_batches = 0;
  double mean_loss() const { return micro_batches ? loss_sum / micro_batches : NAN; }
  double accuracy() const { return rows > 0 ? correct / rows : NAN; }
};

class RankModel {
 public:
  // Builds the rank's layers on the CPU (so weights do not depend on the device) and moves
  // them to the configuration's device; batches and received tensors go there too.
  RankModel(const TrainPlan& plan, bool has_aux_head, Messenger& messenger, RankClock& clock);
  ~RankModel();

  bool owns_sink() const;
  bool has_aux_head() const;
  // Slices the mini-batch into the plan's micro-batches (every rank draws the same one).
  void set_batch(const Batch& batch, int micro_batches);
  void forward(int micro_batch);
  void aux_forward(int micro_batch);
  void aux_backward(int micro_batch);
  void backward(const BackwardPass& pass);
  void optimizer_step();
  void set_learning_rate(double learning_rate);  // the schedule's rate for the next steps
  void release(int micro_batch);  // drops a micro-batch's saved activations and gradients
  void end_step();                // drops the step's saved activations
  void set_training(bool training);

  LossTally loss, aux_loss;
  int64_t parameter_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace interplace::runs
