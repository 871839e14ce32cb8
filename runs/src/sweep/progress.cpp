#include "progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "interplace/kernels/median.hpp"

namespace interplace::runs {
namespace {

double median_measured_step(const TrainResult& result) {
  std::vector<double> times;
  for (const StepRecord& step : result.steps) {
    if (!step.warmup) times.push_back(step.step_time_s);
  }
  return kernels::median(std::move(times));
}

}  // namespace

Progress::Progress(std::ostream& out, bool terminal, int total, int already_done)
    : out_(out), terminal_(terminal), total_(total), done_(already_done) {}

void Progress::resumed() {
  out_ << "resuming: " << done_ << " of " << total_ << " configurations already in the file\n"
       << std::flush;
}

void Progress::starting(const std::string& name, const std::string& utc) {
  if (!terminal_) {
    out_ << utc << " start [" << done_ + 1 << "/" << total_ << "] " << name << "\n" << std::flush;
    return;
  }
  out_ << "[" << done_ + 1 << "/" << total_ << "] " << name << "  running" << std::flush;
}

void Progress::finished(const std::string& name, const ConfigRecord& record) {
  ++done_;
  ++finished_here_;
  run_s_ += record.wall_s;
  std::string line = "[";
  line.append(std::to_string(done_)).append("/").append(std::to_string(total_)).append("] ");
  line.append(name).append("  ").append(record.status);
  if (record.result != nullptr) {
    char step[64];
    std::snprintf(step, sizeof step, "  step %.3f s", median_measured_step(*record.result));
    line += step;
  } else if (!record.reason.empty()) {
    line += "  (" + record.reason + ")";
  }
  const int left = total_ - done_;
  if (left > 0) line += "  ETA " + duration_text(run_s_ / finished_here_ * left);
  if (terminal_) out_ << "\r\033[K";
  out_ << line << "\n" << std::flush;
}

std::string Progress::duration_text(double seconds) {
  const long total = std::lround(std::max(0.0, seconds));
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%ldh%02ldm", total / 3600, (total % 3600) / 60);
  } else if (total >= 60) {
    std::snprintf(text, sizeof text, "%ldm%02lds", total / 60, total % 60);
  } else {
    std::snprintf(text, sizeof text, "%lds", total);
  }
  return text;
}

}  // namespace interplace::runs
