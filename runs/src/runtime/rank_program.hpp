// Each rank's program for one mini-batch: its action list of the plan's schedule
// (TrainPlan::schedule, the object the simulator simulates), with the points where a
// micro-batch's saved state may be dropped.
#pragma once

#include <utility>
#include <vector>

#include "interplace/placement/schedule.hpp"
#include "interplace/runs/training.hpp"

namespace interplace::runs {

struct RankProgram {
  std::vector<placement::Action> actions;  // plan.schedule.stage_actions[rank]
  // Per action: micro-batches it is the last to use on this rank. Their saved activations
  // and gradients are dropped after it, so 1F1B and local schedules hold only the
  // micro-batches in flight (GPipe holds all M until the backward passes).
  std::vector<std::vector<int>> release;
  // Interleaved 1F1B (virtual stages > 1): per action, the (micro-batch, chunk) pairs it
  // is the last to use, other than the micro-batch's last use of all (`release`): the
  // chunk's saved state goes then, as the simulator frees it, instead of with the
  // micro-batch's last chunk. Empty lists otherwise.
  std::vector<std::vector<std::pair<int, int>>> release_chunk;
  // Data parallelism: the action after which the rank's gradients are final for the step
  // (its last backward that computes parameter gradients, weight pass or auxiliary
  // backward), where their all-reduce over the replicas starts; -1: none.
  int gradients_final_after = -1;
  int optimizer_step_at = -1;  // the index of the optimiser step action; -1: none
  bool has_aux_head = false;
  std::vector<bool> stages_with_head;  // per rank
};

RankProgram rank_program(const TrainPlan& plan, int rank);

// The actions of one forward-only pass of micro-batch 0 (evaluation): the program's
// activation receives, forward and activation sends of that micro-batch, in order.
std::vector<placement::Action> forward_only_actions(const RankProgram& program);

}  // namespace interplace::runs
