// The sweep driver (`interplace sweep`): every rank of the job walks the spec's
// configurations in order; a configuration with K devices trains on world ranks 0..K-1
// through a sub-communicator while the others wait; rank 0 appends each finished
// configuration to the result file. Every rank agrees on every status, so that one
// configuration failing, or being skipped, never desynchronises the job.
#pragma once

#include <mpi.h>

#include <functional>
#include <iosfwd>
#include <string>

#include "interplace/runs/sweep_spec.hpp"
#include "interplace/runs/training.hpp"

namespace interplace::runs {

// What runs a configuration: plan_training and train, or a test's replacement.
struct SweepRunner {
  std::function<TrainPlan(const TrainConfig&)> plan;
  std::function<TrainResult(const TrainPlan&, MPI_Comm)> train;
};
SweepRunner runtime_runner();  // the real runtime (training.hpp)

struct Shard {
  int index = 0;
  int count = 1;
  std::string str() const { return std::to_string(index) + "/" + std::to_string(count); }
  bool takes(int64_t config_index) const { return config_index % count == index; }
};
// "i/n" with 0 <= i < n; throws invalid_input otherwise.
Shard parse_shard(const std::string& text);

struct SweepOptions {
  std::string out;
  Shard shard;
  bool resume = false;
};

struct SweepSummary {
  int selected = 0;      // configurations of this shard
  int already_done = 0;  // found in the file by --resume
  int ok = 0;
  int failed = 0;
  int skipped = 0;
  int diverged = 0;  // a non-finite loss (kernels/failure.hpp)
  double wall_s = 0.0;
  double append_s = 0.0;  // rank 0: copy-add-rename time, summed over configurations
};

// Collective over `world`. Progress lines go to `progress` on rank 0. Throws (on every
// rank alike) when the result file cannot be created or written; configurations that
// fail or cannot run are recorded and the sweep goes on.
SweepSummary run_sweep(const SweepSpec& spec, const SweepOptions& options,
                       const SweepRunner& runner, MPI_Comm world, std::ostream& progress);

}  // namespace interplace::runs
