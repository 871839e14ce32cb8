// Accounting of one rank's step in wall-clock and CPU time. Work is timed in units: the
// forward of a micro-batch, an auxiliary head's pass, a backward pass, the optimiser step.
// Everything inside a unit that is not a wait for a message counts as the unit's kind; a
// unit on a device ends after the device finished its queued work, and the Messenger lets
// the device finish before it waits, so asynchronous device work is counted where it runs.
// Each unit's CPU time is the main thread's over the same intervals (the waits cut out
// alike, so polling MPI in a wait is never compute): with one kernel thread on the CPU it
// is the unit's compute without the time slices of processes that share the core.
#pragma once

#include <vector>

#include "interplace/runs/training.hpp"
#include "runtime/instant.hpp"

namespace interplace::runs {

struct RankClock {
  double forward_s = 0.0, backward_s = 0.0, aux_s = 0.0, optimizer_s = 0.0;
  // The same units in the main thread's CPU seconds.
  double forward_cpu_s = 0.0, backward_cpu_s = 0.0, aux_cpu_s = 0.0, optimizer_cpu_s = 0.0;
  bool record_events = false;  // keep the step's timeline (the last step only)
  double step_start_s = 0.0;   // wall clock
  std::vector<placement::TimelineEvent> events;
  // The schedule action being executed (RankModel::execute), carried by the events.
  const placement::Action* action = nullptr;
  int micro_batches = 1;  // of the schedule, to number micro-batches across mini-batches
  // The schedule executed: an action's peer_stage is a model stage (K*V of them with
  // virtual stages), its event's peer the rank, the schedule's device_of_stage. Null: the
  // stage as it is.
  const placement::Schedule* schedule = nullptr;

  // kind: "forward", "aux", "backward" or "optimizer"; units do not nest.
  void begin(const char* kind, const Instant& now);
  void end(const Instant& now);
  // A wait for a message from `start` to `end`: communication, cut out of the open unit.
  void waited(const Instant& start, const Instant& end);

 private:
  void credit(const char* kind, const Instant& start, const Instant& end);
  void add_event(const char* kind, const Instant& start, const Instant& end);
  const char* open_kind_ = nullptr;
  Instant open_start_;
};

}  // namespace interplace::runs
