// Live step records: as each rank ends a step it sends that step's record to rank 0
// (non-blocking, reserved tag); rank 0 assembles a step once every rank's record has
// arrived and hands it to the callback, in step order. So `interplace train` prints
// each step while training goes on, and a run that fails or is killed has already
// printed the steps it finished. The records gathered after training stay the result.
#pragma once

#include <map>
#include <vector>

#include "interplace/runs/training.hpp"
#include "runtime/messenger.hpp"
#include "runtime/record_gather.hpp"

namespace interplace::runs {

class StepStream {
 public:
  // Does nothing at all when `on_step` is empty (on every rank alike: see train()).
  StepStream(const TrainPlan& plan, Messenger& msg, StepCallback on_step);
  ~StepStream();
  StepStream(const StepStream&) = delete;
  StepStream& operator=(const StepStream&) = delete;

  // After every step, on every rank: this rank's row (pack_step). Rank 0 also hands on
  // the steps that are complete by now.
  void post(int step, const std::vector<double>& row);
  // After training: rank 0 waits for the remaining rows and hands on the rest; the
  // others wait for their sends.
  void finish(int steps);
  // After a failure, on rank 0: hands on the complete steps among the rows already here.
  void drain() noexcept;

 private:
  void take(const std::vector<double>& message, int source);
  void receive_arrived();
  void hand_on();

  const TrainPlan& plan_;
  Messenger& msg_;
  StepCallback on_step_;
  struct Pending {
    std::vector<double> buffer;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::vector<Pending> sends_;  // other ranks: rows in flight to rank 0
  struct Arrived {
    std::vector<std::vector<double>> rows;  // by rank; empty until it arrives
    int count = 0;
  };
  std::map<int, Arrived> arrived_;  // rank 0: by step
  int next_ = 0;                    // rank 0: the next step to hand on
};

}  // namespace interplace::runs
