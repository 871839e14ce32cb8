// Loss sums of one step (or of the evaluation) on one rank.
#pragma once

#include <cmath>

namespace interplace::runs {

struct LossTally {
  double loss_sum = 0.0;  // sum over micro-batches of the mean loss
  double correct = 0.0;
  double rows = 0.0;
  int micro_batches = 0;
  double mean_loss() const { return micro_batches ? loss_sum / micro_batches : NAN; }
  double accuracy() const { return rows > 0 ? correct / rows : NAN; }
};

}  // namespace interplace::runs
