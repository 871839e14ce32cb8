// Each rank's program for one mini-batch: the units of work of rank_model.hpp in order.
#pragma once

#include <vector>

#include "interplace/runs/training.hpp"
#include "runtime/rank_model.hpp"

namespace interplace::runs {

struct ProgramStep {
  enum class Kind { forward, aux_forward, aux_backward, backward, optimizer } kind;
  BackwardPass pass;  // micro_batch for every kind but optimizer
  // Micro-batches this step is the last to use on this rank: their saved activations
  // are dropped after it, so 1F1B and local schedules hold only the micro-batches in
  // flight (GPipe holds all M until the backward passes).
  std::vector<int> release = {};
};

struct RankProgram {
  std::vector<ProgramStep> steps;
  bool has_aux_head = false;
  std::vector<bool> stages_with_head;  // per rank
};

// On a stage chain: the rank's action list of build_schedule (schedule.hpp), the one the
// simulator runs. Elsewhere (global strategy only): GPipe at node level, which also
// stands in for 1F1B there (1F1B is defined on stages).
RankProgram rank_program(const TrainPlan& plan, int rank);

}  // namespace interplace::runs
