// What a rank's optimiser step updates and how: the rank's trainable parameters (its
// layers' and its auxiliary head's), the weights it shares with other ranks (TiedWeights),
// the optimiser the configuration names, and under data parallelism the sums of the
// gradients and loss tallies over the stage's replicas. Roughly, one step:
//   start_allreduce   sums[...] = MPI_Iallreduce(grads, tallies)  (after the last backward)
//   step              wait(sums); grads = sums / R; ties; optimizer.step(); ties
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "interplace/kernels/optimizer.hpp"
#include "interplace/runs/training.hpp"
#include "runtime/loss_tally.hpp"
#include "runtime/messenger.hpp"
#include "runtime/tied_weights.hpp"

namespace interplace::runs {

class RankOptimizer {
 public:
  RankOptimizer(const TrainConfig& config, std::vector<kernels::Parameter*> trainable,
                std::unique_ptr<TiedWeights> ties);

  // Starts summing the gradients that have one this step and the tallies over the stage's
  // replicas (non-blocking); nothing with one replica or when already started.
  void start_allreduce(Messenger& msg, const LossTally& loss, const LossTally& aux_loss);
  // The optimiser step: waits for the all-reduce (starting it if no backward did) and puts
  // the means in place, the loss tallies included; exchanges tied weights around it.
  void step(Messenger& msg, LossTally& loss, LossTally& aux_loss);
  bool allreduce_started() const { return started_; }
  void set_learning_rate(double learning_rate);
  int64_t parameter_bytes() const;

 private:
  void post_allreduce(Messenger& msg, const LossTally& loss, const LossTally& aux_loss);

  std::vector<kernels::Parameter*> trainable_;  // what the optimiser steps (no replicas)
  std::unique_ptr<TiedWeights> ties_;
  std::unique_ptr<kernels::Optimizer> optimizer_;
  // The all-reduce in flight: the parameters with a gradient this step, in order, their
  // gradients and the tallies, summed in place.
  std::vector<kernels::Parameter*> reduced_;
  std::vector<float> gradients_;
  std::vector<double> tallies_;
  std::vector<MPI_Request> requests_;
  bool started_ = false;
};

}  // namespace interplace::runs
