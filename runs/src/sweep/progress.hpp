// The sweep's progress lines on rank 0: "[3/12] name  ok  step 0.123 s  ETA 1m20s". On a
// terminal the running configuration shows first and is overwritten by its result; into a
// file or pipe (a batch job's log) each configuration gets a start line as well, with the
// time: "2026-11-30T20:01:02Z start [3/12] name", so that a log says what is running.
#pragma once

#include <chrono>
#include <ostream>
#include <string>

#include "interplace/runs/results_file.hpp"

namespace interplace::runs {

class Progress {
 public:
  Progress(std::ostream& out, bool terminal, int total, int already_done);
  void resumed();  // "resuming: N of M configurations already in the file"
  void starting(const std::string& name, const std::string& utc);
  void finished(const std::string& name, const ConfigRecord& record);

  // "1m20s", "2h05m", "12s".
  static std::string duration_text(double seconds);

 private:
  std::ostream& out_;
  bool terminal_;
  int total_;
  int done_;  // finished here or before, for [i/N]
  int finished_here_ = 0;
  double run_s_ = 0.0;  // wall time of the configurations finished here
};

}  // namespace interplace::runs
