#include <numeric>

#include "dataset_support.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/random.hpp"

namespace interplace::runs::data {

uint64_t mix_seed(uint64_t seed, uint64_t stream, uint64_t index) {
  // Two rounds of splitmix64 keep nearby (seed, stream, index) triples unrelated.
  kernels::Rng first(seed ^ (stream * 0xD1B54A32D192ED03ull));
  kernels::Rng second(first.next_u64() ^ (index * 0x9E3779B97F4A7C15ull));
  return second.next_u64();
}

void check_train_request(const std::string& dataset, int64_t step, int64_t batch_size,
                         int64_t train_size) {
  if (step < 0)
    throw_invalid(dataset + ": train batch step must be >= 0, got " + std::to_string(step));
  if (batch_size < 1 || batch_size > train_size) {
    throw_invalid(dataset + ": batch size must be between 1 and the training split's " +
                  std::to_string(train_size) + " samples, got " + std::to_string(batch_size));
  }
}

void check_test_request(const std::string& dataset, int64_t first, int64_t count,
                        int64_t test_size) {
  if (first < 0 || count < 1 || first > test_size - count) {
    throw_invalid(dataset + ": test samples [" + std::to_string(first) + ", " +
                  std::to_string(first + count) + ") are not a non-empty range within the " +
                  std::to_string(test_size) + " test samples");
  }
}

std::vector<int64_t> seeded_permutation(int64_t size, uint64_t rng_seed) {
  std::vector<int64_t> permutation(static_cast<size_t>(size));
  std::iota(permutation.begin(), permutation.end(), int64_t{0});
  kernels::Rng rng(rng_seed);
  for (int64_t i = size - 1; i > 0; --i) {
    // Modulo bias is below 2^-40 for any data set that fits in memory.
    const auto j = static_cast<int64_t>(rng.next_u64() % static_cast<uint64_t>(i + 1));
    std::swap(permutation[static_cast<size_t>(i)], permutation[static_cast<size_t>(j)]);
  }
  return permutation;
}

std::vector<int64_t> EpochShuffle::batch(const std::string& dataset, int64_t step,
                                         int64_t batch_size) {
  check_train_request(dataset, step, batch_size, size_);
  const int64_t per_epoch = size_ / batch_size;
  const int64_t epoch = step / per_epoch;
  if (epoch != epoch_) {
    permutation_ =
        seeded_permutation(size_, mix_seed(seed_, /*stream=*/1, static_cast<uint64_t>(epoch)));
    epoch_ = epoch;
  }
  const auto begin = permutation_.begin() + (step % per_epoch) * batch_size;
  return {begin, begin + batch_size};
}

}  // namespace interplace::runs::data
