// Training subsets (datasets.hpp, with_train_subset): the batches of a subset of n samples
// hold only samples 0..n-1, each exactly once per epoch (drop-last aside), reshuffled per
// epoch and reproducible by seed; test batches pass through; bad counts and data sets
// without indexed samples are refused. Validation splits (with_validation_split): disjoint
// from what trains, the same samples whatever the run's seed, unaugmented, and composed
// with a subset and augmentation as train() composes them.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/runs/datasets.hpp"

namespace interplace::runs {
namespace {

// Sample i has input value i and label i mod 10, so a batch names its samples.
class Indexed final : public Dataset {
 public:
  explicit Indexed(bool indexable = true) : indexable_(indexable) {}
  std::string name() const override { return "indexed"; }
  int64_t train_size() const override { return 1000; }
  int64_t test_size() const override { return 100; }
  Batch train_batch(int64_t /*step*/, int64_t /*batch_size*/) override {
    ADD_FAILURE() << "a subset must not draw the whole split's batches";
    return {};
  }
  Batch train_samples(const std::vector<int64_t>& indices) override {
    if (!indexable_) return Dataset::train_samples(indices);
    return make(indices, 0.0f);
  }
  Batch test_batch(int64_t first, int64_t count) override {
    std::vector<int64_t> indices;
    for (int64_t i = 0; i < count; ++i) indices.push_back(first + i);
    return make(indices, 10000.0f);
  }

