// A validation split held out of the training split (datasets.hpp, with_validation_split):
// a run that chooses its epoch count or compares strategies by accuracy during training
// reads held-out training samples, not the test split it reports at the end.
#include <cmath>

#include "dataset_support.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/runs/datasets.hpp"

namespace interplace::runs {

Batch Dataset::validation_batch(int64_t /*first*/, int64_t /*count*/) {
  throw_invalid("data set " + name() +
                " has no validation split. HINT: hold one out with validation_fraction "
                "(train --validation-fraction)");
}

namespace {

// The split does not depend on the run's seed: every run of a study, whatever its seed or
// strategy, validates on the same samples and trains on the same others.
constexpr uint64_t kSplitSeed = 0;
constexpr uint64_t kSplitStream = 7;  // mix_seed's: 1 shuffle, 2 text, 3-4 synthetic, 11 crop-flip

class ValidationSplit final : public Dataset {
 public:
  ValidationSplit(std::unique_ptr<Dataset> data, int64_t held_out, uint64_t seed)
      : data_(std::move(data)),
        training_(data_->train_size() - held_out),
        order_(data::seeded_permutation(data_->train_size(),
                                        data::mix_seed(kSplitSeed, kSplitStream, 0))),
        shuffle_(training_, seed) {}
  std::string name() const override { return data_->name(); }
  int64_t train_size() const override { return training_; }
  int64_t test_size() const override { return data_->test_size(); }
  float background() const override { return data_->background(); }
  Batch train_batch(int64_t step, int64_t batch_size) override {
    return train_samples(shuffle_.batch(name(), step, batch_size));
  }
  Batch train_samples(const std::vector<int64_t>& indices) override {
    std::vector<int64_t> mapped;
    mapped.reserve(indices.size());
    for (const int64_t i : indices) {
      if (i < 0 || i >= training_) {
        throw_invalid(name() + ": training sample " + std::to_string(i) + " is not within the " +
                      std::to_string(training_) +
                      " samples left for training by the validation split");
      }
      mapped.push_back(order_[static_cast<size_t>(i)]);
    }
    return data_->train_samples(mapped);
  }
  Batch test_batch(int64_t first, int64_t count) override {
    return data_->test_batch(first, count);
  }
  int64_t validation_size() const override {
    return static_cast<int64_t>(order_.size()) - training_;
  }
  Batch validation_batch(int64_t first, int64_t count) override {
    if (first < 0 || count < 1 || first > validation_size() - count) {
      throw_invalid(name() + ": validation samples [" + std::to_string(first) + ", " +
                    std::to_string(first + count) + ") are not a non-empty range within the " +
                    std::to_string(validation_size()) + " validation samples");
    }
    const auto begin = order_.begin() + training_ + first;
    return data_->train_samples({begin, begin + count});
  }

 private:
  std::unique_ptr<Dataset> data_;
  int64_t training_;
  std::vector<int64_t> order_;  // its first `training_` entries train, the rest validate
  data::EpochShuffle shuffle_;
};

}  // namespace

int64_t validation_held_out(int64_t train_size, double fraction) {
  return static_cast<int64_t>(std::floor(static_cast<double>(train_size) * fraction));
}

void check_validation_split(const std::string& dataset, double fraction) {
  if (!std::isfinite(fraction) || fraction < 0.0 || fraction > 0.5) {
    throw_invalid(
        "validation_fraction must be in [0, 0.5] (0: no validation split; the "
        "interlocking study holds out 0.1), got " +
        std::to_string(fraction));
  }
  if (fraction == 0.0) return;
  if (dataset != "fashion-mnist") {
    throw_invalid("validation_fraction: data set " + dataset +
                  " takes no validation split; only fashion-mnist has indexed training samples");
  }
  if (validation_held_out(dataset_train_size(dataset), fraction) < 1) {
    throw_invalid("validation_fraction " + std::to_string(fraction) + " holds out no sample of " +
                  dataset + "'s " + std::to_string(dataset_train_size(dataset)) +
                  " training samples");
  }
}

std::unique_ptr<Dataset> with_validation_split(std::unique_ptr<Dataset> data, double fraction,
                                               uint64_t seed) {
  if (fraction == 0.0) return data;
  if (!std::isfinite(fraction) || fraction < 0.0 || fraction > 0.5) {
    throw_invalid("validation_fraction must be in [0, 0.5], got " + std::to_string(fraction));
  }
  const int64_t held_out = validation_held_out(data->train_size(), fraction);
  if (held_out < 1) {
    throw_invalid("validation_fraction " + std::to_string(fraction) + " holds out no sample of " +
                  std::to_string(data->train_size()));
  }
  return std::make_unique<ValidationSplit>(std::move(data), held_out, seed);
}

}  // namespace interplace::runs
