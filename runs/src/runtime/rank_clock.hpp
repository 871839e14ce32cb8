// Wall-clock accounting of one rank's step. Work is timed in units: the forward of a
// micro-batch, an auxiliary head's pass, a backward pass, the optimiser step. Everything
// inside a unit that is not a wait for a message counts as the unit's kind; a unit on a
// device ends after the device finished its queued work, and the Messenger lets the
// device finish before it waits, so asynchronous device work is counted where it runs.
#pragma once

#include <vector>

#include "interplace/runs/training.hpp"

namespace interplace::runs {

struct RankClock {
  double forward_s = 0.0, backward_s = 0.0, aux_s = 0.0, optimizer_s = 0.0;
  bool record_events = false;  // keep the step's timeline (the last step only)
  double step_start_s = 0.0;
  std::vector<TimelineEvent> events;
  // The schedule action being executed (RankModel::execute), carried by the events.
  const placement::Action* action = nullptr;
  int micro_batches = 1;  // of the schedule, to number micro-batches across mini-batches

  // kind: "forward", "aux", "backward" or "optimizer"; units do not nest.
  void begin(const char* kind, double now);
  void end(double now);
  // A wait for a message from `start` to `end`: communication, cut out of the open unit.
  void waited(double start, double end);

 private:
  void credit(const char* kind, double start, double end);
  void add_event(const char* kind, double start, double end);
  const char* open_kind_ = nullptr;
  double open_start_ = 0.0;
};

}  // namespace interplace::runs
