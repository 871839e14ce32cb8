#include "runtime/rank_optimizer.hpp"

#include <algorithm>
#include <cstring>
#include <span>

#include "interplace/kernels/error.hpp"
#include "interplace/runs/mpi_session.hpp"

namespace interplace::runs {

using kernels::Parameter;
using kernels::Tensor;

namespace {

std::unique_ptr<kernels::Optimizer> make_optimizer(const TrainConfig& config,
                                                   const std::vector<Parameter*>& trainable) {
  const auto lr = static_cast<float>(config.learning_rate);
  const auto wd = static_cast<float>(config.weight_decay);
  switch (config.optimizer) {
    case placement::OptimizerKind::adamw:
      return std::make_unique<kernels::AdamW>(
          trainable, kernels::AdamWOptions{.learning_rate = lr, .weight_decay = wd});
    case placement::OptimizerKind::sgd:
    case placement::OptimizerKind::sgd_momentum:
    case placement::OptimizerKind::sgd_nesterov: {
      // The momentum the cost model's state factor counts (one velocity copy) or none.
      const bool nesterov = config.optimizer == placement::OptimizerKind::sgd_nesterov;
      const float momentum = config.optimizer == placement::OptimizerKind::sgd ? 0.0f : 0.9f;
      return std::make_unique<kernels::Sgd>(
          trainable,
          kernels::SgdOptions{
              .learning_rate = lr, .momentum = momentum, .weight_decay = wd, .nesterov = nesterov});
    }
  }
  throw_invalid("unknown optimizer kind " + std::to_string(static_cast<int>(config.optimizer)));
}

}  // namespace

RankOptimizer::RankOptimizer(const TrainConfig& config, std::vector<Parameter*> trainable,
                             std::unique_ptr<TiedWeights> ties)
    : trainable_(std::move(trainable)), ties_(std::move(ties)) {
  if (config.weight_decay_all) {
    for (Parameter* param : trainable_) param->weight_decay = true;
  }
  optimizer_ = make_optimizer(config, trainable_);
}

void RankOptimizer::start_allreduce(Messenger& msg, const LossTally& loss,
                                    const LossTally& aux_loss) {
  if (msg.replicas() <= 1 || started_) return;
  post_allreduce(msg, loss, aux_loss);
}

void RankOptimizer::post_allreduce(Messenger& msg, const LossTally& loss,
                                   const LossTally& aux_loss) {
  started_ = true;
  reduced_.clear();
  gradients_.clear();
  std::vector<Parameter*> all = trainable_;
  for (Parameter* p : ties_->replicas()) all.push_back(p);
  // Whether a parameter has a gradient follows the schedule, the same on every replica.
  for (Parameter* p : all) {
    if (p->grad_is_zero || p->grad.numel() == 0) continue;
    reduced_.push_back(p);
    const Tensor host =
        p->grad.device() == kernels::Device::cpu ? p->grad : p->grad.to(kernels::Device::cpu);
    gradients_.insert(gradients_.end(), host.data(), host.data() + host.numel());
  }
  tallies_ = {loss.loss_sum,     loss.correct,
              loss.rows,         static_cast<double>(loss.micro_batches),
              aux_loss.loss_sum, aux_loss.correct,
              aux_loss.rows,     static_cast<double>(aux_loss.micro_batches)};
  const MPI_Comm peers = msg.replica_peers();
  constexpr size_t kMaxCount = size_t{1} << 30;  // MPI counts are ints
  for (size_t first = 0; first < gradients_.size(); first += kMaxCount) {
    const size_t count = std::min(kMaxCount, gradients_.size() - first);
    requests_.push_back(MPI_REQUEST_NULL);
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, gradients_.data() + first, static_cast<int>(count),
                             MPI_FLOAT, MPI_SUM, peers, &requests_.back()),
              "MPI_Iallreduce (gradients)");
  }
  requests_.push_back(MPI_REQUEST_NULL);
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, tallies_.data(), static_cast<int>(tallies_.size()),
                           MPI_DOUBLE, MPI_SUM, peers, &requests_.back()),
            "MPI_Iallreduce (losses)");
}

void RankOptimizer::step(Messenger& msg, LossTally& loss, LossTally& aux_loss) {
  if (msg.replicas() > 1) {
    if (!started_) post_allreduce(msg, loss, aux_loss);  // no backward work started it
    for (MPI_Request& request : requests_) {
      msg.wait(request, nullptr, "the gradient all-reduce over this stage's replicas");
    }
    requests_.clear();
    // The means: the gradients of the global mini-batch, the tallies of all of it.
    const float scale = 1.0f / static_cast<float>(msg.replicas());
    size_t at = 0;
    for (Parameter* p : reduced_) {
      const auto n = static_cast<size_t>(p->grad.numel());
      float* sums = gradients_.data() + at;
      for (size_t i = 0; i < n; ++i) sums[i] *= scale;
      if (p->grad.device() == kernels::Device::cpu) {
        std::memcpy(p->grad.data(), sums, n * sizeof(float));
      } else {
        p->grad.copy_from(Tensor::from_vector(p->grad.shape(), std::span<const float>(sums, n)));
      }
      at += n;
    }
    const std::vector<double>& t = tallies_;
    loss = {t[0], t[1], t[2], static_cast<int>(t[3])};
    aux_loss = {t[4], t[5], t[6], static_cast<int>(t[7])};
    started_ = false;
  }
  ties_->exchange_gradients(msg);
  optimizer_->step();
  optimizer_->zero_grad();
  ties_->exchange_values(msg);
}

void RankOptimizer::set_learning_rate(double learning_rate) {
  optimizer_->set_learning_rate(static_cast<float>(learning_rate));
}

int64_t RankOptimizer::parameter_bytes() const {
  int64_t bytes = 0;
  for (Parameter* p : trainable_) bytes += p->value.bytes();
  return bytes;
}

}  // namespace interplace::runs
