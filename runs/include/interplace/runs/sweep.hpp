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
#include <vector>

#include "interplace/runs/results_file.hpp"
#include "interplace/runs/sweep_spec.hpp"
#include "interplace/runs/training.hpp"

namespace interplace::runs {

// What runs a configuration: plan_training and train, or a test's replacement.
struct SweepRunner {
  std::function<TrainPlan(const TrainConfig&)> plan;
  std::function<TrainResult(const TrainPlan&, MPI_Comm)> train;
  // For profile_path "auto": measures the configuration's profile at `threads` CPU threads,
  // collective over `comm` (every rank of the job); the profile file text on rank 0
  // (auto_profile.hpp). Throws on rank 0 when measuring failed there.
  std::function<std::string(const TrainConfig&, int threads, MPI_Comm comm)> profile;
};
SweepRunner runtime_runner();  // the real runtime (training.hpp)

// The configurations a run takes: those whose id or display name (TrainConfig::display_name,
// "resnet20 topo contiguous K=2 global/gpipe M=2 B=4") contains a match of `filter`
// (ECMAScript regular expression; "" takes every one), then of those every shard.count-th
// setting from shard.index (all repeats of a setting go to the same shard; without repeats
// and filter: index % count == shard.index). Throws invalid_input for a bad expression.
std::vector<const SweepConfig*> select_configs(const SweepSpec& spec, const std::string& filter,
                                               const Shard& shard);

// The order a sweep runs its configurations in. With one run per setting, the spec's order.
// With repeats, round by round: every setting's repeat 0, then every repeat 1, ..., each
// round in its own shuffled order (a hash of the setting's id and the round, so the order is
// the same on every rank and in every rerun), so that slow drift of a machine (thermals, a
// noisy neighbour) spreads over all settings instead of biasing the ones measured last.
std::vector<const SweepConfig*> interleave_repeats(std::vector<const SweepConfig*> configs);

// Exit statuses of `interplace sweep` besides 0, 1 (runtime error) and 2 (invalid input,
// or a dry run in which no configuration would run).
constexpr int kExitInterrupted = 3;  // stopped by SIGTERM, SIGINT or SIGUSR1; resumable

struct SweepOptions {
  std::string out;
  Shard shard;
  bool resume = false;
  std::string filter;  // select_configs; recorded in the file, --resume requires the same
  // Printed by rank 0 when a signal stops the sweep: "interplace sweep ... --resume".
  std::string resume_command;
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
  int stop_signal = 0;    // the signal that stopped the sweep early (SIGUSR1 only: the
                          // others end the process, see run_sweep), 0 when it ran through
};

// What a dry run finds for one configuration: the same planning as the run (graph, order,
// placement, memory check, cost profile, data set) on this process, and the rank check.
struct PlannedConfig {
  const SweepConfig* config = nullptr;
  std::string outcome;  // "run", "skip" or "fail" (what the sweep would record)
  std::string reason;   // empty for "run"
  // "run" only: the plan's simulated step (one rank per device, on the cost model the plan
  // uses; a profile:auto on its preset), the steps it trains (warm-up included, epochs
  // resolved) and the cost model's name.
  double predicted_step_s = 0.0;
  int64_t steps = 0;
  std::string cost_model;
  double predicted_train_s() const {
    return steps == 0 ? 0.0 : predicted_step_s * static_cast<double>(steps);
  }
};
// Plans every configuration of `selected` (of `spec`) with `runner.plan`, one after the
// other; `ranks` is the job's rank count ("needs K ranks, the job has N"). No MPI. A
// simulate-only configuration trains nothing (steps 0); one of the rl placer is planned on
// a contiguous placement instead of training the policy (predicted_step_s NaN), and one
// whose order repeats an earlier order's node sequence would be skipped, as the run does.
std::vector<PlannedConfig> plan_sweep(const SweepSpec& spec,
                                      const std::vector<const SweepConfig*>& selected,
                                      const SweepRunner& runner, int ranks);

// Collective over `world`. Progress lines go to `progress` on rank 0. Throws (on every
// rank alike) when the result file cannot be created or written; configurations that
// fail or cannot run are recorded and the sweep goes on.
//
// Signals (handlers installed for the duration): SIGUSR1 (Slurm's warning signal) finishes
// the configuration in flight, then every rank stops at the next configuration boundary,
// where the ranks agree on it (an allreduce of the flag before each configuration), and
// run_sweep returns with stop_signal set. SIGTERM and SIGINT abandon the configuration in
// flight: each rank leaves at once (rank 0 first prints what the file keeps and how to
// resume) with exit status kExitInterrupted, except while rank 0 writes the file: there
// it leaves right after the write. A configuration is thus in the file whole or not at all
// (appends are copy, add, rename besides).
SweepSummary run_sweep(const SweepSpec& spec, const SweepOptions& options,
                       const SweepRunner& runner, MPI_Comm world, std::ostream& progress);

}  // namespace interplace::runs