 private:
  static Batch make(const std::vector<int64_t>& indices, float offset) {
    const auto n = static_cast<int64_t>(indices.size());
    Batch b{kernels::Tensor({n, 1}), kernels::Tensor({n})};
    for (int64_t i = 0; i < n; ++i) {
      b.inputs.data()[i] = offset + static_cast<float>(indices[static_cast<size_t>(i)]);
      b.labels.data()[i] = static_cast<float>(indices[static_cast<size_t>(i)] % 10);
    }
    return b;
  }
  bool indexable_;
};

std::vector<int64_t> samples_of(const Batch& b) {
  std::vector<int64_t> out;
  for (const float v : b.inputs.to_vector()) out.push_back(static_cast<int64_t>(v));
  return out;
}

TEST(TrainSubset, EachEpochCoversTheFirstSamplesOnce) {
  auto data = with_train_subset(std::make_unique<Indexed>(), 100, 3);
  EXPECT_EQ(data->train_size(), 100);
  EXPECT_EQ(data->test_size(), 100);
  // Batch 30: 3 batches per epoch, the last 10 of each epoch's permutation dropped.
  std::vector<std::vector<int64_t>> epochs(2);
  for (int64_t step = 0; step < 6; ++step) {
    for (const int64_t s : samples_of(data->train_batch(step, 30))) {
      EXPECT_GE(s, 0);
      EXPECT_LT(s, 100);
      epochs[static_cast<size_t>(step / 3)].push_back(s);
    }
  }
  for (const auto& epoch : epochs) {
    EXPECT_EQ(epoch.size(), 90u);
    EXPECT_EQ(std::set<int64_t>(epoch.begin(), epoch.end()).size(), 90u);  // no repeats
  }
  EXPECT_NE(epochs[0], epochs[1]);  // reshuffled
}

TEST(TrainSubset, SameSeedSameBatchesTestBatchesPassThrough) {
  auto a = with_train_subset(std::make_unique<Indexed>(), 64, 7);
  auto b = with_train_subset(std::make_unique<Indexed>(), 64, 7);
  auto c = with_train_subset(std::make_unique<Indexed>(), 64, 8);
  EXPECT_EQ(samples_of(a->train_batch(5, 16)), samples_of(b->train_batch(5, 16)));
  EXPECT_NE(samples_of(a->train_batch(5, 16)), samples_of(c->train_batch(5, 16)));
  EXPECT_EQ(
      samples_of(a->test_batch(90, 10)),
      (std::vector<int64_t>{10090, 10091, 10092, 10093, 10094, 10095, 10096, 10097, 10098, 10099}));
}

TEST(TrainSubset, ZeroIsTheWholeSplitBadCountsAreRefused) {
  auto data = std::make_unique<Indexed>();
  Dataset* raw = data.get();
  EXPECT_EQ(with_train_subset(std::move(data), 0, 1).get(), raw);
  EXPECT_THROW(with_train_subset(std::make_unique<Indexed>(), -1, 1), Error);
  EXPECT_THROW(with_train_subset(std::make_unique<Indexed>(), 1001, 1), Error);
  auto subset = with_train_subset(std::make_unique<Indexed>(), 10, 1);
  EXPECT_THROW(subset->train_batch(0, 11), Error);  // a batch larger than the subset
  EXPECT_THROW(subset->train_samples({10}), Error);
  // A data set without indexed samples (the text corpus) refuses when a batch is drawn.
  auto unindexed = with_train_subset(std::make_unique<Indexed>(false), 10, 1);
  EXPECT_THROW(unindexed->train_batch(0, 5), Error);
}

TEST(TrainSubset, CheckNamesTheDataSets) {
  EXPECT_NO_THROW(check_train_subset("fashion-mnist", 0));
  EXPECT_NO_THROW(check_train_subset("text", 0));
  EXPECT_NO_THROW(check_train_subset("fashion-mnist", 60000));
  EXPECT_THROW(check_train_subset("fashion-mnist", 60001), Error);
  EXPECT_THROW(check_train_subset("fashion-mnist", -5), Error);
  EXPECT_THROW(check_train_subset("text", 100), Error);
  EXPECT_THROW(check_train_subset("synthetic", 100), Error);
}

std::vector<int64_t> validation_of(Dataset& data) {
  return samples_of(data.validation_batch(0, data.validation_size()));
}

TEST(ValidationSplit, HoldsOutTheFloorAndTrainsOnlyOnTheRest) {
  auto data = with_validation_split(std::make_unique<Indexed>(), 0.1, 3);
  EXPECT_EQ(data->validation_size(), 100);  // floor(1000 x 0.1)
  EXPECT_EQ(data->train_size(), 900);
  EXPECT_EQ(with_validation_split(std::make_unique<Indexed>(), 0.0999, 3)->validation_size(), 99);
  const std::vector<int64_t> held = validation_of(*data);
  const std::set<int64_t> held_set(held.begin(), held.end());
  EXPECT_EQ(held_set.size(), 100u);
  // A random choice, not the first or last samples of the file.
  EXPECT_LT(*held_set.begin(), 100);
  EXPECT_GT(*held_set.rbegin(), 900);
  // Two epochs of batches of 100: 9 per epoch, every training sample once, none held out.
  std::vector<std::set<int64_t>> epochs(2);
  for (int64_t step = 0; step < 18; ++step) {
    for (const int64_t s : samples_of(data->train_batch(step, 100))) {
      EXPECT_FALSE(held_set.contains(s)) << "step " << step << " trains on held-out " << s;
      epochs[static_cast<size_t>(step / 9)].insert(s);
    }
  }
  for (const auto& epoch : epochs) EXPECT_EQ(epoch.size(), 900u);
  EXPECT_EQ(samples_of(data->test_batch(0, 2)), (std::vector<int64_t>{10000, 10001}));
}

TEST(ValidationSplit, TheSameSamplesForEverySeedTheBatchesBySeed) {
  auto a = with_validation_split(std::make_unique<Indexed>(), 0.2, 1);
  auto b = with_validation_split(std::make_unique<Indexed>(), 0.2, 2);
  auto c = with_validation_split(std::make_unique<Indexed>(), 0.2, 1);
  EXPECT_EQ(validation_of(*a), validation_of(*b));
  EXPECT_NE(samples_of(a->train_batch(0, 50)), samples_of(b->train_batch(0, 50)));
  EXPECT_EQ(samples_of(a->train_batch(3, 50)), samples_of(c->train_batch(3, 50)));
}

TEST(ValidationSplit, ComposesWithASubsetAndAugmentationAsTrainDoes) {
  auto split = with_validation_split(std::make_unique<Indexed>(), 0.1, 4);
  const std::vector<int64_t> held = validation_of(*split);
  // The subset is the first 50 of what is left; the validation split passes through it and
  // through augmentation (which only the image data sets' training batches can take).
  auto subset = with_train_subset(std::move(split), 50, 4);
  EXPECT_EQ(subset->train_size(), 50);
  EXPECT_EQ(subset->validation_size(), 100);
  for (const int64_t s : samples_of(subset->train_batch(0, 50))) {
    EXPECT_EQ(std::count(held.begin(), held.end(), s), 0);
  }
  auto data = with_augmentation(std::move(subset), Augmentation::crop_flip, 4);
  EXPECT_EQ(data->validation_size(), 100);
  EXPECT_EQ(validation_of(*data), held);  // unaugmented: the values are the sample numbers
}

TEST(ValidationSplit, BadFractionsRangesAndDataSetsAreRefused) {
  auto data = std::make_unique<Indexed>();
  Dataset* raw = data.get();
  EXPECT_EQ(with_validation_split(std::move(data), 0.0, 1).get(), raw);
  EXPECT_THROW(with_validation_split(std::make_unique<Indexed>(), 0.6, 1), Error);
  EXPECT_THROW(with_validation_split(std::make_unique<Indexed>(), -0.1, 1), Error);
  EXPECT_THROW(with_validation_split(std::make_unique<Indexed>(), 0.0005, 1), Error);  // 0 held
  auto split = with_validation_split(std::make_unique<Indexed>(), 0.1, 1);
  EXPECT_THROW(split->validation_batch(95, 10), Error);
  EXPECT_THROW(split->validation_batch(0, 0), Error);
  EXPECT_THROW(split->train_samples({900}), Error);
  EXPECT_THROW(Indexed().validation_batch(0, 1), Error);  // no split held out
  EXPECT_NO_THROW(check_validation_split("fashion-mnist", 0.1));
  EXPECT_NO_THROW(check_validation_split("text", 0.0));
  EXPECT_THROW(check_validation_split("text", 0.1), Error);
  EXPECT_THROW(check_validation_split("fashion-mnist", 0.51), Error);
  EXPECT_THROW(check_validation_split("fashion-mnist", 1e-6), Error);  // holds out nothing
}

}  // namespace
}  // namespace interplace::runs
