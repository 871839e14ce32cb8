// The training recipe beyond the optimiser's constants: the learning-rate schedule, epochs
// as the unit of a run's length, and the epochs at which the full test set is evaluated
// (docs/cli.md, "Training recipe"). Everything here is a pure function of the
// configuration, so every rank, the simulator and the result writer agree on it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace interplace::runs {

// constant: the base rate at every step (what runs did before schedules existed).
// step: multiplied by lr_decay at each milestone, as PyTorch's MultiStepLR.
// cosine: half a cosine from the base rate to 0 over the steps after the warm-up, as
//         PyTorch's CosineAnnealingLR(T_max = those steps, eta_min = 0) stepped per step.
enum class LrScheduleKind { constant, step, cosine };
enum class MilestoneUnit { steps, epochs };

LrScheduleKind lr_schedule_by_name(std::string_view name);  // invalid_input listing the names
std::string to_string(LrScheduleKind kind);
std::vector<std::string> lr_schedule_names();
MilestoneUnit milestone_unit_by_name(std::string_view name);
std::string to_string(MilestoneUnit unit);
std::vector<std::string> milestone_unit_names();  // "steps", "epochs"

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::constant;
  std::vector<double> milestones;  // ascending, > 0, in `unit`
  MilestoneUnit unit = MilestoneUnit::steps;
  double decay = 0.1;       // factor per milestone (step schedule)
  int warmup_steps = 0;     // linear warm-up: step s < W runs at base * (s + 1) / W
  bool is_default() const;  // constant rate, no warm-up
};

// "91,136,182" -> {91, 136, 182}; empty text -> {}. Throws invalid_input naming `key` for
// a value that is not a finite number > 0 or a list that is not strictly ascending.
std::vector<double> parse_number_list(const std::string& key, const std::string& text);
std::string number_list_text(const std::vector<double>& values);  // shortest round-trip

// Checks the schedule on its own (decay in (0, 1], warm-up >= 0, milestones with the step
// schedule only): invalid_input with the reason.
void check_lr_schedule(const LrSchedule& schedule);

// The learning rate of training step `step` (0-based, warm-up steps included) of a run of
// `total_steps`; `steps_per_epoch` converts epoch milestones (0: unknown, then epoch
// milestones are refused by check_epoch_units). Step schedule: base * decay^n with n the
// milestones m for which step >= ceil(m * steps_per_epoch) (epochs) or step >= m (steps):
// with integer epoch milestones that is MultiStepLR stepped once per epoch.
double learning_rate_at(const LrSchedule& schedule, double base, int step, int total_steps,
                        int64_t steps_per_epoch);

// Steps per epoch of the training split: floor(train_size / batch_size), since the data
// path drops the last partial batch of each epoch (datasets.hpp).
int64_t steps_per_epoch(int64_t train_size, int64_t batch_size);
// Training steps (warm-up included) that cover `epochs`: ceil(epochs * steps_per_epoch).
int64_t steps_for_epochs(double epochs, int64_t steps_per_epoch);
// The step after which epoch `epoch` has been trained (0-based step index), for
// eval_epochs: steps_for_epochs(epoch) - 1.
int64_t last_step_of_epoch(double epoch, int64_t steps_per_epoch);

}  // namespace interplace::runs
