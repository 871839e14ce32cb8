// Synthetic data for throughput runs: nothing to read, every sample made from a seed of
// (run seed, split, sample index), so any batch can be made on its own and every rank
// makes the same one. Image-like inputs are standard normal; token inputs (sequence
// models, or SampleShape::input_vocab > 0) are uniform integers. Labels are uniform in
// 0..classes-1, one per sample or one per position.
#include "dataset_support.hpp"
#include "interplace/kernels/random.hpp"

namespace interplace::runs::data {
namespace {

// Nominal sizes: large enough that no run exhausts an epoch.
constexpr int64_t kTrainSize = kSyntheticTrainSize;
constexpr int64_t kTestSize = int64_t{1} << 16;

class Synthetic final : public Dataset {
 public:
  Synthetic(const SampleShape& shape, uint64_t seed)
      : shape_(shape), shuffle_(kTrainSize, seed), seed_(seed) {
    for (int64_t extent : shape.input) sample_elements_ *= extent;
    const bool tokens = shape.sequence || shape.input_vocab > 0;
    vocab_ = !tokens ? 0 : shape.input_vocab > 0 ? shape.input_vocab : shape.classes;
    label_count_ = shape.sequence ? shape.input.front() : 1;
  }

  std::string name() const override { return "synthetic"; }
  int64_t train_size() const override { return kTrainSize; }
  int64_t test_size() const override { return kTestSize; }

  Batch train_batch(int64_t step, int64_t batch_size) override {
    return make(/*split=*/0, shuffle_.batch(name(), step, batch_size));
  }

  Batch test_batch(int64_t first, int64_t count) override {
    check_test_request(name(), first, count, kTestSize);
    std::vector<int64_t> indices(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) indices[static_cast<size_t>(i)] = first + i;
    return make(/*split=*/1, indices);
  }

 private:
  Batch make(uint64_t split, const std::vector<int64_t>& indices) const {
    const auto count = static_cast<int64_t>(indices.size());
    kernels::Shape input_shape{count};
    input_shape.insert(input_shape.end(), shape_.input.begin(), shape_.input.end());
    Batch batch{kernels::Tensor(input_shape), shape_.sequence
                                                  ? kernels::Tensor({count, label_count_})
                                                  : kernels::Tensor({count})};
    const auto classes = static_cast<uint64_t>(shape_.classes);
    for (int64_t b = 0; b < count; ++b) {
      kernels::Rng rng(
          mix_seed(seed_, 3 + split, static_cast<uint64_t>(indices[static_cast<size_t>(b)])));
      float* inputs = batch.inputs.data() + b * sample_elements_;
      if (vocab_ > 0) {
        for (int64_t i = 0; i < sample_elements_; ++i) {
          inputs[i] = static_cast<float>(rng.next_u64() % static_cast<uint64_t>(vocab_));
        }
      } else {
        for (int64_t i = 0; i < sample_elements_; ++i) inputs[i] = rng.normal(0.0f, 1.0f);
      }
      float* labels = batch.labels.data() + b * label_count_;
      for (int64_t i = 0; i < label_count_; ++i) {
        labels[i] = static_cast<float>(rng.next_u64() % classes);
      }
    }
    return batch;
  }

  SampleShape shape_;
  EpochShuffle shuffle_;
  uint64_t seed_;
  int64_t sample_elements_ = 1;
  int64_t vocab_ = 0;
  int64_t label_count_ = 1;
};

}  // namespace

std::unique_ptr<Dataset> open_synthetic(const SampleShape& shape, uint64_t seed) {
  return std::make_unique<Synthetic>(shape, seed);
}

}  // namespace interplace::runs::data
