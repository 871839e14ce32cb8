// What a flag left out means, one value for every subcommand, TrainConfig and sweep specs
// (docs/cli.md, after the synopsis), and the one rule that splits a mini-batch into
// micro-batches. Leaving --seed out of `order` and out of `train` must mean the same seed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/cost_model.hpp"

namespace interplace::runs {

// Samples per mini-batch (one optimiser step), as `train` has always defaulted to.
inline constexpr int64_t kDefaultBatchSize = 32;
// Seed of weights, data order, random orders and placers, profiled inputs.
inline constexpr uint64_t kDefaultSeed = 1;
// The profile path that asks the job to measure its own profile (cost_device =
// "profile:auto", train --profile auto; auto_profile.hpp).
inline constexpr const char* kAutoProfile = "auto";
// Momentum SGD (0.9), the default optimiser of train, sweeps and the cost model.
inline constexpr placement::OptimizerKind kDefaultOptimizer =
    placement::OptimizerKind::sgd_momentum;

// How the caller names the two numbers in messages: flags on the command line, keys in a
// sweep spec or a TrainConfig.
struct BatchNames {
  std::string_view batch_size = "batch_size";
  std::string_view micro_batches = "micro_batches";
  std::string_view data_parallel = "data_parallel";
};
inline constexpr BatchNames kBatchFlags{"--batch-size", "--micro-batches", "--data-parallel"};

// The most data-parallel replicas a configuration may ask for (a bound on the job's ranks,
// K x R, and on the simulator's ring).
inline constexpr int kMaxDataParallel = 65536;

// The samples in one micro-batch: batch_size / (data_parallel x micro_batches). Graphs,
// profiles and the cost model work per micro-batch; the optimiser steps once per
// mini-batch. With data parallelism (docs/strategies.md) batch_size is the global
// mini-batch: each of the data_parallel replicas trains a contiguous slice of
// batch_size / data_parallel samples in micro_batches micro-batches. Throws invalid_input
// (with a HINT) for counts < 1 or a batch size that does not divide evenly, rather than
// silently dropping the remainder samples.
inline int64_t micro_batch_size(int64_t batch_size, int micro_batches, const BatchNames& names = {},
                                int data_parallel = 1) {
  if (batch_size < 1) {
    throw_invalid(std::string(names.batch_size) + ": the batch size must be >= 1, got " +
                  std::to_string(batch_size));
  }
  if (micro_batches < 1) {
    throw_invalid(std::string(names.micro_batches) + " must be >= 1, got " +
                  std::to_string(micro_batches));
  }
  if (data_parallel < 1 || data_parallel > kMaxDataParallel) {
    throw_invalid(std::string(names.data_parallel) + " must be in 1.." +
                  std::to_string(kMaxDataParallel) + " (replicas of the pipeline), got " +
                  std::to_string(data_parallel));
  }
  if (data_parallel > 1) {
    const std::string b(names.batch_size), r(names.data_parallel), m(names.micro_batches);
    const int64_t step = static_cast<int64_t>(data_parallel) * micro_batches;
    if (batch_size % step != 0) {
      const int64_t below = batch_size / step * step;
      std::string hint = b + " " + std::to_string(below + step);
      if (below > 0) hint = b + " " + std::to_string(below) + " or " + hint;
      const std::string why =
          batch_size % data_parallel != 0
              ? "does not divide among " + std::to_string(data_parallel) + " replicas"
              : "gives each of the " + std::to_string(data_parallel) + " replicas " +
                    std::to_string(batch_size / data_parallel) +
                    " samples, which do not divide into " + std::to_string(micro_batches) +
                    " micro-batches";
      throw_invalid("batch size " + std::to_string(batch_size) + " " + why + " (" + b +
                    " is the global mini-batch, split evenly into " + r +
                    " replica slices and each slice into " + m + "). HINT: use a multiple of " + r +
                    " x " + m + " = " + std::to_string(step) + ", e.g. " + hint);
    }
    return batch_size / step;
  }
  if (batch_size % micro_batches != 0) {
    const int64_t below = batch_size / micro_batches * micro_batches;
    std::string hint = std::string(names.batch_size) + " " + std::to_string(below + micro_batches);
    if (below > 0)
      hint = std::string(names.batch_size) + " " + std::to_string(below) + " or " + hint;
    throw_invalid("batch size " + std::to_string(batch_size) + " does not divide into " +
                  std::to_string(micro_batches) + " micro-batches (" +
                  std::string(names.batch_size) + " is samples per mini-batch, split evenly " +
                  "into " + std::string(names.micro_batches) + "). HINT: use a multiple of " +
                  std::to_string(micro_batches) + ", e.g. " + hint);
  }
  return batch_size / micro_batches;
}

}  // namespace interplace::runs
