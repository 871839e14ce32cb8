// The simulators' clock for compute actions whose speed depends on how many ranks of the
// same host compute at the same time (ComputeSharing). A unit has work_s seconds of work
// at full speed; while n of the P ranks on its host compute, it progresses at
// 1 / factor(P, n). Without sharing every unit ends exactly at start + work_s.
#pragma once

#include <limits>
#include <utility>
#include <vector>

#include "interplace/placement/compute_sharing.hpp"

namespace interplace::placement::detail {

class SharedComputeClock {
 public:
  SharedComputeClock(int devices, const ComputeSharing& sharing);

  void start(int device, double now_s, double work_s);
  bool running(int device) const { return units_[static_cast<size_t>(device)].running; }
  // The running unit that ends first (lowest device on ties) and its end; {-1, inf} if none.
  std::pair<int, double> next_end() const;
  // Ends `device`'s unit at now_s (its end time); the host's other units speed up.
  void finish(int device, double now_s);

 private:
  struct Unit {
    bool running = false;
    double remaining_s = 0.0;  // work left at since_s, at full speed
    double since_s = 0.0;
    double rate = 1.0;
    double end_s = std::numeric_limits<double>::infinity();
  };
  void rerate(int host, double now_s);
  double rate_on(int host) const;

  const ComputeSharing* sharing_;
  std::vector<Unit> units_;
  std::vector<int> host_of_;
  std::vector<int> ranks_on_host_;
  std::vector<int> busy_on_host_;
};

}  // namespace interplace::placement::detail
