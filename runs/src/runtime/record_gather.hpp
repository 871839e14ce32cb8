// One rank's records of a run, and their gathering into the TrainResult on rank 0.
#pragma once

#include <string>
#include <vector>

#include "interplace/runs/training.hpp"
#include "runtime/messenger.hpp"

namespace interplace::runs {

struct LocalRecords {
  std::vector<RankStepRecord> ranks;                           // per step, this rank
  std::vector<double> loss, accuracy, aux_loss, aux_accuracy;  // per step; NaN: not here
  std::vector<placement::TimelineEvent> timeline;
  std::vector<bool> stages_with_head;
  double eval_loss = 0.0, eval_accuracy = 0.0;  // NaN where not computed
  std::string device_name;
};

// One step of one rank as kStepFields numbers (its RankStepRecord's columns in
// kRankStepFields' order, then loss, accuracy, aux loss, aux accuracy), and the assembly of
// such rows into a StepRecord: rank records added in rank order, the loss from the first
// rank that has one.
constexpr int kStepFields = static_cast<int>(kRankStepFieldCount) + 4;
std::vector<double> pack_step(const LocalRecords& local, size_t step);
StepRecord new_step_record(int step, const TrainPlan& plan);
void add_rank_to_step(StepRecord& step, int stage, const double* fields);

// Collective over the messenger's communicator (call it after a barrier every rank has
// passed). Rank 0 gets everything; the others get their own records only.
TrainResult gather_records(const LocalRecords& local, const TrainPlan& plan, Messenger& msg);

}  // namespace interplace::runs
