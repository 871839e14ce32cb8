// What the data sets share: their constructors (open_dataset picks one), seed mixing, the
// epoch-wise shuffle of the training split, and the argument checks of train_batch and
// test_batch.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "interplace/runs/datasets.hpp"

namespace interplace::runs::data {

// Nominal size of the synthetic training split: large enough that no run exhausts an epoch.
constexpr int64_t kSyntheticTrainSize = int64_t{1} << 20;

// The shape is already checked by open_dataset.
std::unique_ptr<Dataset> open_fashion_mnist(const std::filesystem::path& directory, uint64_t seed);
std::unique_ptr<Dataset> open_text_corpus(const std::filesystem::path& directory,
                                          int64_t sequence_length, uint64_t seed);
std::unique_ptr<Dataset> open_synthetic(const SampleShape& shape, uint64_t seed);

// A seed for one purpose (`stream`) and one index (epoch, step, sample) of a run's seed,
// so that every such sequence is independent and reproducible on its own.
uint64_t mix_seed(uint64_t seed, uint64_t stream, uint64_t index);

// 0..size-1 in the order of a Fisher-Yates shuffle driven by kernels::Rng(rng_seed): the
// same on every platform (std::shuffle's algorithm is the library's own).
std::vector<int64_t> seeded_permutation(int64_t size, uint64_t rng_seed);

// The training split's sample order. Epoch e is a seeded Fisher-Yates permutation of
// 0..size-1; step s reads positions [(s mod k) B, (s mod k) B + B) of epoch s div k, where
// k = floor(size / B) batches fit in an epoch. The last size mod B samples of each
// epoch's permutation are skipped (drop-last, as PyTorch's DataLoader(drop_last=True)),
// so a batch never straddles two epochs and every batch is full; they are different
// samples each epoch.
class EpochShuffle {
 public:
  EpochShuffle(int64_t size, uint64_t seed) : size_(size), seed_(seed) {}
  // The sample indices of mini-batch `step` (checked: step >= 0, 1 <= batch <= size).
  std::vector<int64_t> batch(const std::string& dataset, int64_t step, int64_t batch_size);
  static int64_t epoch_of(int64_t step, int64_t batch_size, int64_t size) {
    return step / (size / batch_size);
  }

 private:
  int64_t size_;
  uint64_t seed_;
  int64_t epoch_ = -1;  // the epoch whose permutation is cached
  std::vector<int64_t> permutation_;
};

// Throw invalid_input naming the data set for a negative step, a batch size outside
// 1..size, or a test range outside 0..test_size.
void check_train_request(const std::string& dataset, int64_t step, int64_t batch_size,
                         int64_t train_size);
void check_test_request(const std::string& dataset, int64_t first, int64_t count,
                        int64_t test_size);

}  // namespace interplace::runs::data
