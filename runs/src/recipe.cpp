#include "interplace/runs/recipe.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <numbers>
#include <utility>

#include "interplace/kernels/error.hpp"

namespace interplace::runs {
namespace {

constexpr std::array<std::pair<LrScheduleKind, const char*>, 3> kScheduleNames = {{
    {LrScheduleKind::constant, "constant"},
    {LrScheduleKind::step, "step"},
    {LrScheduleKind::cosine, "cosine"},
}};

std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

}  // namespace

LrScheduleKind lr_schedule_by_name(std::string_view name) {
  for (const auto& [kind, text] : kScheduleNames) {
    if (name == text) return kind;
  }
  throw_invalid("unknown learning-rate schedule '" + std::string(name) +
                "' (constant, step, cosine)");
}

std::string to_string(LrScheduleKind kind) {
  for (const auto& [k, text] : kScheduleNames) {
    if (k == kind) return text;
  }
  throw_invalid("unknown learning-rate schedule kind " + std::to_string(static_cast<int>(kind)));
}

std::vector<std::string> lr_schedule_names() {
  std::vector<std::string> names;
  for (const auto& entry : kScheduleNames) names.emplace_back(entry.second);
  return names;
}

MilestoneUnit milestone_unit_by_name(std::string_view name) {
  if (name == "steps") return MilestoneUnit::steps;
  if (name == "epochs") return MilestoneUnit::epochs;
  throw_invalid("unknown milestone unit '" + std::string(name) + "' (steps, epochs)");
}

std::vector<std::string> milestone_unit_names() {
  return {to_string(MilestoneUnit::steps), to_string(MilestoneUnit::epochs)};
}

std::string to_string(MilestoneUnit unit) {
  return unit == MilestoneUnit::epochs ? "epochs" : "steps";
}

bool LrSchedule::is_default() const {
  return kind == LrScheduleKind::constant && warmup_steps == 0;
}

std::vector<double> parse_number_list(const std::string& key, const std::string& text) {
  std::vector<double> values;
  if (trimmed(text).empty()) return values;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = trimmed(text.substr(start, end - start));
    double value = 0.0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size()) {
      throw_invalid(key + ": '" + item + "' is not a number (a comma-separated list such as " +
                    "\"91,136,182\")");
    }
    if (!std::isfinite(value) || value <= 0.0) {
      throw_invalid(key + ": values must be finite numbers > 0, got " + item);
    }
    if (!values.empty() && value <= values.back()) {
      throw_invalid(key + ": values must be strictly ascending, got " + text);
    }
    values.push_back(value);
    start = end + 1;
  }
  return values;
}

std::string number_list_text(const std::vector<double>& values) {
  std::string out;
  for (const double v : values) {
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
    if (!out.empty()) out += ",";
    out.append(buffer, result.ptr);
  }
  return out;
}

void check_lr_schedule(const LrSchedule& s) {
  if (!(s.decay > 0.0 && s.decay <= 1.0)) {
    throw_invalid("lr_decay must be in (0, 1], got " + std::to_string(s.decay));
  }
  if (s.warmup_steps < 0) {
    throw_invalid("warmup_lr_steps must be >= 0, got " + std::to_string(s.warmup_steps));
  }
  if (s.kind != LrScheduleKind::step && !s.milestones.empty()) {
    throw_invalid("lr_milestones belong to the step schedule, not '" + to_string(s.kind) +
                  "'. HINT: lr_schedule = \"step\"");
  }
  if (s.kind == LrScheduleKind::step && s.milestones.empty()) {
    throw_invalid("the step schedule needs lr_milestones (e.g. \"91,136,182\")");
  }
  for (size_t i = 1; i < s.milestones.size(); ++i) {
    if (s.milestones[i] <= s.milestones[i - 1]) {
      throw_invalid("lr_milestones must be strictly ascending, got " +
                    number_list_text(s.milestones));
    }
  }
}

double learning_rate_at(const LrSchedule& s, double base, int step, int total_steps,
                        int64_t steps_per_epoch) {
  double factor = 1.0;
  if (step < s.warmup_steps) {
    factor = static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps);
  }
  switch (s.kind) {
    case LrScheduleKind::constant:
      break;
    case LrScheduleKind::step:
      for (const double m : s.milestones) {
        const double at = s.unit == MilestoneUnit::epochs
                              ? std::ceil(m * static_cast<double>(steps_per_epoch))
                              : m;
        if (static_cast<double>(step) >= at) factor *= s.decay;
      }
      break;
    case LrScheduleKind::cosine: {
      const int span = total_steps - s.warmup_steps;
      if (step >= s.warmup_steps && span > 0) {
        const double t = static_cast<double>(step - s.warmup_steps) / static_cast<double>(span);
        factor *= 0.5 * (1.0 + std::cos(std::numbers::pi * t));
      }
      break;
    }
  }
  return base * factor;
}

int64_t steps_per_epoch(int64_t train_size, int64_t batch_size) {
  if (batch_size < 1 || train_size < batch_size) {
    throw_invalid("an epoch of " + std::to_string(train_size) + " samples holds no batch of " +
                  std::to_string(batch_size));
  }
  return train_size / batch_size;
}

int64_t steps_for_epochs(double epochs, int64_t per_epoch) {
  // A relative tolerance so that 0.1 * 30 epochs is 3, not 4 after rounding error.
  const double steps = epochs * static_cast<double>(per_epoch);
  return static_cast<int64_t>(std::ceil(steps - 1e-9 * std::max(1.0, steps)));
}

int64_t last_step_of_epoch(double epoch, int64_t per_epoch) {
  return steps_for_epochs(epoch, per_epoch) - 1;
}

}  // namespace interplace::runs
