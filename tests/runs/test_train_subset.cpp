// Training subsets (datasets.hpp, with_train_subset): the batches of a subset of n samples
// hold only samples 0..n-1, each exactly once per epoch (drop-last aside), reshuffled per
// epoch and reproducible by seed; test batches pass through; bad counts and data sets
// without indexed samples are refused.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace interplace::runs
