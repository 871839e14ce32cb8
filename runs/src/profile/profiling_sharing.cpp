// interplace profile's host-sharing measurement (interplace/runs/profiling.hpp,
// measure_host_sharing): how much ranks on one host slow each other down while they compute
// at once, the term the simulators apply to ranks of one host (docs/simulator.md).
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/median.hpp"
#include "interplace/runs/mpi_session.hpp"
#include "interplace/runs/profiling.hpp"

namespace interplace::runs {
namespace {

// A barrier entered the way the runtime waits for a message: MPI_Wait, which polls
// (spins) in Open MPI and MPICH, so that waiting ranks load the host as in a real run.
void spinning_barrier(MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(comm, &request), "MPI_Ibarrier");
  check_mpi(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait");
}

}  // namespace

placement::HostSharing measure_host_sharing(MPI_Comm host, const RuntimeUnitOptions& options,
                                            double solo_s) {
  if (!(solo_s > 0.0) || !std::isfinite(solo_s)) {
    throw_invalid("host sharing: the solo time must be finite and > 0");
  }
  int rank = 0;
  int size = 1;
  check_mpi(MPI_Comm_rank(host, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(host, &size), "MPI_Comm_size");
  // Long enough that the ranks' timed steps overlap: they start the units together but
  // spend a varying time planning and building the model first, which a run of a few
  // milliseconds would not cover (the ranks would barely overlap and the slowdown read
  // as about 1). About a second of steps at the solo speed.
  RuntimeUnitOptions overlapping = options;
  overlapping.steps = runtime_unit_steps(solo_s, options.steps);
  // The reference: host rank 0 alone, measured the same way (a mean, not the profile's
  // medians).
  double alone_s = 0.0;
  if (rank == 0) alone_s = time_runtime_units(overlapping).mean_compute_s;
  quiet_barrier(host);
  check_mpi(MPI_Bcast(&alone_s, 1, MPI_DOUBLE, 0, host), "MPI_Bcast");
  if (!(alone_s > 0.0)) throw_runtime("host sharing: the units took no time alone");
  placement::HostSharing sharing;
  for (int ranks = 2; ranks <= size; ++ranks) {
    std::vector<double> factors;
    for (int busy = 1; busy <= ranks; ++busy) {
      quiet_barrier(host);  // everyone starts together
      double ratio = std::nan("");
      if (rank < busy) {
        const RuntimeUnits units = time_runtime_units(overlapping);
        ratio = units.mean_compute_s / alone_s;
        quiet_barrier(host);
      } else if (rank < ranks) {
        spinning_barrier(host);
      } else {
        quiet_barrier(host);
      }
      std::vector<double> ratios(rank == 0 ? static_cast<size_t>(size) : 0);
      check_mpi(MPI_Gather(&ratio, 1, MPI_DOUBLE, ratios.data(), 1, MPI_DOUBLE, 0, host),
                "MPI_Gather");
      if (rank == 0) {
        ratios.resize(static_cast<size_t>(busy));
        // No faster than alone: a smaller ratio is timing noise.
        factors.push_back(std::max(1.0, kernels::median(ratios)));
      }
    }
    if (rank == 0) sharing.slowdown.emplace(ranks, factors);
  }
  return sharing;
}

}  // namespace interplace::runs
