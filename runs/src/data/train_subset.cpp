// A fixed training subset of a data set (datasets.hpp, with_train_subset): runs scaled to a
// small machine train for whole epochs over fewer samples rather than for a fraction of
// an epoch, so that epoch-based schedules and evaluations keep their meaning.
#include "dataset_support.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/runs/datasets.hpp"

namespace interplace::runs {

Batch Dataset::train_samples(const std::vector<int64_t>& /*indices*/) {
  throw_invalid("data set " + name() +
                " has no indexed training samples, so it takes no training subset "
                "(train_samples); only fashion-mnist has");
}

namespace {

class TrainSubset final : public Dataset {
 public:
  TrainSubset(std::unique_ptr<Dataset> data, int64_t samples, uint64_t seed)
      : data_(std::move(data)), samples_(samples), shuffle_(samples, seed) {}
  std::string name() const override { return data_->name(); }
  int64_t train_size() const override { return samples_; }
  int64_t test_size() const override { return data_->test_size(); }
  float background() const override { return data_->background(); }
  Batch train_batch(int64_t step, int64_t batch_size) override {
    return data_->train_samples(shuffle_.batch(name(), step, batch_size));
  }
  Batch train_samples(const std::vector<int64_t>& indices) override {
    for (const int64_t i : indices) {
      if (i < 0 || i >= samples_) {
        throw_invalid(name() + ": training sample " + std::to_string(i) +
                      " is not within the subset's " + std::to_string(samples_) + " samples");
      }
    }
    return data_->train_samples(indices);
  }
  Batch test_batch(int64_t first, int64_t count) override {
    return data_->test_batch(first, count);
  }
  int64_t validation_size() const override { return data_->validation_size(); }
  Batch validation_batch(int64_t first, int64_t count) override {
    return data_->validation_batch(first, count);
  }

 private:
  std::unique_ptr<Dataset> data_;
  int64_t samples_;
  data::EpochShuffle shuffle_;
};

}  // namespace

void check_train_subset(const std::string& dataset, int64_t train_samples) {
  if (train_samples < 0) {
    throw_invalid("train_samples must be >= 0 (0: the whole training split), got " +
                  std::to_string(train_samples));
  }
  if (train_samples == 0) return;
  if (dataset != "fashion-mnist") {
    throw_invalid("train_samples: data set " + dataset +
                  " takes no training subset; only fashion-mnist has indexed training samples");
  }
  const int64_t size = dataset_train_size(dataset);
  if (train_samples > size) {
    throw_invalid("train_samples " + std::to_string(train_samples) + " is more than the " +
                  std::to_string(size) + " training samples of " + dataset);
  }
}

std::unique_ptr<Dataset> with_train_subset(std::unique_ptr<Dataset> data, int64_t train_samples,
                                           uint64_t seed) {
  if (train_samples == 0) return data;
  if (train_samples < 0 || train_samples > data->train_size()) {
    throw_invalid("train_samples must be in 0.." + std::to_string(data->train_size()) + ", got " +
                  std::to_string(train_samples));
  }
  return std::make_unique<TrainSubset>(std::move(data), train_samples, seed);
}

}  // namespace interplace::runs
