// The auxiliary head on one rank's boundary tensor (local and interlocking strategies,
// docs/strategies.md): its layers, what each micro-batch saved in them, and the gradient it
// hands back to the boundary. Roughly, for micro-batch m:
//   forward:  logits = head(outputs[m][boundary]); gradient[m] = loss'(logits)
//   backward: gradient[m] = head'(gradient[m])   (now the gradient at the boundary tensor)
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "interplace/kernels/layer.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/runs/training.hpp"

namespace interplace::runs {

class AuxHeadModel {
 public:
  // The loss of a micro-batch's logits into its tally; its gradient (undefined when not
  // training).
  using Loss = std::function<kernels::Tensor(const kernels::Tensor& logits, int micro_batch,
                                             kernels::Context& ctx)>;

  // Builds the head of `rank`'s boundary tensor with the configuration's widths and seed,
  // on `device`; its parameters are appended to `trainable`.
  AuxHeadModel(const TrainPlan& plan, int rank, kernels::Device device,
               std::vector<kernels::Parameter*>& trainable);

  placement::NodeId boundary() const { return boundary_; }
  void forward(int micro_batch, const kernels::Tensor& boundary_output, const Loss& loss);
  void backward(int micro_batch);
  // After backward: the gradient at the boundary tensor.
  const kernels::Tensor& gradient(int micro_batch) const {
    return gradient_[static_cast<size_t>(micro_batch)];
  }
  void reset(int micro_batches);
  void release(int micro_batch);
  void set_training(bool training);

 private:
  placement::NodeId boundary_ = -1;
  std::vector<std::unique_ptr<kernels::Layer>> layers_;
  std::vector<std::vector<kernels::Context>> contexts_;  // [micro-batch][layer]
  std::vector<kernels::Context> loss_contexts_;          // [micro-batch]
  std::vector<kernels::Tensor> gradient_;                // [micro-batch]
};

}  // namespace interplace::runs
