// Which devices of a placement share a host, and how much ranks that compute at once on one
// host slow each other down (HostSharing, measured by `interplace profile`). The simulators
// (simulator.hpp, step_estimate.hpp) run a compute action at speed 1 / factor(P, n) while n
// of the P ranks of its host compute, so a pipeline's fill and drain, where one rank
// computes alone, run at full speed and its steady state at the shared speed.
#pragma once

#include <vector>

#include "interplace/placement/profile.hpp"

namespace interplace::placement {

struct ComputeSharing {
  std::vector<int> host_of_device;  // empty: every device alone on its host
  HostSharing table;                // empty: ranks on one host do not slow each other

  bool active() const { return !host_of_device.empty() && !table.empty(); }
  // Devices 0..R-1 on host 0, R..2R-1 on host 1, ... (the order in which mpirun and srun
  // fill nodes by default). Throws invalid_input unless devices >= 1 and ranks_per_host >= 1.
  static ComputeSharing consecutive(int devices, int ranks_per_host, const HostSharing& table);
};

}  // namespace interplace::placement
